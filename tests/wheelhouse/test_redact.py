"""`bundle`'s redactor covers every section of a lock with named targets (no network)."""

from __future__ import annotations

from pathlib import Path

from colabenv.lock.content import Lock, LockFile, LockHeader, LockSection, LockTarget
from colabenv.wheelhouse.fetch import redactor

TARGET = LockTarget(None, None, None, (), "3.12", "linux_x86_64")


def _lock(index: str, *, links: tuple[str, ...] = ()) -> Lock:
    header = LockHeader("0.1.0", "p", "sha256:" + "0" * 64, TARGET, (), "uv 0.8.0")
    return Lock(header, (), index, (), Path("team.lock"), links)


def test_the_redactor_hides_the_credentials_of_every_sections_indexes() -> None:
    lock_file = LockFile(
        (
            LockSection("nb", _lock("https://pypi.example/simple/")),
            LockSection("ci", _lock("https://${CI_USER}:${CI_TOKEN}@ci.example/simple/")),
            LockSection(
                "tpu", _lock("https://pypi.example/simple/", links=("https://${LINKS}@tpu.example/",))
            ),
        ),
        Path("team.lock"),
    )
    environ = {"CI_USER": "team", "CI_TOKEN": "s3cr3t-ci", "LINKS": "l1nks-secret"}
    redact = redactor(lock_file, environ)
    shown = redact("GET https://team:s3cr3t-ci@ci.example/simple/x/ failed; token s3cr3t-ci; l1nks-secret")
    assert "s3cr3t-ci" not in shown and "l1nks-secret" not in shown
    assert "https://${CI_USER}:${CI_TOKEN}@ci.example/simple/" in shown

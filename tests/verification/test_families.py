"""The table of check families ``verify()`` walks, and the rule that verification reads nothing
of the host itself."""

from __future__ import annotations

import ast
import re
import sys
from pathlib import Path

import pytest
from packaging.utils import canonicalize_name

from colabenv.verification.families import FAMILIES
from colabenv.verification.report import Status
from colabenv.verification.run import verify
from tests.support.paths import REPO
from tests.support.standin_frameworks import write_marker

FORMATS = REPO / "docs" / "formats.md"
CHECK_NAME = re.compile(r"`([a-z]+(?:-[a-z]+)*(?::<[a-z]+>)?)`")


def _documented_order() -> list[str]:
    text = FORMATS.read_text(encoding="utf-8")
    start = text.index("The checks, in order:")
    paragraph = text[start : text.index("\n\n", start)]
    depth, top = 0, []
    for char in paragraph:  # the names outside the parentheses that explain them
        depth += (char == "(") - (char == ")")
        top.append(char if depth == 0 else " ")
    return CHECK_NAME.findall("".join(top))


def test_the_families_are_the_documented_checks_in_their_order() -> None:
    names = [family.name for family in FAMILIES]
    assert len(names) == len(set(names))
    assert names == _documented_order()
    after = [family.after_children for family in FAMILIES]
    assert after == sorted(after), "a family that waits for the children runs after all that do not"


def test_the_report_is_the_families_that_apply_in_the_tables_order(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A marker of no framework: no ``cuda:``, ``smoke:`` or ``io:`` check; ``components``
    only on a GPU host, or as a SKIP with ``--cpu``."""
    monkeypatch.setenv("COLABENV_STATE_DIR", str(tmp_path))
    write_marker(tmp_path, requirements=["packaging>=20"], frameworks={}, smoke=[], python=sys.executable)
    plain = [check.name for check in verify(timeout=30).checks if check.name != "components"]
    assert plain == ["marker", "versions", "duplicates", "consistency", "determinism", "vram", "env"]
    on_cpu = verify(timeout=30, cpu=True).checks
    assert [check.name for check in on_cpu] == [*plain[:4], "components", *plain[4:]]
    assert [c.status for c in on_cpu if c.name in ("components", "vram")] == [Status.SKIP, Status.SKIP]


# ---------------------------------------------------------------------------------------------
# host reads are the host layer's

VERIFICATION = REPO / "colabenv" / "verification"


def _host_read(node: ast.AST) -> str | None:
    """What ``node`` reads of the host itself, or None."""
    if isinstance(node, ast.Call):
        func = node.func
        called = (
            func.id if isinstance(func, ast.Name) else func.attr if isinstance(func, ast.Attribute) else ""
        )
        return f"{called}()" if called in ("open", "read_text", "read_bytes", "scandir", "listdir") else None
    if isinstance(node, (ast.Import, ast.ImportFrom)):
        names = [alias.name for alias in node.names] + [getattr(node, "module", None) or ""]
        return "imports pynvml" if any(name.split(".")[0] == "pynvml" for name in names) else None
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        return repr(node.value) if node.value.startswith(("/proc", "/sys", "/dev")) else None
    return None


def _host_reads(path: Path) -> list[str]:
    tree = ast.parse(path.read_text(encoding="utf-8"))
    return [f"{path.name}:{getattr(n, 'lineno', 0)}: {why}" for n in ast.walk(tree) if (why := _host_read(n))]


def test_verification_reads_nothing_of_the_host_itself() -> None:
    found = [hit for path in sorted(VERIFICATION.glob("*.py")) for hit in _host_reads(path)]
    assert found == []


def test_a_lock_of_one_target_made_for_another_host_is_a_warn_naming_the_differences(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """``verify --lock`` of a lock of one target made for Python 3.9 on an aarch64 host:
    ``lock-target`` WARNs after ``marker`` naming both, and the versions are still checked."""
    from colabenv.lock.content import Lock, LockedFile, LockedPackage, LockHeader, LockTarget
    from colabenv.lock.file import render_lock

    monkeypatch.setenv("COLABENV_STATE_DIR", str(tmp_path))
    header = LockHeader(
        colabenv_version="0.1.0",
        profile_name="team",
        profile_hash="sha256:" + "0" * 64,
        target=LockTarget(None, None, None, (), "3.9", "linux_aarch64"),
        frameworks=(),
        resolver="uv 0.13.9",
    )
    packages = (LockedPackage(canonicalize_name("packaging"), "1.0", (LockedFile("a" * 64),)),)
    lock = tmp_path / "team.lock"
    lock.write_text(render_lock(Lock(header, packages, "https://pypi.example/simple")))
    checks = verify(lock=str(lock), timeout=30, cpu=True).checks
    names = [check.name for check in checks]
    assert names[:3] == ["marker", "lock-target", "versions"]
    target = checks[1]
    assert target.status is Status.WARN
    assert target.detail.startswith("the lock was made for another target: ")
    assert "Python 3.9 in the lock" in target.detail and "platform linux_aarch64 in the lock" in target.detail


def test_a_tpu_smoke_fail_names_its_cause_as_every_devices_does(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The cause of a smoke FAIL (doctor's failure signatures) is added where the smoke checks
    are made, for every device a kind declares: a jax on a TPU host whose import cannot load
    its runtime names ``missing-library`` as the CUDA and ROCm smoke tests do."""
    from tests.support.standin_frameworks import make_venv
    from tests.support.standin_tpu import TpuStandin, install_jax_tpu

    venv = make_venv(tmp_path / "venv", with_colabenv=False)
    install_jax_tpu(venv, TpuStandin())
    error = "libtpu.so: cannot open shared object file: No such file or directory"
    (venv.site_packages / "jax" / "__init__.py").write_text(f"raise ImportError({error!r})\n")
    state = tmp_path / "state"
    monkeypatch.setenv("COLABENV_STATE_DIR", str(state))
    monkeypatch.setenv("COLABENV_TPU", "v5e-1")
    monkeypatch.delenv("PJRT_DEVICE", raising=False)
    requirements = ["jax[tpu]==0.6.2", "jaxlib==0.6.2", "libtpu==0.0.17.*"]
    write_marker(state, requirements=requirements, frameworks={"jax": "0.6.2"}, python=venv.python)
    smoke = next(c for c in verify(timeout=60, interpreter=str(venv.python)).checks if c.name == "smoke:jax")
    assert smoke.status is Status.FAIL, smoke
    assert smoke.detail.startswith(f"import failed: ImportError: {error}"), smoke
    assert "; cause: missing-library (https://" in smoke.detail, smoke

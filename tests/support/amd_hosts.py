"""Recorded AMD hosts (``tests/data/hosts/amd/``, each with its SOURCE.md) laid out as a root the
embedded helper's preflight reads in place of ``/`` (``COLABENV_HELPER_ROOT``)."""

from __future__ import annotations

from pathlib import Path

from tests.support.paths import DATA

AMD = DATA / "hosts" / "amd"


def amd_root(tmp_path: Path, host: str | None, *, kfd: bool = True, rocm: str | None = None) -> Path:
    """A root with a recorded host's ``sys`` tree, a ``/dev/kfd`` and an installed ROCm's
    ``.info/version``, each where asked."""
    root = tmp_path / "root"
    root.mkdir()
    if host is not None:
        (root / "sys").symlink_to(AMD / host / "sys", target_is_directory=True)
    if kfd:
        (root / "dev").mkdir()
        (root / "dev" / "kfd").write_text("")
    if rocm is not None:
        (root / "opt" / "rocm" / ".info").mkdir(parents=True)
        (root / "opt" / "rocm" / ".info" / "version").write_text(rocm + "\n")
    return root

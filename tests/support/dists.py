"""Distributions made by hand in a folder, as an installer leaves them (files and a dist-info),
and C extension modules compiled with gcc: what doctor's import tests break a venv with."""

from __future__ import annotations

import shutil
import subprocess
import sysconfig
from pathlib import Path

GCC = shutil.which("gcc")
EXT = sysconfig.get_config_var("EXT_SUFFIX")
INCLUDE = sysconfig.get_paths()["include"]


def site_packages(python: Path) -> Path:
    found = sorted((python.parent.parent / "lib").glob("python3*/site-packages"))
    assert found, python
    return found[0]


def add_dist(site: Path, name: str, files: dict[str, str | bytes], version: str = "1.0") -> None:
    """A distribution as an installer leaves it: its files and a dist-info naming them."""
    for relative, content in files.items():
        path = site / relative
        path.parent.mkdir(parents=True, exist_ok=True)
        if isinstance(content, bytes):
            path.write_bytes(content)
        else:
            path.write_text(content)
    info = site / f"{name}-{version}.dist-info"
    info.mkdir()
    (info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {name}\nVersion: {version}\n")
    (info / "INSTALLER").write_text("pip\n")
    tops = sorted({Path(r).parts[0].split(".")[0] for r in files})
    (info / "top_level.txt").write_text("\n".join(tops) + "\n")
    (info / "RECORD").write_text("".join(f"{r},,\n" for r in files))


def compile_extension(source: str, name: str, out: Path, *extra: str) -> Path:
    assert GCC is not None
    c_file = out / f"{name}.c"
    c_file.write_text(source)
    target = out / f"{name}{EXT}"
    subprocess.run(
        [GCC, "-shared", "-fPIC", f"-I{INCLUDE}", "-o", str(target), str(c_file), *extra], check=True
    )
    return target


def module_source(name: str, body: str) -> str:
    return (
        "#include <Python.h>\n"
        f"{body}\n"
        f'static struct PyModuleDef def = {{PyModuleDef_HEAD_INIT, "{name}", NULL, -1, NULL}};\n'
        f"PyMODINIT_FUNC PyInit_{name}(void) {{ return PyModule_Create(&def); }}\n"
    )

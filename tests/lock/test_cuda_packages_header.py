"""A lock's header records the CUDA packages of ``[frameworks]`` (name, distribution, release,
build, index) in both forms; a damaged line is refused naming it; and a lock whose pins or header
no longer meet the profile's CUDA packages is named by :func:`unmet_requirements`."""

from __future__ import annotations

import dataclasses
import hashlib
from pathlib import Path

import pytest
from packaging.utils import canonicalize_name

from colabenv.errors import LockError
from colabenv.lock.content import Lock, LockedFile, LockedPackage, LockHeader, LockTarget
from colabenv.lock.file import parse_lock, render_lock
from colabenv.lock.fit import unmet_requirements
from colabenv.models import Framework, LockedCudaPackage, LockedFramework
from colabenv.profile.load import load_profile

T4 = LockTarget("550.54.15", "525.60.13", "12.4", ("7.5",), "3.12", "linux_x86_64")
CUPY = LockedCudaPackage(
    canonicalize_name("cupy"), canonicalize_name("cupy-cuda12x"), "14.2.0", "cuda12", None
)
XFORMERS = LockedCudaPackage(
    canonicalize_name("xformers"),
    canonicalize_name("xformers"),
    "0.0.32.post2",
    "cu128",
    "https://download.pytorch.org/whl/cu128",
)


def _file(wheel: str) -> LockedFile:
    return LockedFile(hashlib.sha256(wheel.encode()).hexdigest(), wheel, f"https://files.example/{wheel}")


def _lock(cuda_packages: tuple[LockedCudaPackage, ...] = (CUPY, XFORMERS), cupy: str = "14.2.0") -> Lock:
    pins = {"torch": "2.8.0+cu128", "cupy-cuda12x": cupy, "xformers": "0.0.32.post2"}
    packages = tuple(
        LockedPackage(canonicalize_name(n), v, (_file(f"{n.replace('-', '_')}-{v}-py3-none-any.whl"),))
        for n, v in pins.items()
    )
    header = LockHeader(
        colabenv_version="0.1.0",
        profile_name="team",
        profile_hash="sha256:" + "0" * 64,
        target=T4,
        frameworks=(
            LockedFramework(Framework.TORCH, "2.8.0", "cu128", "https://download.pytorch.org/whl/cu128"),
        ),
        resolver="uv 0.13.9",
        cuda_packages=cuda_packages,
    )
    return Lock(header, packages, "https://pypi.example/simple", ("https://download.pytorch.org/whl/cu128",))


@pytest.mark.parametrize("pylock", [False, True], ids=["requirements", "pylock"])
def test_the_header_records_the_cuda_packages_and_reads_them_back(pylock: bool) -> None:
    text = render_lock(_lock(), pylock=pylock)
    found = parse_lock(text, Path("pylock.toml" if pylock else "team.lock"))
    assert found.header.cuda_packages == (CUPY, XFORMERS)
    assert render_lock(found, pylock=pylock) == text
    if not pylock:
        assert "# cuda-package: cupy cupy-cuda12x 14.2.0 variant=cuda12 index=default" in text.splitlines()


@pytest.mark.parametrize("pylock", [False, True], ids=["requirements", "pylock"])
def test_a_lock_without_cuda_packages_writes_no_trace_of_them(pylock: bool) -> None:
    text = render_lock(_lock(()), pylock=pylock)
    assert "cuda-package" not in text
    assert parse_lock(text, Path("pylock.toml" if pylock else "team.lock")).header.cuda_packages == ()


@pytest.mark.parametrize(
    ("old", "new", "message"),
    [
        ("cupy-cuda12x 14.2.0 variant", "cupy-cuda12x fourteen variant", "'fourteen' is not a version"),
        ("variant=cuda12 index=default", "variant=cuda12", "is not '<package> <distribution> <version>"),
        ("variant=cuda12 index=default", "variant=cu/12 index=default", "is not a variant name"),
        (
            "# cuda-package: cupy cupy-cuda12x",
            "# cuda-package: cupy! cupy-cuda12x",
            "is not a distribution name",
        ),
    ],
)
def test_a_damaged_cuda_package_line_is_refused_naming_it(old: str, new: str, message: str) -> None:
    text = render_lock(_lock())
    assert old in text
    with pytest.raises(LockError, match=r"team\.lock: line \d+: cuda-package: ") as caught:
        parse_lock(text.replace(old, new, 1), Path("team.lock"))
    assert message in str(caught.value)


def _profile(tmp_path: Path, cupy: str, xformers: str = '"*"') -> object:
    path = tmp_path / "team.toml"
    path.write_text(f'name = "team"\n[frameworks]\ntorch = "==2.8.*"\ncupy = {cupy}\nxformers = {xformers}\n')
    return load_profile(path)


def test_unmet_cuda_packages_are_named(tmp_path: Path) -> None:
    assert unmet_requirements(_lock(), _profile(tmp_path, '"==14.2.0"')) == []  # type: ignore[arg-type]
    assert unmet_requirements(_lock(), _profile(tmp_path, '"<14"')) == [  # type: ignore[arg-type]
        "frameworks.cupy: the lock has cupy-cuda12x 14.2.0, outside <14"
    ]
    built = _profile(tmp_path, '"*"', '{ version = "*", variant = "cu126" }')
    assert unmet_requirements(_lock(), built) == [  # type: ignore[arg-type]
        "frameworks.xformers: the lock has build cu128, not cu126"
    ]
    # a header that says one release and pins that hold another
    assert unmet_requirements(_lock(cupy="13.6.0"), _profile(tmp_path, '"*"')) == [  # type: ignore[arg-type]
        "frameworks.cupy: the header records cupy-cuda12x 14.2.0, pinned at 13.6.0"
    ]
    # a lock of an older colabenv records none: its pins alone are held
    older = dataclasses.replace(_lock(), header=dataclasses.replace(_lock().header, cuda_packages=()))
    assert unmet_requirements(older, _profile(tmp_path, '"<14"')) == [  # type: ignore[arg-type]
        "frameworks.cupy: the lock has cupy-cuda12x 14.2.0, outside <14"
    ]
    unpinned = dataclasses.replace(older, packages=older.packages[:1])
    assert unmet_requirements(unpinned, _profile(tmp_path, '"*"')) == [  # type: ignore[arg-type]
        "frameworks.cupy: not pinned in the lock",
        "frameworks.xformers: not pinned in the lock",
    ]

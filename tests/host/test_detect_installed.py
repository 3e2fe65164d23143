"""What a target has installed where the flags describe another host (issue 36): this
interpreter's distributions are the target's only where its platform and Python (major.minor,
free-threaded or not) are the interpreter's; else none is read, and a note says why.
``--installed-from`` and ``--runtime`` still say what is installed; ``init`` reads this
interpreter's whatever the flags; a named target reads nothing of this host."""

from __future__ import annotations

import dataclasses
from typing import Any

import pytest
from packaging.version import Version

from colabenv.catalog.load import shipped_tpu
from colabenv.catalog.runtimes import shipped_runtimes
from colabenv.host.detect import detect
from colabenv.host.named import named_target
from colabenv.host.probe import HostProbe
from colabenv.models import Fingerprint
from colabenv.resolve.overrides import TargetFlags, resolve_overrides
from tests.host.test_detect import RUNTIMES, make_probe

HOST_DISTS = (("numpy", "2.0.2"), ("torch", "2.8.0+cpu"))


def _probe(*, free_threaded: bool = False) -> HostProbe:
    """An x86-64 host with CPython 3.11.13 (or, free-threaded, 3.14.0t: there is no 3.11t) and
    numpy and torch installed."""
    probe = make_probe(dists=HOST_DISTS)
    if free_threaded:
        return dataclasses.replace(probe, python_version="3.14.0", free_threaded=True)
    return probe


def _detect(probe: HostProbe | None = None, **flags: Any) -> Fingerprint:
    flagged = TargetFlags(**flags)
    wanted = resolve_overrides(flagged, {}, tpu_facts=shipped_tpu, runtime_facts=shipped_runtimes)
    return detect(wanted, probe=probe or _probe())


@pytest.mark.parametrize(
    "flags",
    [
        {},
        {"python": "3.11"},
        {"python": "3.11.2"},  # another patch release of the same Python
        {"platform": "linux_x86_64", "python": "3.11"},
        {"cpu": True},
        {"driver": "550.54.15", "compute_capability": ("7.5",)},  # a driver given where NVML failed
        {"rocm": "6.4", "gfx": ("gfx942",)},
    ],
)
def test_a_target_of_this_platform_and_python_has_what_is_installed_here(flags: dict[str, Any]) -> None:
    fingerprint = _detect(**flags)
    assert fingerprint.target.installed.version_of("numpy") == Version("2.0.2")
    assert fingerprint.target.installed_note is None
    assert not any("installed versions" in note for note in fingerprint.notes)


@pytest.mark.parametrize(
    ("flags", "free_threaded", "why"),
    [
        ({"platform": "linux_aarch64"}, False, "the target is linux_aarch64, this host linux_x86_64"),
        ({"platform": "linux_aarch64", "python": "3.12"}, False, "the target is linux_aarch64"),
        ({"python": "3.12"}, False, "the target's Python is 3.12, this interpreter's 3.11"),
        ({"python": "3.10.4", "cpu": True}, False, "the target's Python is 3.10, this interpreter's 3.11"),
        ({"python": "3.14"}, True, "the target's Python is 3.14, this interpreter's 3.14t"),
    ],
)
def test_a_target_of_another_platform_or_python_has_none_of_what_is_installed_here(
    flags: dict[str, Any], free_threaded: bool, why: str
) -> None:
    fingerprint = _detect(_probe(free_threaded=free_threaded), **flags)
    target = fingerprint.target
    assert target.installed.dists == ()
    assert target.installed_note is not None
    assert target.installed_note.startswith(f"installed versions: none read ({why}")
    assert target.installed_note in fingerprint.notes


def test_a_free_threaded_target_on_a_free_threaded_interpreter_has_what_is_installed_here() -> None:
    fingerprint = _detect(_probe(free_threaded=True), python="3.14t")
    assert fingerprint.target.free_threaded
    assert fingerprint.target.installed.version_of("torch") == Version("2.8.0+cpu")


def test_installed_from_and_runtime_still_say_what_another_host_has() -> None:
    freeze = RUNTIMES / "colab-2025.10" / "pip-freeze.txt"
    frozen = _detect(platform="linux_aarch64", python="3.12", installed_from=str(freeze))
    assert frozen.target.installed.version_of("torch") == Version("2.8.0+cu126")
    assert frozen.target.installed_note is None
    image = _detect(runtime="colab-2026.07", cpu=True)  # its Python 3.12 is not this host's 3.11
    assert image.target.installed.get("numpy") is not None
    assert image.target.installed.version_of("torch") != Version("2.8.0+cpu")
    assert image.target.installed_note is None


def test_own_installed_reads_this_interpreters_whatever_the_flags_say() -> None:
    """``init``: a starter profile of the Python colabenv runs in."""
    flagged = TargetFlags(python="3.12", platform="linux_aarch64")
    wanted = resolve_overrides(flagged, {}, tpu_facts=shipped_tpu)
    fingerprint = detect(wanted, probe=_probe(), own_installed=True)
    assert fingerprint.target.installed.version_of("numpy") == Version("2.0.2")
    assert fingerprint.target.installed_note is None


def test_a_named_target_has_nothing_installed_and_no_note_about_this_host() -> None:
    wanted = resolve_overrides(
        TargetFlags(platform="linux_aarch64", cpu=True, python="3.12"), {}, tpu_facts=shipped_tpu
    )
    target = named_target(wanted, tpu_facts=shipped_tpu)
    assert target.installed.dists == () and target.installed_note is None
    assert target.platform == "linux_aarch64"


def test_the_note_is_not_part_of_the_targets_value() -> None:
    target = _detect(python="3.12").target
    assert target == dataclasses.replace(target, installed_note=None)
    assert hash(target) == hash(dataclasses.replace(target, installed_note=None))

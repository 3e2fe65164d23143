"""Bad target input an audit of issue 36 found, and the rules it showed untested: a runtime
without an image for the target's accelerator, a free-threaded Python before 3.13, an empty
gfx item, the free-threaded target as messages and ``detect`` show it, ``--python 3.14t``
beside an interpreter of the other kind, a CUDA-versus-driver contradiction in ``[targets]``,
``free_threaded`` in ``resolve --json``, and detection's ``Py_GIL_DISABLED``. Bad input is one
line on stderr, exit 2, nothing on stdout."""

from __future__ import annotations

import dataclasses
import platform
import sys
import sysconfig
from pathlib import Path

import pytest

from colabenv.app.starter import starter_profile
from colabenv.catalog.load import shipped_tpu
from colabenv.catalog.runtimes import shipped_runtimes
from colabenv.cli.main import main
from colabenv.errors import TargetError
from colabenv.host.detect import detect, live_probe
from colabenv.host.interpreter import Interpreter
from colabenv.models import Accelerator, RuntimeFacts, TargetOverrides
from colabenv.resolve.overrides import TargetFlags, resolve_overrides
from tests.host.test_detect import make_probe
from tests.support.paths import REPO
from tests.support.resolving import resolve_json

GOLDEN = REPO / "profiles" / "golden"
PYTORCH = str(GOLDEN / "pytorch.toml")
CPU_ONLY = str(GOLDEN / "cpu-only.toml")


@pytest.fixture(autouse=True)
def _no_target_variables(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in ("PYTHON_VERSION", "GFX", "ROCM_VERSION", "DRIVER_VERSION", "CUDA_VERSION", "TPU"):
        monkeypatch.delenv(f"COLABENV_{name}", raising=False)
    monkeypatch.setenv("COLABENV_OFFLINE", "1")


def _refused(capsys: pytest.CaptureFixture[str], *argv: str) -> str:
    """The one line ``colabenv ARGV`` writes, having checked it is bad input."""
    code = main(list(argv))
    out, err = capsys.readouterr()
    assert (code, out) == (2, ""), err
    assert len(err.strip().splitlines()) == 1, err
    return err.strip()


def _profile(tmp_path: Path, entry: str) -> str:
    profile = tmp_path / "p.toml"
    profile.write_text(f'name = "p"\n[frameworks]\ntorch = "*"\n[targets]\nnb = {{ {entry} }}\n')
    return str(profile)


def _overrides(environ: dict[str, str] | None = None, **flags: object) -> TargetOverrides:
    return resolve_overrides(
        TargetFlags(**flags),  # type: ignore[arg-type]
        environ or {},
        tpu_facts=shipped_tpu,
        runtime_facts=shipped_runtimes,
    )


# ---------------------------------------------------------------------------------------------
# 1. A runtime without an image for the target's accelerator


@pytest.mark.parametrize("command", ["resolve", "render"])
def test_a_runtime_has_no_image_for_amd_gpus(command: str, capsys: pytest.CaptureFixture[str]) -> None:
    line = _refused(capsys, command, PYTORCH, "--runtime", "colab-2025.07", "--gfx", "gfx942")
    assert "--runtime colab-2025.07 has no image for AMD GPUs" in line, line
    assert "its images: NVIDIA GPUs, the CPU alone, a TPU" in line, line


def test_profiles_check_names_the_target_whose_runtime_has_no_image_for_it(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    line = _refused(
        capsys, "profiles", "check", _profile(tmp_path, 'runtime = "colab-2025.07", gfx = "gfx942"')
    )
    assert "p.toml: targets.nb.runtime: colab-2025.07 has no image for AMD GPUs" in line, line
    assert line.endswith("; leave runtime out"), line


@pytest.mark.parametrize(
    ("flags", "kind", "what"),
    [
        ({"cpu": True}, Accelerator.CPU, "the CPU alone"),
        ({"tpu": "v5e-1"}, Accelerator.TPU, "a TPU"),
        ({"driver": "550.54.15"}, Accelerator.NVIDIA, "NVIDIA GPUs"),
    ],
)
def test_a_runtime_lacking_any_kind_of_image_is_a_target_error(
    flags: dict[str, object], kind: Accelerator, what: str
) -> None:
    """The shipped table has a GPU, a CPU and a TPU image for every runtime; one without the
    image of the target's kind (as an AMD target always is) is refused, never a LookupError."""
    runtime = shipped_runtimes().get("colab-2025.07")
    assert runtime is not None
    lacking = dataclasses.replace(runtime, images=tuple(i for i in runtime.images if i.accelerator != kind))
    wanted = resolve_overrides(
        TargetFlags(runtime="colab-2025.07", **flags),  # type: ignore[arg-type]
        {},
        tpu_facts=shipped_tpu,
        runtime_facts=lambda: RuntimeFacts((lacking,)),
    )
    with pytest.raises(TargetError, match=f"--runtime colab-2025.07 has no image for {what}"):
        detect(wanted, probe=make_probe())


# ---------------------------------------------------------------------------------------------
# 2. No free-threaded CPython before 3.13


@pytest.mark.parametrize("text", ["3.12t", "3.8t", "3.12.4t"])
def test_a_free_threaded_python_before_3_13_is_refused(text: str, capsys: pytest.CaptureFixture[str]) -> None:
    line = _refused(capsys, "resolve", PYTORCH, "--cpu", "--python", text)
    assert f"--python: {text!r} is not a Python version like 3.12" in line, line
    assert "free-threaded CPython is 3.13t or later" in line, line


def test_the_python_variable_is_held_to_the_same_rule(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("COLABENV_PYTHON_VERSION", "3.12t")
    line = _refused(capsys, "resolve", PYTORCH, "--cpu")
    assert "COLABENV_PYTHON_VERSION: '3.12t' is not a Python version" in line, line
    assert "3.13t or later" in line, line


def test_a_named_target_is_held_to_the_same_rule(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    line = _refused(capsys, "profiles", "check", _profile(tmp_path, 'cpu = true, python = "3.12t"'))
    assert 'p.toml: targets.nb.python: "3.12t" is not a Python version' in line, line
    assert "3.13t or later" in line, line


@pytest.mark.parametrize("text", ["3.13t", "3.14t", "3.14.1t"])
def test_free_threaded_pythons_from_3_13_are_taken(text: str) -> None:
    wanted = _overrides(python=text, cpu=True)
    assert wanted.free_threaded is True


# ---------------------------------------------------------------------------------------------
# 3, 4. The free-threaded target as shown


def test_detect_shows_the_free_threaded_target(capsys: pytest.CaptureFixture[str]) -> None:
    code = main(["detect", "--cpu", "--python", "3.14t"])
    out, err = capsys.readouterr()
    assert code == 0, err
    python = next(line for line in out.splitlines() if line.startswith("Python"))
    assert python.endswith("target 3.14t"), python


def test_resolve_heading_shows_the_free_threaded_target(capsys: pytest.CaptureFixture[str]) -> None:
    code = main(["resolve", CPU_ONLY, "--cpu", "--python", "3.14t", "--allow-unconfirmed"])
    out, err = capsys.readouterr()
    assert code == 0, err
    assert "Python 3.14t" in out.splitlines()[0], out


@pytest.mark.parametrize(
    ("platform", "tail"),
    [
        ("linux_aarch64", ", Python 3.12, linux_aarch64"),
        # the catalog's own platform stays unsaid, as in every x86-64 heading before aarch64
        ("linux_x86_64", ", Python 3.12"),
    ],
)
def test_resolve_heading_shows_a_platform_other_than_x86_64(
    platform: str, tail: str, capsys: pytest.CaptureFixture[str]
) -> None:
    argv = ["--driver", "580.105.08", "--cuda", "13.0", "--compute-capability", "12.1", "--python", "3.12"]
    code = main(["resolve", PYTORCH, "--platform", platform, *argv])
    out, err = capsys.readouterr()
    assert code == 0, err
    heading = out.splitlines()[0]
    assert heading == f"pytorch for driver 580.105.08, CUDA 13.0, compute capability 12.1{tail}", out


def test_a_starter_profile_describes_the_free_threaded_python_it_was_captured_from() -> None:
    probe = dataclasses.replace(make_probe(), python_version="3.14.0", free_threaded=True)
    text = starter_profile(detect(_overrides(cpu=True), probe=probe, own_installed=True), "ft")
    assert "runtime (Python 3.14t, no GPU)" in text, text


def test_the_runtime_contradiction_names_the_python_as_given(capsys: pytest.CaptureFixture[str]) -> None:
    line = _refused(capsys, "resolve", PYTORCH, "--runtime", "colab-2025.07", "--python", "3.14t", "--cpu")
    assert "--python 3.14t contradicts --runtime colab-2025.07" in line, line


def test_a_free_threaded_python_of_the_runtimes_version_contradicts_it() -> None:
    """A Colab runtime's Python has the GIL: ``--python 3.13t`` is not the 3.13 it ships."""
    with pytest.raises(TargetError) as caught:
        _overrides(runtime="colab-latest", python="3.13t", cpu=True)
    assert str(caught.value).startswith(
        "--python 3.13t contradicts --runtime colab-latest, whose Python 3.13"
    )
    assert "is not free-threaded" in str(caught.value)


def test_the_runtime_beats_a_free_threaded_python_variable() -> None:
    """The variable is beaten by the flag ``--runtime`` whole: the runtime's Python, with the GIL."""
    wanted = _overrides({"COLABENV_PYTHON_VERSION": "3.13t"}, runtime="colab-2026.07", cpu=True)
    assert not wanted.free_threaded
    assert str(wanted.python) == "3.12.13"


# ---------------------------------------------------------------------------------------------
# 5. An empty gfx item


@pytest.mark.parametrize("value", ["gfx942,,", ",gfx942", "gfx942, ,gfx90a", ""])
def test_an_empty_gfx_item_is_malformed(value: str, capsys: pytest.CaptureFixture[str]) -> None:
    line = _refused(capsys, "resolve", PYTORCH, "--python", "3.12", "--gfx", value)
    assert "--gfx: an empty item is not an AMD GPU architecture like gfx942" in line, line


def test_an_empty_gfx_item_in_the_variable_is_malformed(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("COLABENV_GFX", "gfx942,")
    line = _refused(capsys, "resolve", PYTORCH, "--python", "3.12")
    assert "COLABENV_GFX: an empty item is not an AMD GPU architecture" in line, line


@pytest.mark.parametrize("value", ["7.5,,", ",7.5", "7.5, ,8.0", ""])
def test_an_empty_compute_capability_item_is_malformed_as_a_gfx_is(
    value: str, capsys: pytest.CaptureFixture[str]
) -> None:
    line = _refused(
        capsys, "resolve", PYTORCH, "--python", "3.12", "--driver", "550.54.15", "--compute-capability", value
    )
    assert "--compute-capability: an empty item is not a compute capability like 7.5" in line, line


def test_a_blank_gfx_variable_is_unset() -> None:
    assert _overrides({"COLABENV_GFX": "  "}, python="3.12").rocm is None


@pytest.mark.parametrize("gfx", ['"gfx942,,"', '["gfx942", ""]', '""'])
def test_an_empty_gfx_item_in_a_named_target_is_malformed(
    gfx: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    line = _refused(capsys, "profiles", "check", _profile(tmp_path, f'gfx = {gfx}, python = "3.12"'))
    assert "p.toml: targets.nb.gfx: an empty item is not an AMD GPU architecture" in line, line


@pytest.mark.parametrize("command", ["profiles check", "resolve"])
def test_an_empty_gfx_array_in_a_named_target_is_refused(
    command: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """``gfx = []`` is not "gfx unknown" (that is gfx left out, whose lists go unchecked with a
    warning): a named target that says its AMD GPUs are none is refused, naming the key."""
    profile = _profile(tmp_path, 'rocm = "7.0", gfx = [], python = "3.12"')
    argv = [*command.split(), profile, *(["--target", "nb", "--offline"] if command == "resolve" else [])]
    line = _refused(capsys, *argv)
    assert line.endswith(
        'p.toml: targets.nb.gfx: an empty array (name each AMD GPU\'s architecture, e.g. ["gfx942"],'
        " or leave gfx out)"
    ), line


# ---------------------------------------------------------------------------------------------
# 6. The free-threaded flag beside an interpreter of the other kind


def test_a_free_threaded_python_beside_an_interpreter_with_the_gil_is_refused(
    capsys: pytest.CaptureFixture[str],
) -> None:
    if sysconfig.get_config_var("Py_GIL_DISABLED"):
        pytest.skip("this interpreter is free-threaded")
    line = _refused(capsys, "detect", "--interpreter", sys.executable, "--cpu", "--python", "3.14t")
    assert f"--python 3.14t: the interpreter {sys.executable} is not free-threaded" in line, line


def _interpreter(*, free_threaded: bool, version: str = "3.14.0") -> Interpreter:
    """What ``python3.14t`` (or ``python3.14``) answers the probe: no free-threaded interpreter
    is on this machine, so its facts are data."""
    return Interpreter(
        executable="/usr/bin/python3.14t" if free_threaded else "/usr/bin/python3.14",
        version=version,
        implementation="CPython",
        path=(),
        stdlib=(),
        extension_suffixes=(".cpython-314t-x86_64-linux-gnu.so",),
        platform="linux-x86_64",
        free_threaded=free_threaded,
        machine="x86_64",
    )


def test_a_python_with_the_gil_beside_a_free_threaded_interpreter_is_refused() -> None:
    with pytest.raises(TargetError) as caught:
        detect(
            _overrides(python="3.14", cpu=True),
            probe=make_probe(),
            interpreter=_interpreter(free_threaded=True),
        )
    assert str(caught.value) == (
        "--python 3.14: the interpreter /usr/bin/python3.14t is free-threaded (Py_GIL_DISABLED);"
        " give its own version, 3.14.0t, or leave --python out"
    )
    assert caught.value.exit_code == 2


def test_the_version_offered_is_one_the_flag_takes_for_a_pre_release_interpreter() -> None:
    """A 3.14.0rc1 interpreter is offered as ``3.14.0t``, the form ``--python`` takes (not
    ``3.14.0rc1t``, which it refuses)."""
    with pytest.raises(TargetError) as caught:
        detect(
            _overrides(python="3.14", cpu=True),
            probe=make_probe(),
            interpreter=_interpreter(free_threaded=True, version="3.14.0rc1"),
        )
    assert "give its own version, 3.14.0t, or leave --python out" in str(caught.value)


def test_the_python_variable_beside_an_interpreter_of_the_other_kind_is_named_as_a_variable() -> None:
    """The value came from the variable: the line names it, and how to take it back is to unset
    it (not "leave the flag out"); the interpreter's own version is the one accepted."""
    with pytest.raises(TargetError) as caught:
        detect(
            _overrides({"COLABENV_PYTHON_VERSION": "3.14t"}, cpu=True),
            probe=make_probe(),
            interpreter=_interpreter(free_threaded=False),
        )
    assert str(caught.value) == (
        "COLABENV_PYTHON_VERSION 3.14t: the interpreter /usr/bin/python3.14 is not free-threaded"
        " (Py_GIL_DISABLED); give its own version, 3.14.0, or unset COLABENV_PYTHON_VERSION"
    )


def test_detect_names_the_python_variable_it_refuses(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    if sysconfig.get_config_var("Py_GIL_DISABLED"):
        pytest.skip("this interpreter is free-threaded")
    monkeypatch.setenv("COLABENV_PYTHON_VERSION", "3.14t")
    line = _refused(capsys, "detect", "--interpreter", sys.executable, "--cpu")
    assert line.startswith("colabenv: COLABENV_PYTHON_VERSION 3.14t: the interpreter "), line
    assert line.endswith(
        f"give its own version, {platform.python_version()}, or unset COLABENV_PYTHON_VERSION"
    )
    assert "flag" not in line, line


def test_a_free_threaded_interpreter_agrees_with_the_free_threaded_flag() -> None:
    found = detect(
        _overrides(python="3.14t", cpu=True), probe=make_probe(), interpreter=_interpreter(free_threaded=True)
    )
    assert found.target.free_threaded and found.target.python_shown == "3.14t"


# ---------------------------------------------------------------------------------------------
# 7. A named target's refused value, named by its key


@pytest.mark.parametrize(
    ("entry", "expected"),
    [
        (
            'driver = "535.104.05", cuda = "13.0", python = "3.12"',
            "targets.nb.cuda: 13.0 conflicts with driver 535.104.05, which supports CUDA 12.2"
            " (catalog driver table): give one of them; without cuda the CUDA comes from the driver",
        ),
        (
            'python = "3.14t", runtime = "colab-2026.07", cpu = true',
            "targets.nb.python: 3.14t contradicts runtime colab-2026.07, whose Python is 3.12.13;"
            " leave python out",
        ),
        (
            'driver = "418.39", python = "3.12"',
            "targets.nb.driver: 418.39: older than every CUDA in the catalog's driver table; give cuda too",
        ),
    ],
    ids=["cuda-beyond-the-driver", "python-the-runtime-contradicts", "driver-the-table-lacks"],
)
def test_profiles_check_names_a_named_targets_refused_value_by_its_key(
    entry: str, expected: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """The key path goes to the key, and the keys are named as keys (the flags keep their words:
    test_the_runtime_contradiction_names_the_python_as_given)."""
    line = _refused(capsys, "profiles", "check", _profile(tmp_path, entry))
    assert line.endswith(f"p.toml: {expected}"), line


# ---------------------------------------------------------------------------------------------
# 8. free_threaded in resolve --json


def test_resolve_json_says_free_threaded_only_for_a_free_threaded_python(
    capsys: pytest.CaptureFixture[str],
) -> None:
    code, resolution, err = resolve_json(
        capsys, CPU_ONLY, "--cpu", "--python", "3.14t", "--allow-unconfirmed"
    )
    assert code == 0, err
    target = resolution["target"]
    assert isinstance(target, dict)
    assert (target["python"], target["free_threaded"]) == ("3.14", True)
    code, resolution, err = resolve_json(capsys, CPU_ONLY, "--cpu", "--python", "3.14")
    assert code == 0, err
    target = resolution["target"]
    assert isinstance(target, dict)
    assert target["python"] == "3.14" and "free_threaded" not in target


# ---------------------------------------------------------------------------------------------
# 9. Detection reads Py_GIL_DISABLED


def test_a_free_threaded_probe_gives_a_free_threaded_target() -> None:
    probe = dataclasses.replace(make_probe(), python_version="3.14.0", free_threaded=True)
    target = detect(_overrides(cpu=True), probe=probe).target
    assert target.free_threaded and target.python_shown == "3.14t"
    assert not detect(
        _overrides(cpu=True), probe=dataclasses.replace(probe, free_threaded=False)
    ).target.free_threaded


def test_the_live_probe_reads_py_gil_disabled(monkeypatch: pytest.MonkeyPatch) -> None:
    """``sysconfig``'s ``Py_GIL_DISABLED`` as a free-threaded CPython sets it (1)."""
    real = sysconfig.get_config_var

    def gil_disabled(name: str) -> object:
        return 1 if name == "Py_GIL_DISABLED" else real(name)

    monkeypatch.setattr(sysconfig, "get_config_var", gil_disabled)
    assert live_probe({}).free_threaded is True
    monkeypatch.setattr(
        sysconfig, "get_config_var", lambda name: None if name == "Py_GIL_DISABLED" else real(name)
    )
    assert live_probe({}).free_threaded is False

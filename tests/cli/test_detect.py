"""`colabenv detect` and `colabenv diff` through the installed console script.

A stand-in ``nvidia-smi`` on PATH replays the recorded hosts; NVML fails on its own on this
GPU-less machine (no libnvidia-ml), so nvidia-smi is what detection falls back to.
"""

from __future__ import annotations

import json
import os
import stat
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

from tests.support.fixtures import Runner
from tests.support.paths import DATA as TEST_DATA

DATA = TEST_DATA / "detect"
SMI = DATA / "smi"
RUNTIMES = TEST_DATA / "runtimes"
GPU_HOSTS = sorted(p.name for p in SMI.iterdir() if p.name != "driver-failed")

requires_gpu_less_host = pytest.mark.skipif(
    Path("/proc/driver/nvidia/version").exists(),
    reason="a real NVIDIA driver answers through NVML before the stand-in nvidia-smi",
)


def stand_in_smi(bin_dir: Path, host: Path) -> Path:
    """An ``nvidia-smi`` that prints a recorded host's answers."""
    bin_dir.mkdir(parents=True, exist_ok=True)
    rc_file = host / "returncode"
    rc = rc_file.read_text().strip() if rc_file.exists() else "0"
    script = bin_dir / "nvidia-smi"
    script.write_text(
        "#!/bin/sh\n"
        'case "$1" in\n'
        f"  --query-gpu=*) cat '{host / 'query.csv'}' ;;\n"
        f"  *) cat '{host / 'banner.txt'}' ;;\n"
        "esac\n"
        f"exit {rc}\n"
    )
    script.chmod(script.stat().st_mode | stat.S_IXUSR | stat.S_IXGRP | stat.S_IXOTH)
    return script


def run_cli(
    runner: Runner, *args: str, path_prefix: Path | None = None, timeout: float = 60
) -> subprocess.CompletedProcess[str]:
    """``runner`` with ``path_prefix`` first on PATH (a stand-in nvidia-smi)."""
    env = {} if path_prefix is None else {"PATH": f"{path_prefix}{os.pathsep}{os.environ.get('PATH', '')}"}
    return runner(*args, env=env, timeout=timeout)


def detect_json(runner: Runner, *args: str, path_prefix: Path | None = None) -> dict[str, Any]:
    result = run_cli(runner, "detect", "--json", *args, path_prefix=path_prefix)
    assert result.returncode == 0, result.stderr
    data: dict[str, Any] = json.loads(result.stdout)
    return data


@requires_gpu_less_host
def test_this_gpu_less_machine_reports_no_gpu_cleanly(runner: Runner, tmp_path: Path) -> None:
    empty_bin = tmp_path / "bin"
    empty_bin.mkdir()
    started = time.monotonic()
    result = runner(
        "detect", "--json", env={"PATH": f"{empty_bin}{os.pathsep}/usr/bin{os.pathsep}/bin"}, timeout=60
    )
    elapsed = time.monotonic() - started
    assert result.returncode == 0
    assert result.stderr == ""
    data = json.loads(result.stdout)
    assert data["target"]["driver"] is None
    assert data["target"]["cuda"] is None
    assert data["target"]["compute_capabilities"] == []
    assert data["gpus"] == []
    assert data["runtime"] == "generic"
    assert data["notes"][-1] == "no NVIDIA driver found"
    assert any(note.startswith("NVML: ") for note in data["notes"])
    assert set(data) >= {"target", "gpus", "runtime", "installed", "notes"}
    assert elapsed < 3, f"detect took {elapsed:.2f}s"


@requires_gpu_less_host
@pytest.mark.parametrize("host", GPU_HOSTS)
def test_recorded_hosts_through_the_console_script(runner: Runner, tmp_path: Path, host: str) -> None:
    stand_in_smi(tmp_path / "bin", SMI / host)
    data = detect_json(runner, path_prefix=tmp_path / "bin")
    expected = json.loads((SMI / host / "expected.json").read_text())
    assert data["target"]["driver"] == expected["driver"]
    assert data["target"]["cuda"] == expected["cuda"]
    assert data["target"]["compute_capabilities"] == expected["compute_capabilities"]
    assert data["gpus"] == expected["gpus"]
    assert "no NVIDIA driver found" not in data["notes"]


@requires_gpu_less_host
def test_failing_driver_through_the_console_script(runner: Runner, tmp_path: Path) -> None:
    stand_in_smi(tmp_path / "bin", SMI / "driver-failed")
    data = detect_json(runner, path_prefix=tmp_path / "bin")
    assert data["target"]["driver"] is None
    assert data["gpus"] == []
    assert any(
        n.startswith("nvidia-smi: exited 9: NVIDIA-SMI has failed because it couldn't communicate")
        for n in data["notes"]
    )


@requires_gpu_less_host
def test_hanging_nvidia_smi_costs_at_most_its_timeout(runner: Runner, tmp_path: Path) -> None:
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    pid_file = tmp_path / "pid"
    script = bin_dir / "nvidia-smi"
    script.write_text(f"#!/bin/sh\necho $$ > '{pid_file}'\nexec sleep 120\n")
    script.chmod(0o755)
    started = time.monotonic()
    result = run_cli(runner, "detect", "--json", path_prefix=bin_dir, timeout=30)
    elapsed = time.monotonic() - started
    assert result.returncode == 0, result.stderr
    data = json.loads(result.stdout)
    assert "nvidia-smi: did not answer within 5s (killed)" in data["notes"]
    assert data["target"]["driver"] is None
    assert 4.5 < elapsed < 9, f"detect took {elapsed:.2f}s"
    pid = int(pid_file.read_text())
    with pytest.raises(ProcessLookupError):
        os.kill(pid, 0)


@requires_gpu_less_host
def test_table_for_people_shows_gpus_frameworks_and_warnings(runner: Runner, tmp_path: Path) -> None:
    stand_in_smi(tmp_path / "bin", SMI / "mixed-1080ti-3090")
    freeze = RUNTIMES / "colab-2025.07" / "pip-freeze.txt"
    result = run_cli(runner, "detect", "--installed-from", str(freeze), path_prefix=tmp_path / "bin")
    assert result.returncode == 0, result.stderr
    out = result.stdout
    for text in (
        "535.183.01",
        "12.2",
        "NVIDIA GeForce GTX 1080 Ti",
        "NVIDIA GeForce RTX 3090",
        "6.1 (sm_61)",
        "8.6 (sm_86)",
        "11264 MiB",
        "2.6.0+cu124",
        "CUDA 12.4",
    ):
        assert text in out, text


def test_no_kernels_warning_in_the_table(runner: Runner) -> None:
    freeze = RUNTIMES / "colab-2025.07" / "pip-freeze.txt"
    result = run_cli(
        runner,
        "detect",
        "--installed-from",
        str(freeze),
        "--driver",
        "550.54.15",
        "--compute-capability",
        "3.7,7.5",
    )
    assert result.returncode == 0, result.stderr
    assert "warning: torch 2.6.0+cu124 has no kernels for sm_37" in result.stdout
    assert "sm_75" not in result.stdout.split("warning:", 1)[1]


def test_overrides_through_flags_and_environment(runner: Runner) -> None:
    data = detect_json(runner, "--driver", "580.65.06", "--compute-capability", "9.0", "--python", "3.12")
    assert data["target"]["driver"] == "580.65.06"
    assert data["target"]["cuda"] == "13.0"
    assert data["target"]["compute_capabilities"] == ["9.0"]
    assert data["target"]["python"] == "3.12"
    result = runner(
        "detect",
        "--json",
        "--cuda",
        "12.2",
        env={"COLABENV_DRIVER_VERSION": "550.54.15", "COLABENV_COMPUTE_CAPABILITY": "7.5,7.5"},
        timeout=60,
    )
    target = json.loads(result.stdout)["target"]
    assert target == {**target, "driver": "550.54.15", "cuda": "12.2", "compute_capabilities": ["7.5"]}
    cpu = detect_json(runner, "--cpu")
    assert cpu["target"]["driver"] is None
    assert cpu["gpus"] == []


def test_bad_override_and_bad_freeze_are_one_line_errors(runner: Runner, tmp_path: Path) -> None:
    freeze = tmp_path / "freeze.txt"
    freeze.write_text("numpy==2.0.2\nnumpy>=2\n")
    result = run_cli(runner, "detect", "--json", "--installed-from", str(freeze))
    assert result.returncode == 2
    assert result.stdout == ""
    assert result.stderr.strip().splitlines() == [
        f"colabenv: {freeze}: line 2: 'numpy>=2' is not a `pip freeze` line"
        " (expected name==version or name @ URL)"
    ]
    result = run_cli(runner, "detect", "--driver", "banana")
    assert result.returncode == 2
    assert result.stdout == ""
    assert "--driver" in result.stderr and "Traceback" not in result.stderr


# ---------------------------------------------------------------------------------------------
# diff


def fingerprint(**changes: Any) -> dict[str, Any]:
    base: dict[str, Any] = {
        "target": {
            "driver": "550.54.15",
            "cuda": "12.4",
            "compute_capabilities": ["7.5"],
            "python": "3.11",
            "platform": "linux_x86_64",
        },
        "gpus": [
            {
                "name": "Tesla T4",
                "compute_capability": "7.5",
                "memory_total_mib": 15360,
                "memory_free_mib": 15095,
            }
        ],
        "runtime": "colab",
        "installed": {"torch": "2.6.0+cu124", "nvidia-cudnn-cu12": "9.1.0.70"},
        "packages": {"numpy": "2.0.2", "pandas": "2.2.2"},
        "notes": [],
        "python_implementation": "CPython",
        "python_full": "3.11.13",
        "glibc": "2.35",
        "state_dir": "/content/.colabenv",
    }
    for key, value in changes.items():
        if key in base["target"]:
            base["target"][key] = value
        else:
            base[key] = value
    return base


def write(path: Path, data: object) -> Path:
    path.write_text(json.dumps(data))
    return path


def test_diff_same_fingerprint_exits_0(runner: Runner, tmp_path: Path) -> None:
    a = write(tmp_path / "a.json", fingerprint())
    changed_noise = fingerprint(notes=["NVML: something"], state_dir="/elsewhere")
    changed_noise["gpus"][0]["memory_free_mib"] = 3
    b = write(tmp_path / "b.json", changed_noise)
    result = run_cli(runner, "diff", str(a), str(b))
    assert result.returncode == 0, result.stdout + result.stderr
    assert result.stdout.startswith("no differences")


def test_diff_groups_what_changed(runner: Runner, tmp_path: Path) -> None:
    a = write(tmp_path / "mine.json", fingerprint())
    b = write(
        tmp_path / "theirs.json",
        fingerprint(
            driver="580.65.06",
            cuda="13.0",
            compute_capabilities=["9.0"],
            gpus=[
                {
                    "name": "NVIDIA H100 80GB HBM3",
                    "compute_capability": "9.0",
                    "memory_total_mib": 81559,
                    "memory_free_mib": 1,
                }
            ],
            python="3.12",
            python_full="3.12.12",
            installed={"torch": "2.8.0+cu126", "jax": "0.5.3"},
            packages={"numpy": "2.0.2", "pandas": "2.3.0", "scipy": "1.16.0"},
        ),
    )
    result = run_cli(runner, "diff", str(a), str(b))
    assert result.returncode == 1, result.stderr
    assert result.stdout == (
        f"--- {a}\n+++ {b}\n"
        "GPU and driver\n"
        "  driver: 550.54.15 -> 580.65.06\n"
        "  cuda: 12.4 -> 13.0\n"
        "  compute_capabilities: 7.5 -> 9.0\n"
        "  gpu 0: Tesla T4 (7.5, 15360 MiB) -> NVIDIA H100 80GB HBM3 (9.0, 81559 MiB)\n"
        "Python\n"
        "  python: 3.11 -> 3.12\n"
        "  python_full: 3.11.13 -> 3.12.12\n"
        "frameworks\n"
        "  jax: (absent) -> 0.5.3\n"
        "  nvidia-cudnn-cu12: 9.1.0.70 -> (absent)\n"
        "  torch: 2.6.0+cu124 -> 2.8.0+cu126\n"
        "other packages\n"
        "  pandas: 2.2.2 -> 2.3.0\n"
        "  scipy: (absent) -> 1.16.0\n"
    )


@requires_gpu_less_host
def test_diff_of_two_real_detect_outputs(runner: Runner, tmp_path: Path) -> None:
    stand_in_smi(tmp_path / "t4", SMI / "colab-t4")
    stand_in_smi(tmp_path / "mixed", SMI / "mixed-1080ti-3090")
    a = write(tmp_path / "a.json", detect_json(runner, path_prefix=tmp_path / "t4"))
    b = write(tmp_path / "b.json", detect_json(runner, path_prefix=tmp_path / "mixed"))
    same = run_cli(runner, "diff", str(a), str(a))
    assert same.returncode == 0
    result = run_cli(runner, "diff", str(a), str(b))
    assert result.returncode == 1
    assert "  driver: 550.54.15 -> 535.183.01\n" in result.stdout
    assert "  gpu 1: (absent) -> NVIDIA GeForce RTX 3090 (8.6, 24576 MiB)\n" in result.stdout


@pytest.mark.parametrize(
    ("content", "problem"),
    [
        (None, "cannot read"),
        ("{not json", "not JSON (line 1"),
        ("[1, 2]", "expected a JSON object"),
        (json.dumps({"gpus": []}), "target: missing"),
        (json.dumps({**fingerprint(), "target": []}), "target: expected an object, got an array"),
        (json.dumps({**fingerprint(), "gpus": {}}), "gpus: expected an array of objects"),
        (json.dumps({**fingerprint(), "gpus": [{"name": 1}]}), "gpus[0].name: expected a string"),
        (json.dumps({**fingerprint(), "installed": {"a\nb": 1}}), 'installed."a\\nb": expected'),
        (json.dumps({**fingerprint(), "installed": {"torch": 2}}), "installed.torch"),
        (json.dumps({**fingerprint(), "target": {"driver": None}}), "target.cuda: missing"),
    ],
)
def test_diff_bad_input_exits_2_naming_the_file(
    runner: Runner, tmp_path: Path, content: str | None, problem: str
) -> None:
    good = write(tmp_path / "good.json", fingerprint())
    bad = tmp_path / "bad.json"
    if content is not None:
        bad.write_text(content)
    result = run_cli(runner, "diff", str(good), str(bad))
    assert result.returncode == 2
    assert result.stdout == ""
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1
    assert lines[0].startswith(f"colabenv: {bad}: ")
    assert problem in lines[0]


def test_diff_without_packages_key_compares_the_rest(runner: Runner, tmp_path: Path) -> None:
    old = fingerprint()
    del old["packages"]
    a = write(tmp_path / "old.json", old)
    b = write(tmp_path / "new.json", fingerprint())
    result = run_cli(runner, "diff", str(a), str(b))
    assert result.returncode == 0
    assert f"other packages not compared: not recorded in {a}" in result.stderr


def test_diff_shows_control_characters_escaped(runner: Runner, tmp_path: Path) -> None:
    a = write(tmp_path / "a.json", fingerprint())
    forged = fingerprint(
        installed={"torch\n+++ forged": "2.6.0\x1b[31m", "jax": "0.5.3\r"},
        gpus=[{"name": "T4\n  driver: 1 -> 2", "compute_capability": "7.5", "memory_total_mib": 15360}],
    )
    b = write(tmp_path / "b\x1b.json", forged)
    result = run_cli(runner, "diff", str(a), str(b))
    assert result.returncode == 1, result.stderr
    assert "\x1b" not in result.stdout and "\r" not in result.stdout
    lines = result.stdout.splitlines()
    assert lines[1] == f"+++ {tmp_path}/b\\x1b.json"
    assert "  gpu 0: Tesla T4 (7.5, 15360 MiB) -> T4\\n  driver: 1 -> 2 (7.5, 15360 MiB)" in lines
    assert "  torch\\n+++ forged: (absent) -> 2.6.0\\x1b[31m" in lines
    assert "  jax: (absent) -> 0.5.3\\r" in lines
    assert not any(line.startswith("+++ forged") for line in lines)


@pytest.mark.parametrize(
    ("content", "words"),
    [
        ('{"target": ' * 100_000, "nested too deeply"),
        ("[" * 100_000 + "]" * 100_000, "nested too deeply"),
    ],
)
def test_diff_of_deep_json_is_exit_2(runner: Runner, tmp_path: Path, content: str, words: str) -> None:
    good = write(tmp_path / "good.json", fingerprint())
    bad = tmp_path / "bad.json"
    bad.write_text(content)
    result = run_cli(runner, "diff", str(good), str(bad))
    assert (result.returncode, result.stdout) == (2, "")
    assert result.stderr.splitlines() == [f"colabenv: {bad}: not a fingerprint: JSON {words}"]


def test_diff_of_a_huge_integer_is_bounded(runner: Runner, tmp_path: Path) -> None:
    """A 1000-digit integer parses on every Python (under the 4300-digit limit of
    ``sys.set_int_max_str_digits``, and where there is none) and is shown by its size."""
    good = write(tmp_path / "good.json", fingerprint())
    bad = tmp_path / "bad.json"
    huge = "9" * 1000
    bad.write_text(
        json.dumps(fingerprint(driver=0))
        .replace('"driver": 0', f'"driver": {huge}')
        .replace('"memory_total_mib": 15360', f'"memory_total_mib": {huge}')
    )
    result = run_cli(runner, "diff", str(good), str(bad))
    assert (result.returncode, result.stderr) == (1, "")
    assert "  driver: 550.54.15 -> (a number of about 1001 digits)\n" in result.stdout
    assert "Tesla T4 (7.5)" in result.stdout
    assert huge[:200] not in result.stdout
    assert max(len(line) for line in result.stdout.splitlines()) < 200


def test_diff_of_an_integer_past_pythons_digit_limit_is_refused(runner: Runner, tmp_path: Path) -> None:
    good = write(tmp_path / "good.json", fingerprint())
    bad = tmp_path / "bad.json"
    bad.write_text(json.dumps(fingerprint(driver=0)).replace('"driver": 0', f'"driver": {"9" * 5000}'))
    result = run_cli(runner, "diff", str(good), str(bad))
    assert "Traceback" not in result.stderr
    if hasattr(sys, "get_int_max_str_digits"):  # from 3.10.7 on
        assert (result.returncode, result.stdout) == (2, "")
        assert result.stderr.startswith(f"colabenv: {bad}: not a fingerprint: ")
    else:  # read, and shown by its size as in the test above
        assert result.returncode == 1
        assert "  driver: 550.54.15 -> (a number of about 5001 digits)\n" in result.stdout


def test_diff_of_a_fifo_or_a_device_is_refused_at_once(runner: Runner, tmp_path: Path) -> None:
    good = write(tmp_path / "good.json", fingerprint())
    fifo = tmp_path / "fifo.json"
    os.mkfifo(fifo)
    for bad, words in ((fifo, "is a FIFO"), (Path("/dev/zero"), "is a character device")):
        started = time.monotonic()
        result = run_cli(runner, "diff", str(good), str(bad), timeout=20)
        assert time.monotonic() - started < 10
        assert (result.returncode, result.stdout) == (2, "")
        assert result.stderr.splitlines() == [f"colabenv: {bad}: cannot read: {words}, not a regular file"]


def test_another_platforms_glibc_is_not_this_hosts(runner: Runner) -> None:
    """``--platform linux_aarch64`` on this x86-64 host: this host's glibc is not the target's,
    so neither the table nor ``--json`` gives it (a lock for aarch64 takes manylinux up to
    2.28, not this glibc: lock/wheel_tags.py); this platform keeps it."""
    flags = (
        "--platform",
        "linux_aarch64",
        "--cpu",
        "--python",
        f"{sys.version_info[0]}.{sys.version_info[1]}",
    )
    text = runner("detect", *flags)
    assert text.returncode == 0, text.stderr
    (row,) = [line for line in text.stdout.splitlines() if line.lstrip().startswith("platform")]
    assert row.split(None, 1)[1] == "linux_aarch64, glibc: not known (another platform)", row
    data = json.loads(runner("detect", "--json", *flags).stdout)
    assert data["glibc"] is None
    here = json.loads(runner("detect", "--json", "--cpu").stdout)
    assert here["target"]["platform"] == "linux_x86_64" and here["glibc"]

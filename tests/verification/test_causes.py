"""The cause a smoke FAIL names (``colabenv/verification/causes.py``): doctor's failure
signatures read in what the smoke child said, and in its stderr only where the child failed at
the import, the device's start or a kernel, never beside a result that failed for another reason."""

from __future__ import annotations

from pathlib import Path

from colabenv.models import Framework
from colabenv.verification.causes import with_cause
from colabenv.verification.children import check_smoke, parse_smoke, run_smoke
from colabenv.verification.report import Status
from tests.support.standin_frameworks import Behaviour, Standin, make_venv

NOISE = "ModuleNotFoundError: No module named 'optional_extra'"


def test_a_matmul_that_disagrees_takes_no_cause_from_the_noise_of_its_stderr(tmp_path: Path) -> None:
    """A GPU whose matmul has a NaN, in a child whose stderr logs an unrelated
    ``ModuleNotFoundError`` (a startup hook's): the FAIL names the NaN and no cause, although
    the logged line alone would read as ``not-installed``."""
    venv = make_venv(tmp_path / "venv", with_colabenv=False)
    venv.install(Standin("torch", "2.9.1+cu128", Behaviour.GPU_NAN_ONE, cuda="12.8"))
    (venv.site_packages / "zz_noise.pth").write_text(f"import sys; sys.stderr.write({NOISE + chr(10)!r})\n")
    run = run_smoke(Framework.TORCH, 60, python=str(venv.python), scratch=tmp_path)
    assert NOISE in run.completed.stderr, run.completed
    result = parse_smoke(run.result)
    assert result is not None and result.error is None and result.gpu_reason is None, run.completed
    assert all(device.error is None for device in result.devices), result
    judged = check_smoke(Framework.TORCH, run, timeout=60, host_has_gpu=True, require_gpu=True)
    assert judged.status is Status.FAIL and "NaN" in judged.detail, judged
    assert with_cause(judged, run) == judged

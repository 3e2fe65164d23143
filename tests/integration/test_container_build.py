"""The image ``colabenv render --format dockerfile`` describes, built with podman and verified.

Everything is real but the registry and the frameworks: the base image is made from the
Python running the tests (``tests.support.containers``) and imported under the name the
Dockerfile's ``FROM`` gives, into a podman storage of the test's own; colabenv and its
dependencies come from one local index, the profile's packages (a stand-in torch that computes
on the CPU) from others, with the index credentials passed as build secrets. Then ``colabenv
verify`` runs inside the image, as ``docker run --gpus all IMAGE colabenv verify`` would on a
cluster. Skipped, with the reason, where podman cannot build or run a container.
"""

from __future__ import annotations

import json
import shutil
import tempfile
from collections.abc import Iterator
from dataclasses import replace
from pathlib import Path

import pytest

from colabenv import __version__
from colabenv.resolve.overrides import TargetFlags
from tests.support.checks import expect
from tests.support.containers import (
    PY,
    Podman,
    colabenv_wheelhouse,
    podman_problem,
    python_rootfs,
    runtimes,
    tar_rootfs,
)
from tests.support.fixtures import Runner
from tests.support.index import LocalIndex
from tests.support.isolation import uv_bin
from tests.support.journeys import _behaviour_files, _other_pin_specs, release_specs
from tests.support.wheels import ORDINARY, Standins, WheelSpec, _nvidia_specs, build_standins

pytestmark = pytest.mark.slow

BASE = f"python:{PY}-slim-bookworm"
IMAGE = "localhost/colabenv-test-image:latest"
VALUE = 'a "b" $HOME \\ c\' d \\'
TOKEN = "s3cret-t0ken"
PROFILE = """\
name = "cluster"
[frameworks]
torch = "=={torch}"
[env]
PYTORCH_CUDA_ALLOC_CONF = "expandable_segments:True"
TEAM_NOTE = {note}
[install]
index_url = "http://${{IDX_USER}}:${{IDX_TOKEN}}@127.0.0.1:{port}/simple/"
pytorch_index_url = "{pytorch}"
[verify]
require_gpu = false
"""


@pytest.fixture(scope="module")
def podman(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Podman]:
    """A podman with its own storage holding the base image, whose pip.conf names a local
    index of colabenv and its dependencies (served while the module runs); skips, saying
    why, where no container can run."""
    problem = podman_problem()
    if problem is not None:
        pytest.skip(problem)
    work = tmp_path_factory.mktemp("image-base")
    home = Path(tempfile.mkdtemp(prefix="colabenv-podman-"))
    with LocalIndex(colabenv_wheelhouse(work / "wheelhouse", __version__)) as own:
        rootfs = python_rootfs(
            work / "rootfs", f"[global]\nindex-url = {own.url}\n", loads_for=[Path(uv_bin())]
        )
        base = tar_rootfs(rootfs, work / "base.tar")
        engine, reasons = None, []
        for runtime in runtimes():
            candidate = Podman(home / f"engine-{runtime or 'default'}", runtime)
            done = candidate.import_base(base, BASE)
            if done.returncode == 0:
                done = candidate.run(BASE, "python3", "-c", "print('ok')")
            if done.returncode == 0 and done.stdout.strip() == "ok":
                engine = candidate
                break
            reasons.append(f"{runtime or 'the default runtime'}: {_last_line(done.stderr)}")
            candidate.reset()
        if engine is None:
            shutil.rmtree(home, ignore_errors=True)
            pytest.skip("podman cannot run a container here (" + "; ".join(reasons) + ")")
        try:
            yield engine
        finally:
            engine.reset()
            shutil.rmtree(home, ignore_errors=True)


def _last_line(text: str) -> str:
    lines = [line for line in text.strip().splitlines() if line.strip()]
    return lines[-1] if lines else "no output"


TARGETS = {
    "cpu": TargetFlags(cpu=True, python=PY),
    "t4": TargetFlags(driver="550.54.15", compute_capability=("7.5",), python=PY),
}


def _argv(flags: TargetFlags) -> list[str]:
    argv = ["--python", str(flags.python)]
    if flags.cpu:
        return ["--cpu", *argv]
    return ["--driver", str(flags.driver), "--compute-capability", ",".join(flags.compute_capability), *argv]


def _torch_choice(tmp_path: Path, flags: TargetFlags) -> tuple[str, str]:
    """(version, variant) the profile resolves torch to on the target of ``flags``."""
    from colabenv.catalog.load import shipped_catalog, shipped_tpu
    from colabenv.host.detect import detect
    from colabenv.models import Framework
    from colabenv.profile.load import load_profile
    from colabenv.resolve.overrides import resolve_overrides
    from colabenv.resolve.resolver import resolve

    probe = tmp_path / "probe.toml"
    probe.write_text('name = "probe"\n[frameworks]\ntorch = "*"\n', encoding="utf-8")
    target = detect(resolve_overrides(flags, environ={}, tpu_facts=shipped_tpu)).target
    choice = resolve(load_profile(probe), target, shipped_catalog()).choice(Framework.TORCH)
    assert choice is not None
    return str(choice.release), choice.variant


def _standins(root: Path, version: str, variant: str) -> Standins:
    """torch of that release and variant computing on the CPU, its NVIDIA wheels and the rest
    of what its metadata names."""
    specs = [
        *release_specs("torch", version, variant),
        *(WheelSpec("default", "", name, v, requires) for name, v, requires in ORDINARY),
    ]
    specs += _nvidia_specs(specs)
    specs += _other_pin_specs(specs)
    return build_standins(
        root,
        [replace(s, files=_behaviour_files(s.name, s.version)) if s.name == "torch" else s for s in specs],
    )


@pytest.mark.parametrize("target", sorted(TARGETS))
def test_the_rendered_dockerfile_builds_and_verify_passes_inside(
    target: str,
    podman: Podman,
    runner: Runner,
    tmp_path: Path,
) -> None:
    """A CPU target, and a T4 target built where there is no NVIDIA driver: the script's
    preflight would refuse that host but for the COLABENV_SKIP_PREFLIGHT the image sets."""
    engine = podman
    version, variant = _torch_choice(tmp_path, TARGETS[target])
    standins = _standins(tmp_path / "standins", version, variant)
    with LocalIndex(standins.default) as default, LocalIndex(standins.pytorch) as pytorch:
        profile = tmp_path / "cluster.toml"
        profile.write_text(
            PROFILE.format(
                torch=version, note=json.dumps(VALUE), port=default.port, pytorch=pytorch.base_url
            ),
            encoding="utf-8",
        )
        done = runner("render", profile, *_argv(TARGETS[target]), "--format", "dockerfile", "-o", "ctx")
        assert done.returncode == 0, done.stderr
        secrets = tmp_path / "secrets"
        secrets.mkdir()
        (secrets / "IDX_USER").write_text("team\n")
        (secrets / "IDX_TOKEN").write_text(TOKEN + "\n")
        built = engine.build(
            tmp_path / "ctx",
            IMAGE,
            "--secret",
            f"id=IDX_USER,src={secrets / 'IDX_USER'}",
            "--secret",
            f"id=IDX_TOKEN,src={secrets / 'IDX_TOKEN'}",
        )
        assert built.returncode == 0, built.stdout[-6000:] + built.stderr[-3000:]
        assert "COLABENV: restart required" in built.stdout
        assert "COLABENV: installing (uv): torch==" in built.stdout, (
            "colabenv's uv, beside python3, is the installer the script's auto picks"
        )
        assert any(TOKEN in auth for auth in _decoded(default.authorizations)), (
            "the secrets reached the script's index URL"
        )

    verified = engine.run(IMAGE, "colabenv", "verify", "--json")
    report = json.loads(verified.stdout)
    assert verified.returncode == 0 and report["ok"], verified.stdout
    expect(report, {"marker": "PASS", "smoke:torch": "PASS", "env": "PASS", "versions": "PASS"})

    default_command = engine.run(IMAGE)
    assert default_command.returncode == 0, default_command.stdout + default_command.stderr

    shown = engine.run(IMAGE, "printenv", "TEAM_NOTE")
    assert shown.stdout == VALUE + "\n", "ENV holds the [env] value exactly"
    installer = engine.run(IMAGE, "bash", "-c", "command -v uv; ls /opt/colabenv-build 2>&1")
    assert installer.stdout.splitlines()[0] == "/usr/local/bin/uv"
    assert "No such file" in installer.stdout, "the build folder is gone"

    inspected = engine("image", "inspect", IMAGE)
    labels = json.loads(inspected.stdout)[0]["Config"]["Labels"]
    assert labels["colabenv.profile"] == "cluster"
    assert labels["colabenv.version"] == __version__
    assert json.loads(labels["colabenv.target"])["python"] == PY
    history = engine("history", "--no-trunc", IMAGE)
    assert history.returncode == 0 and TOKEN not in history.stdout + inspected.stdout

    tampered = tmp_path / "tampered"
    shutil.copytree(tmp_path / "ctx", tampered)
    with (tampered / "setup.sh").open("a", encoding="utf-8") as script:
        script.write("echo edited by hand\n")
    refused = engine.build(tampered, "localhost/colabenv-test-tampered:latest")
    assert refused.returncode != 0
    assert "setup.sh is not the script this definition was rendered with" in (refused.stdout + refused.stderr)
    assert "edited by hand" not in refused.stdout


def _decoded(authorizations: list[str]) -> list[str]:
    import base64

    found = []
    for header in authorizations:
        scheme, _, value = header.partition(" ")
        if scheme.lower() == "basic":
            found.append(base64.b64decode(value).decode("utf-8", "replace"))
    return found

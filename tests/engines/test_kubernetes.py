"""``render --format kubernetes`` (issue 37): a Job made from a real lock of three named targets
(uv against the local indexes), read back as YAML and JSON and validated against the
Kubernetes OpenAPI schema that ``kubernetes-validate`` ships (JSON schemas generated from the
official OpenAPI, strict: no unknown field); every bad input one line, exit 2, nothing written.
No cluster runs the Job here (docs/scaling-out.md says so)."""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import kubernetes_validate  # the test extra's: a missing schema fails here, never skips
import pytest
import yaml

from colabenv.catalog.gpu_products import load_gpu_products, shipped_gpu_products
from colabenv.engines.kubernetes import (
    MAX_LOCK_BYTES,
    JobRequest,
    KubernetesJob,
    check_command,
    job_manifest,
    job_name,
    products_of,
    requested_job,
)
from colabenv.errors import CatalogError, UsageError
from colabenv.lock.file import read_lock_file, render_lock
from colabenv.models import Accelerator, JobSettings
from tests.support.fixtures import *  # noqa: F403
from tests.support.index import LocalIndex
from tests.support.locking import PYTHON, colabenv, target_indexes, write_targets_profile
from tests.support.wheels import Standins, build_wheel

SCHEMA_VERSION = "1.37.0"
"""The Kubernetes release whose OpenAPI schema the manifests are validated against
(docs/scaling-out.md names it)."""
IMAGE = "registry.example/team/train:1"


def validate(manifest: dict[str, Any]) -> None:
    kubernetes_validate.validate(manifest, SCHEMA_VERSION, strict=True)


@pytest.fixture(scope="module")
def locked(standin_wheels: Standins, tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Path, Path]]:
    """(profile, its lock of every target): nb (a T4), cluster (an H100), ci (the CPU); the
    indexes stay up for render's index check."""
    folder = tmp_path_factory.mktemp("k8s")
    with target_indexes(standin_wheels, tmp_path_factory.mktemp("compiled")) as indexes:
        profile = write_targets_profile(folder, indexes, PYTHON, torch=False)
        lock = folder / "team.lock"
        done = colabenv("lock", profile, "--all-targets", "-o", lock)
        assert done.returncode == 0, done.stderr
        yield profile, lock


def render(profile: Path, lock: Path, *words: str | Path) -> Any:
    return colabenv("render", profile, "--lock", lock, "--format", "kubernetes", *words)


def test_a_gpu_job_read_back_from_yaml(locked: tuple[Path, Path], tmp_path: Path) -> None:
    profile, lock = locked
    out = tmp_path / "job.yaml"
    done = render(
        profile, lock, "--target", "nb", "--image", IMAGE, "--gpus", "2", "--gpu-type", "A100",
        "--memory", "32G", "--cpus", "8", "--time", "2:00:00", "-o", out,
        "--", "python", "train.py", "--epochs", "3",
    )  # fmt: skip
    assert (done.returncode, done.stdout) == (0, ""), done.stderr
    assert "section nb of team.lock" in done.stderr
    job = yaml.safe_load(out.read_text())
    validate(job)
    assert (job["apiVersion"], job["kind"], job["metadata"]["name"]) == ("batch/v1", "Job", "team-targets")
    spec = job["spec"]
    assert (spec["backoffLimit"], spec["activeDeadlineSeconds"]) == (0, 7200)
    pod = spec["template"]["spec"]
    (verify,), (main,) = pod["initContainers"], pod["containers"]
    assert verify["image"] == main["image"] == IMAGE
    assert verify["command"] == ["colabenv", "verify", "--lock", "/etc/colabenv/colabenv.lock"]
    assert main["command"] == ["python", "train.py", "--epochs", "3"]
    wanted = {"memory": "32768Mi", "cpu": "8"}
    for container in (verify, main):
        assert container["resources"] == {"requests": wanted, "limits": {**wanted, "nvidia.com/gpu": "2"}}
    (term,) = pod["affinity"]["nodeAffinity"]["requiredDuringSchedulingIgnoredDuringExecution"][
        "nodeSelectorTerms"
    ]
    (expression,) = term["matchExpressions"]
    assert expression["key"] == "nvidia.com/gpu.product" and expression["operator"] == "In"
    assert "NVIDIA-A100-SXM4-80GB" in expression["values"]
    # the lock the init container verifies is the section the image was built from
    section = read_lock_file(lock).section("nb")
    assert section is not None
    assert spec["template"]["metadata"]["annotations"]["colabenv/lock"] == render_lock(section)
    (volume,) = pod["volumes"]
    assert volume["downwardAPI"]["items"] == [
        {"path": "colabenv.lock", "fieldRef": {"fieldPath": "metadata.annotations['colabenv/lock']"}}
    ]
    assert verify["volumeMounts"] == [
        {"name": volume["name"], "mountPath": "/etc/colabenv", "readOnly": True}
    ]


def test_a_cpu_job_read_back_from_json(locked: tuple[Path, Path], tmp_path: Path) -> None:
    profile, lock = locked
    out = tmp_path / "job.json"
    done = render(profile, lock, "--target", "ci", "--image", IMAGE, "--memory", "4G", "-o", out)
    assert (done.returncode, done.stdout) == (0, ""), done.stderr
    job = json.loads(out.read_text())
    validate(job)
    pod = job["spec"]["template"]["spec"]
    (main,) = pod["containers"]
    assert "command" not in main, "no command: the image's own (colabenv verify)"
    assert main["resources"] == {"requests": {"memory": "4096Mi"}, "limits": {"memory": "4096Mi"}}
    assert "affinity" not in pod and "activeDeadlineSeconds" not in job["spec"]
    assert "nvidia.com/gpu" not in out.read_text()
    # an x86-64 lock's wheels run on amd64 nodes alone, in a mixed cluster too
    assert pod["nodeSelector"] == {"kubernetes.io/arch": "amd64"}


def test_an_aarch64_lock_gets_a_job_on_arm64_nodes(tmp_path: Path) -> None:
    """A lock made here (x86-64) for a Grace target: its Job asks for ``kubernetes.io/arch:
    arm64`` nodes (the well-known label), so that it never lands on an amd64 node, where the
    image's aarch64 wheels would fail with ``exec format error``."""
    index = LocalIndex(tmp_path / "index")
    build_wheel(tmp_path / "index" / "six", "six", "1.17.0")
    profile = tmp_path / "p.toml"
    lock = tmp_path / "p.lock"
    with index:
        profile.write_text(
            f'name = "p"\n[packages]\nrequirements = ["six"]\n[install]\nindex_url = "{index.url}"\n'
            f'[targets]\ngrace = {{ platform = "linux_aarch64", cpu = true, python = "{PYTHON}" }}\n',
            encoding="utf-8",
        )
        made = colabenv("lock", profile, "--all-targets", "-o", lock)
        assert made.returncode == 0, made.stderr
        done = render(profile, lock, "--target", "grace", "--image", IMAGE)
    assert done.returncode == 0, done.stderr
    job = yaml.safe_load(done.stdout)
    validate(job)
    pod = job["spec"]["template"]["spec"]
    assert pod["nodeSelector"] == {"kubernetes.io/arch": "arm64"}
    assert "amd64" not in done.stdout.split("colabenv/lock", 1)[0]


def test_yaml_on_stdout_and_a_gpu_by_default(locked: tuple[Path, Path]) -> None:
    profile, lock = locked
    done = render(profile, lock, "--target", "cluster", "--image", IMAGE, "--", "nvidia-smi")
    assert done.returncode == 0, done.stderr
    job = yaml.safe_load(done.stdout)
    validate(job)
    (main,) = job["spec"]["template"]["spec"]["containers"]
    assert main["resources"] == {"limits": {"nvidia.com/gpu": "1"}}
    assert "no GPU type" in done.stderr


def test_the_schema_refuses_what_kubernetes_would(locked: tuple[Path, Path]) -> None:
    """The validation can fail: a misspelled field and a wrong type are refused."""
    profile, lock = locked
    job = yaml.safe_load(render(profile, lock, "--target", "ci", "--image", IMAGE).stdout)
    validate(job)
    misspelled = json.loads(json.dumps(job))
    misspelled["spec"]["template"]["spec"]["initContainer"] = misspelled["spec"]["template"]["spec"].pop(
        "initContainers"
    )
    wrong = json.loads(json.dumps(job))
    wrong["spec"]["backoffLimit"] = "none"
    for broken in (misspelled, wrong):
        with pytest.raises(kubernetes_validate.ValidationError):
            validate(broken)


@pytest.mark.parametrize(
    ("words", "message"),
    [
        (
            ("--target", "nb", "--image", IMAGE, "--gpu-type", "k80"),
            "colabenv: --gpu-type 'k80': not a GPU type of gpu_products.toml, which knows a10, a100, ",
        ),
        (("--target", "nb"), "colabenv: --format kubernetes needs --image REF:"),
        (
            ("--target", "nb", "--image", "Bad Image"),
            "colabenv: --image: 'Bad Image' is not an image reference",
        ),
        (
            ("--target", "nb", "--image", IMAGE, "--", "python", "-c", "a\nb"),
            "colabenv: the command after -- has a word with a line break",
        ),
        (
            ("--driver", "570.124.06", "--compute-capability", "8.0", "--python", PYTHON, "--image", IMAGE),
            "colabenv: team.lock: no section fits this host (nb: ",
        ),
        (
            ("--target", "ci", "--image", IMAGE, "--gpus", "1"),
            "colabenv: --gpus: the lock's section ci is for",
        ),
        (("--target", "nb", "--image", IMAGE, "--partition", "gpu"), "colabenv: --partition names a Slurm"),
        (("--target", "nb", "--image", IMAGE, "--wheelhouse", "/w"), "colabenv: --wheelhouse goes with"),
    ],
)
def test_bad_input_is_one_line_exit_2_nothing_written(
    locked: tuple[Path, Path], tmp_path: Path, words: tuple[str, ...], message: str
) -> None:
    profile, lock = locked
    out = tmp_path / "job.yaml"
    done = render(profile, lock, "-o", out, *words)
    assert (done.returncode, done.stdout) == (2, ""), done.stderr
    assert done.stderr.startswith(message), done.stderr
    assert done.stderr.count("\n") == 1, done.stderr
    assert not out.exists()


def test_the_flags_are_checked_before_the_lock_is_read(locked: tuple[Path, Path], tmp_path: Path) -> None:
    """A bad job flag is named at once, as for --format slurm, not after the lock is read (a
    missing lock used to be named first)."""
    profile, _ = locked
    missing = tmp_path / "no.lock"
    done = colabenv(
        "render", profile, "--lock", missing, "--format", "kubernetes", "--image", IMAGE, "--gpus", "0"
    )
    assert (done.returncode, done.stdout) == (2, ""), done.stderr
    assert done.stderr.startswith("colabenv: --gpus '0': "), done.stderr


def test_no_lock_and_another_extension_are_refused(locked: tuple[Path, Path], tmp_path: Path) -> None:
    profile, lock = locked
    out = tmp_path / "job.txt"
    for words, message in (
        (("--format", "kubernetes", "--target", "nb", "--image", IMAGE), "needs --lock LOCK"),
        (
            ("--lock", lock, "--format", "kubernetes", "--target", "nb", "--image", IMAGE, "-o", out),
            ".json file",
        ),
    ):
        done = colabenv("render", profile, *words)
        assert (done.returncode, done.stdout, done.stderr.count("\n")) == (2, "", 1), done.stderr
        assert message in done.stderr
    assert not out.exists()


def test_a_gpu_type_from_the_profile_is_named_where_it_was_given() -> None:
    """(The profile's ``[job]`` is part of its hash: a lock is made with it, so this is the
    engine's rule, without a second lock.)"""
    types = shipped_gpu_products()
    assert (
        products_of(types, "H100", "team.toml: job.gpu_type", Accelerator.NVIDIA)[0]
        == "NVIDIA-H100-80GB-HBM3"
    )
    assert products_of(types, None, "--gpu-type", Accelerator.NVIDIA) == ()
    with pytest.raises(UsageError) as caught:
        products_of(types, "x100", "team.toml: job.gpu_type", Accelerator.NVIDIA)
    assert str(caught.value).startswith("team.toml: job.gpu_type 'x100': not a GPU type of gpu_products.toml")


def _request(**changes: Any) -> JobRequest:
    request = JobRequest(
        image=IMAGE,
        lock_text="# lock\n",
        lock_section="nb",
        lock_name="team.lock",
        profile_name="team",
        profile_where="team.toml",
        profile_job=JobSettings(gpus=4, gpu_type="a100", partition="gpu"),
        flags=JobSettings(),
        accelerator=Accelerator.NVIDIA,
    )
    return dataclasses.replace(request, **changes)


def test_what_a_request_decides_is_the_engines_not_the_clis() -> None:
    """Flags over the profile's [job], the GPU type's label values, the refusals and the notes:
    decided in the engine (no I/O; the table is passed in), the CLI only prints them."""
    types = shipped_gpu_products()
    job, notes = requested_job(_request(flags=JobSettings(gpus=2)), types)
    assert (job.settings.gpus, job.settings.gpu_type, job.image) == (2, "a100", IMAGE)
    assert "NVIDIA-A100-SXM4-80GB" in job.products
    assert notes == ("the image holds section nb of team.lock",)
    job, notes = requested_job(_request(profile_job=JobSettings(), lock_section=None), types)
    assert job.products == ()
    assert notes == ("no GPU type ([job] gpu_type or --gpu-type): the Job takes any node with NVIDIA GPUs",)
    # on the CPU, the profile's GPU keys are left aside; the flags are refused
    job, _ = requested_job(_request(accelerator=Accelerator.CPU), types)
    assert job.products == ()
    with pytest.raises(UsageError) as caught:
        requested_job(_request(accelerator=Accelerator.CPU, flags=JobSettings(gpus=1, gpu_type="t4")), types)
    assert str(caught.value) == "--gpus, --gpu-type: the lock's section nb is for the CPU"
    with pytest.raises(UsageError) as caught:
        requested_job(_request(profile_job=JobSettings(gpu_type="x100")), types)
    assert str(caught.value).startswith("team.toml: job.gpu_type 'x100': not a GPU type")
    with pytest.raises(UsageError) as caught:
        requested_job(_request(flags=JobSettings(gpu_type="x100")), types)
    assert str(caught.value).startswith("--gpu-type 'x100': not a GPU type")


def test_a_rocm_section_gets_a_job_on_amd_gpus() -> None:
    """AMD's device plugin resource ``amd.com/gpu``; the node labeller's ``amd.com/gpu.device-id``
    (the PCI device ID, lowercase hex) for the GPU type; validated against the schema."""
    types = shipped_gpu_products()
    request = _request(
        accelerator=Accelerator.ROCM, profile_job=JobSettings(gpus=8, gpu_type="mi300x", memory_mib=1024)
    )
    job, notes = requested_job(request, types)
    manifest = job_manifest(job)
    validate(manifest)
    pod = manifest["spec"]["template"]["spec"]  # type: ignore[index]
    (main,) = pod["containers"]
    assert main["resources"] == {
        "requests": {"memory": "1024Mi"},
        "limits": {"memory": "1024Mi", "amd.com/gpu": "8"},
    }
    assert "nvidia.com/gpu" not in json.dumps(manifest)
    (term,) = pod["affinity"]["nodeAffinity"]["requiredDuringSchedulingIgnoredDuringExecution"][
        "nodeSelectorTerms"
    ]
    (expression,) = term["matchExpressions"]
    assert (expression["key"], expression["operator"]) == ("amd.com/gpu.device-id", "In")
    assert "74a1" in expression["values"]
    assert notes == ("the image holds section nb of team.lock",)
    # no type: any node with AMD GPUs, one GPU
    job, notes = requested_job(dataclasses.replace(request, profile_job=JobSettings()), types)
    manifest = job_manifest(job)
    validate(manifest)
    assert "affinity" not in manifest["spec"]["template"]["spec"]  # type: ignore[index]
    assert '"amd.com/gpu": "1"' in json.dumps(manifest)
    assert notes[-1] == "no GPU type ([job] gpu_type or --gpu-type): the Job takes any node with AMD GPUs"
    # a type of the other vendor's is refused, naming the section's vendor's types
    with pytest.raises(UsageError) as caught:
        requested_job(dataclasses.replace(request, flags=JobSettings(gpu_type="a100")), types)
    assert str(caught.value).startswith(
        "--gpu-type 'a100': an NVIDIA GPU, and the lock's section nb is for AMD GPUs, "
        "whose types are mi100, mi210, "
    )
    with pytest.raises(UsageError) as caught:
        requested_job(_request(flags=JobSettings(gpu_type="mi300x")), types)
    assert str(caught.value).startswith(
        "--gpu-type 'mi300x': an AMD GPU, and the lock's section nb is for NVIDIA"
    )


@pytest.mark.parametrize(
    ("name", "wanted"),
    [
        ("mi300x", {"74a1", "74b5"}),
        ("mi325x", {"74a5"}),
        ("mi250x", {"7408", "740c"}),
        ("mi250", {"740c"}),
        ("mi210", {"740f"}),
        ("mi100", {"738c"}),
        ("mi355x", {"75a3"}),
    ],
)
def test_the_amd_gpus_map_to_the_device_ids_the_labeller_writes(name: str, wanted: set[str]) -> None:
    (entry,) = [entry for entry in shipped_gpu_products() if entry.name == name]
    assert entry.vendor == "amd" and set(entry.products) >= wanted


def _job(**changes: Any) -> KubernetesJob:
    job = KubernetesJob(IMAGE, "# lock\n", "Team Targets!", JobSettings(), Accelerator.NVIDIA)
    return dataclasses.replace(job, **changes)


def test_the_nodes_architecture_is_the_locks_platform() -> None:
    """With a GPU type too: the ``nodeSelector`` and the affinity both hold (Kubernetes ANDs them)."""
    manifest = job_manifest(_job(platform="linux_aarch64", products=("NVIDIA-GH200-480GB",)))
    validate(manifest)
    pod = manifest["spec"]["template"]["spec"]  # type: ignore[index]
    assert pod["nodeSelector"] == {"kubernetes.io/arch": "arm64"}
    assert "affinity" in pod
    job, _ = requested_job(_request(platform="linux_aarch64"), shipped_gpu_products())
    assert job.platform == "linux_aarch64"
    assert job_manifest(_job())["spec"]["template"]["spec"]["nodeSelector"] == {  # type: ignore[index]
        "kubernetes.io/arch": "amd64"
    }
    with pytest.raises(UsageError, match="the lock's platform 'linux_armv7l' is not one a Job is"):
        job_manifest(_job(platform="linux_armv7l"))


def test_the_engine_refuses_what_a_job_cannot_carry() -> None:
    validate(job_manifest(_job()))
    assert job_manifest(_job())["metadata"] == {
        "name": "team-targets",
        "labels": {"app.kubernetes.io/managed-by": "colabenv"},
    }
    with pytest.raises(
        UsageError, match="for NVIDIA or AMD GPUs or the CPU; this target's accelerator is tpu"
    ):
        job_manifest(_job(accelerator=Accelerator.TPU))
    with pytest.raises(UsageError, match="more than the 240 KiB a pod's annotation can carry"):
        job_manifest(_job(lock_text="x" * (MAX_LOCK_BYTES + 1)))
    assert job_name("--") == "colabenv-job"
    assert len(job_name("a" * 100)) == 52
    with pytest.raises(UsageError, match="control character"):
        check_command(["echo", "a\tb"])


@pytest.mark.parametrize(
    ("name", "wanted"),
    [
        ("l4", {"NVIDIA-L4"}),
        ("a10g", {"NVIDIA-A10G"}),
        ("a10", {"NVIDIA-A10"}),
        ("l40s", {"NVIDIA-L40S"}),
        ("v100", {"Tesla-V100-SXM2-16GB", "Tesla-V100-SXM2-32GB", "Tesla-V100-PCIE-16GB"}),
        ("p100", {"Tesla-P100-PCIE-16GB"}),
        ("h200", {"NVIDIA-H200"}),
        ("b200", {"NVIDIA-B200"}),
        ("h100", {"NVIDIA-H100-80GB-HBM3", "NVIDIA-H100-PCIe", "NVIDIA-H100-NVL"}),
        ("a100", {"NVIDIA-A100-SXM4-80GB", "NVIDIA-A100-80GB-PCIe"}),
    ],
)
def test_the_gpus_teams_get_map_to_the_label_gfd_writes(name: str, wanted: set[str]) -> None:
    """NVML's device name with spaces as '-' (each value's source is in its entry)."""
    assert set(products_of(shipped_gpu_products(), name.upper(), "--gpu-type", Accelerator.NVIDIA)) >= wanted


def test_every_gpu_type_has_a_source_and_label_values_gfd_writes() -> None:
    types = shipped_gpu_products()
    assert {entry.name for entry in types} >= {"t4", "a100", "h100", "l4", "a10g", "v100", "h200", "b200"}
    for entry in types:
        assert "https://" in entry.source, entry.name
        for product in entry.products:
            # GFD writes NVML's name with spaces as '-': never a space, never -SHARED or -MIG-
            assert " " not in product and "SHARED" not in product and "-MIG-" not in product


@pytest.mark.parametrize(
    ("old", "new", "problem"),
    [
        ('products = ["Tesla-T4"]', 'products = ["Tesla T4"]', "gpu[0].products[0]: expected a label value"),
        ('products = ["Tesla-T4"]', "products = []", "gpu[0].products: expected at least one"),
        ('type = "a100"', 'type = "t4"', "gpu[1]: type t4 is listed twice"),
        ('type = "t4"', 'type = "T4"', "gpu[0].type: expected lowercase letters"),
        ('device_ids = ["74a1"', 'device_ids = ["74A1"', ".device_ids[0]: expected a PCI device ID"),
        (
            'device_ids = ["74a1"',
            'products = ["x"]\ndevice_ids = ["74a1"',
            ": expected products or device_ids, not both",
        ),
    ],
)
def test_a_broken_table_is_refused_naming_the_key(old: str, new: str, problem: str) -> None:
    from colabenv._util.resources import catalog_dir

    text = (catalog_dir() / "gpu_products.toml").read_text()
    assert old in text
    with pytest.raises(CatalogError) as caught:
        load_gpu_products(Path("gpu_products.toml"), text.replace(old, new, 1).encode())
    assert problem in str(caught.value)

"""A Kubernetes ``batch/v1`` Job that runs a command in the image ``render --format
dockerfile`` built from a lock, after ``colabenv verify`` of that lock on the node. No I/O.

What the Job is, and why:

- **Both containers run the image** (its reference from ``--image``): first an init container,
  ``colabenv verify --lock`` of the lock's section the image was built from, then the user's
  command (``--`` onwards; none: the image's ``CMD``). A node whose GPU, driver or installed
  wheels do not pass verify fails the Job before the command starts; ``backoffLimit: 0`` and
  ``restartPolicy: Never`` keep a failing verify from being retried on the same bad node.
- **The lock travels in the manifest**: the section's text is an annotation of the pod
  template (``colabenv/lock``), which a ``downwardAPI`` volume writes as a file for the init
  container (read-only). The Job is then one object, with no ConfigMap to create beside it.
  Kubernetes allows a pod 256 KiB of annotations: a longer lock is refused.
- **Resources**: ``nvidia.com/gpu`` (the NVIDIA device plugin's resource; ``amd.com/gpu``,
  AMD's, on a ROCm target) in ``limits`` from the job's ``gpus`` (1 when unset, on a GPU
  target; none on the CPU); ``memory`` and ``cpu``
  as both requests and limits; the init container asks the same, so that it verifies the GPUs
  the command gets (a pod's request is the larger of its init containers' and the sum of its
  containers', so nothing is asked twice). ``time`` is ``activeDeadlineSeconds``.
- **The GPU type**: GPU Feature Discovery labels each node ``nvidia.com/gpu.product`` (NVML's
  device name, spaces as ``-``); the job's ``gpu_type`` is mapped through
  ``gpu_products.toml`` to the values of that label for the type, and a node affinity requires
  one of them (several: an A100 is ``NVIDIA-A100-SXM4-40GB`` or ``NVIDIA-A100-SXM4-80GB`` ...,
  which a single ``nodeSelector`` value cannot say). On a ROCm target the table's AMD types map
  to the PCI device IDs AMD's node labeller (ROCm/k8s-device-plugin) writes in
  ``amd.com/gpu.device-id``. A TPU target is refused.
- **The CPU architecture**: a ``nodeSelector`` on ``kubernetes.io/arch`` (the kubelet's
  well-known label, Go's ``GOARCH``: ``amd64``, ``arm64``;
  https://kubernetes.io/docs/reference/labels-annotations-taints/#kubernetes-io-arch) from the
  lock section's platform, on every Job, x86-64 ones too: the image's wheels are one
  platform's, and a mixed cluster would otherwise start the pod on a node of the other
  (``exec format error``). Both it and the GPU type's affinity must hold.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from colabenv.accelerators.base import ClusterGpus
from colabenv.accelerators.registry import accelerator as accelerator_kind
from colabenv.catalog.gpu_products import AMD, GpuType, gpu_type, known_types
from colabenv.errors import UsageError, shown
from colabenv.models import Accelerator, JobSettings
from colabenv.models.frozen import model
from colabenv.models.job import command_problem as job_command_problem
from colabenv.script.container import is_image_reference

LOCK_ANNOTATION = "colabenv/lock"
LOCK_DIR = "/etc/colabenv"
LOCK_FILE = "colabenv.lock"
MAX_LOCK_BYTES = 240 * 1024
"""The most lock text the pod's annotation carries: Kubernetes allows 256 KiB of annotations
in all (``TotalAnnotationSizeLimitB``), and the rest is left to what the cluster adds."""
ARCH_LABEL = "kubernetes.io/arch"
NODE_ARCH = {"linux_x86_64": "amd64", "linux_aarch64": "arm64"}
"""A lock's platform as the kubelet's ``kubernetes.io/arch`` value (Go's ``GOARCH``)."""
MAX_NAME = 52
"""A Job's name is a label value on its pods (at most 63) beside a suffix the controller adds."""


@model
class KubernetesJob:
    """What the Job is made of: the image, the lock section's text, the profile's name (the
    Job's), the job settings (flags over the profile's ``[job]``), the target's accelerator,
    the products the GPU type maps to (empty: any node with the GPUs), the command, the lock
    section's platform (the nodes' architecture)."""

    image: str
    lock_text: str
    profile_name: str
    settings: JobSettings
    accelerator: Accelerator
    products: tuple[str, ...] = ()
    command: tuple[str, ...] = ()
    platform: str = "linux_x86_64"


@model
class JobRequest:
    """What ``render --format kubernetes`` was given, before anything is decided: the image,
    the lock section's text, its name and the lock's (None: a lock of one section), the
    profile's name, where it is (for a message) and its ``[job]``, the job flags (None where
    not given), the section's accelerator, the command after ``--``, the section's platform."""

    image: str
    lock_text: str
    lock_section: str | None
    lock_name: str
    profile_name: str
    profile_where: str
    profile_job: JobSettings
    flags: JobSettings
    accelerator: Accelerator
    command: tuple[str, ...] = ()
    platform: str = "linux_x86_64"


def requested_job(request: JobRequest, types: Sequence[GpuType]) -> tuple[KubernetesJob, tuple[str, ...]]:
    """The Job a request makes (the flags over the profile's ``[job]``; the GPU type mapped
    through ``types``, the ``gpu_products.toml`` table) and the notes to show beside it. On a
    CPU section the GPU flags are refused and the profile's GPU keys left aside; a GPU type the
    table lacks is refused naming where it was given."""
    flags = request.flags
    settings = flags.over(request.profile_job)
    section = f"{request.lock_section} " if request.lock_section is not None else ""
    products: tuple[str, ...] = ()
    gpus = cluster_gpus(request.accelerator)
    if gpus is None:
        given = [flag for flag, value in (("--gpus", flags.gpus), ("--gpu-type", flags.gpu_type)) if value]
        if given:
            raise UsageError(f"{', '.join(given)}: the lock's section {section}is for the CPU")
    else:
        where = "--gpu-type" if flags.gpu_type is not None else f"{request.profile_where}: job.gpu_type"
        products = products_of(types, settings.gpu_type, where, request.accelerator, section)
    notes: list[str] = []
    if request.lock_section is not None:
        notes.append(f"the image holds section {request.lock_section} of {request.lock_name}")
    if gpus is not None and not products:
        named = accelerator_kind(request.accelerator).traits.named
        notes.append(f"no GPU type ([job] gpu_type or --gpu-type): the Job takes any node with {named}")
    job = KubernetesJob(
        image=request.image,
        lock_text=request.lock_text,
        profile_name=request.profile_name,
        settings=settings,
        accelerator=request.accelerator,
        products=products,
        command=request.command,
        platform=request.platform,
    )
    return job, tuple(notes)


def check_image(image: str | None) -> str:
    """``--image``: the reference of the image ``--format dockerfile`` built; required."""
    if image is None:
        raise UsageError(
            "--format kubernetes needs --image REF: the reference of the image built from "
            "render --format dockerfile with the same lock"
        )
    if not is_image_reference(image):
        raise UsageError(
            f"--image: {shown(image)} is not an image reference "
            "([registry/]name[:tag][@sha256:digest], at most 512 characters)"
        )
    return image


def check_command(command: Sequence[str]) -> tuple[str, ...]:
    """The command after ``--``, each word one line of printable text (a container's
    ``command`` is a list of words; a line break in one would be a second command to a shell
    that reads it): :func:`~colabenv.models.job.command_problem`'s rule."""
    problem = job_command_problem(command)
    if problem is not None:
        raise UsageError(problem)
    return tuple(command)


def cluster_gpus(kind: Accelerator) -> ClusterGpus | None:
    """How a cluster schedules the GPUs of a target of ``kind`` (None: the CPU, no GPUs to ask
    for); a kind no Job is written for (a TPU) is a UsageError."""
    traits = accelerator_kind(kind).traits
    if not traits.kubernetes_job:
        raise UsageError(
            f"--format kubernetes writes jobs for NVIDIA or AMD GPUs or the CPU; this target's "
            f"accelerator is {kind.value} (a TPU's Job is not written: see docs/scaling-out.md)"
        )
    return traits.cluster_gpus


def products_of(
    types: Sequence[GpuType],
    name: str | None,
    where: str,
    kind: Accelerator,
    section: str = "",
) -> tuple[str, ...]:
    """The node label values of GPU type ``name`` (None: any) for the GPUs of ``kind`` (the
    lock's section ``section``, with a space after it); a type the table lacks, or a type of the
    other vendor's GPUs, is a UsageError naming ``where`` it was given and the types the table
    has for the kind's GPUs."""
    if name is None:
        return ()
    gpus = cluster_gpus(kind)
    assert gpus is not None, "a kind with GPUs a cluster schedules"
    vendor, gpus_named = gpus.vendor, accelerator_kind(kind).traits.named
    entry = gpu_type(types, name)
    if entry is None:
        raise UsageError(
            f"{where} {shown(name)}: not a GPU type of gpu_products.toml, which knows "
            f"{known_types(types, vendor)}"
        )
    if entry.vendor != vendor:
        other = "an AMD GPU" if entry.vendor == AMD else "an NVIDIA GPU"
        raise UsageError(
            f"{where} {shown(name)}: {other}, and the lock's section {section}is for {gpus_named}, whose "
            f"types are {known_types(types, vendor)}"
        )
    return entry.products


def job_name(profile_name: str) -> str:
    """The profile's name as a Job's name (a DNS label: lowercase letters, digits, '-')."""
    name = re.sub(r"[^a-z0-9-]+", "-", profile_name.lower()).strip("-")[:MAX_NAME].rstrip("-")
    return name or "colabenv-job"


def job_manifest(job: KubernetesJob) -> dict[str, object]:
    """The Job, as the JSON-shaped value ``kubectl apply`` reads."""
    gpus = cluster_gpus(job.accelerator)
    size = len(job.lock_text.encode("utf-8"))
    if size > MAX_LOCK_BYTES:
        raise UsageError(
            f"the lock's section is {size // 1024} KiB, more than the {MAX_LOCK_BYTES // 1024} KiB "
            "a pod's annotation can carry (Kubernetes allows 256 KiB in all)"
        )
    resources = _resources(job, gpus)
    volume = "colabenv-lock"
    verify: dict[str, object] = {
        "name": "verify",
        "image": job.image,
        "command": ["colabenv", "verify", "--lock", f"{LOCK_DIR}/{LOCK_FILE}"],
        "volumeMounts": [{"name": volume, "mountPath": LOCK_DIR, "readOnly": True}],
    }
    main: dict[str, object] = {"name": "job", "image": job.image}
    if job.command:
        main["command"] = list(job.command)
    if resources:
        verify["resources"] = resources
        main["resources"] = resources
    pod: dict[str, object] = {"restartPolicy": "Never", "nodeSelector": {ARCH_LABEL: node_arch(job.platform)}}
    if job.products and gpus is not None:
        pod["affinity"] = _affinity(gpus.node_label, job.products)
    pod["volumes"] = [
        {
            "name": volume,
            "downwardAPI": {
                "items": [
                    {
                        "path": LOCK_FILE,
                        "fieldRef": {"fieldPath": f"metadata.annotations['{LOCK_ANNOTATION}']"},
                    }
                ]
            },
        }
    ]
    pod["initContainers"] = [verify]
    pod["containers"] = [main]
    name = job_name(job.profile_name)
    spec: dict[str, object] = {"backoffLimit": 0}
    if job.settings.time_s is not None:
        spec["activeDeadlineSeconds"] = job.settings.time_s
    spec["template"] = {"metadata": {"annotations": {LOCK_ANNOTATION: job.lock_text}}, "spec": pod}
    return {
        "apiVersion": "batch/v1",
        "kind": "Job",
        "metadata": {"name": name, "labels": {"app.kubernetes.io/managed-by": "colabenv"}},
        "spec": spec,
    }


def node_arch(platform: str) -> str:
    """The ``kubernetes.io/arch`` value of nodes that run a lock for ``platform``."""
    arch = NODE_ARCH.get(platform)
    if arch is None:
        raise UsageError(
            f"--format kubernetes: the lock's platform {shown(platform)} is not one a Job is "
            f"written for ({', '.join(NODE_ARCH)})"
        )
    return arch


def _resources(job: KubernetesJob, gpus: ClusterGpus | None) -> dict[str, object]:
    """Requests and limits: memory and CPUs both; the GPUs in limits alone (an extended
    resource's request is its limit)."""
    asked: dict[str, str] = {}
    if job.settings.memory_mib is not None:
        asked["memory"] = f"{job.settings.memory_mib}Mi"
    if job.settings.cpus is not None:
        asked["cpu"] = str(job.settings.cpus)
    limits = dict(asked)
    if gpus is not None:
        limits[gpus.resource] = str(job.settings.gpus if job.settings.gpus is not None else 1)
    resources: dict[str, object] = {}
    if asked:
        resources["requests"] = asked
    if limits:
        resources["limits"] = limits
    return resources


def _affinity(label: str, values: Sequence[str]) -> dict[str, object]:
    term = {"matchExpressions": [{"key": label, "operator": "In", "values": list(values)}]}
    return {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": [term]}}}

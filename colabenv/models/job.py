"""What a batch job asks of a cluster: the profile's ``[job]`` table, with the flags of
``render --format slurm|kubernetes`` over it."""

from __future__ import annotations

import unicodedata
from collections.abc import Sequence

from colabenv.errors import printable
from colabenv.models.frozen import model


@model
class JobSettings:
    """The resources a job asks for; None where neither the profile nor a flag says.

    ``gpus``: GPUs per node (Slurm ``--gres=gpu:N``, Kubernetes ``nvidia.com/gpu``);
    ``gpu_type``: the GPU's type as the cluster names it (Slurm's gres type such as ``a100``;
    Kubernetes maps it to GPU Feature Discovery's product label); ``time_s``: the wall-clock
    limit in seconds; ``memory_mib``: host memory; ``cpus``: CPU cores per task;
    ``partition``: the Slurm partition.
    """

    gpus: int | None = None
    gpu_type: str | None = None
    time_s: int | None = None
    memory_mib: int | None = None
    cpus: int | None = None
    partition: str | None = None

    def over(self, base: JobSettings) -> JobSettings:
        """These settings, each one that is None taken from ``base`` (flags over the profile)."""
        return JobSettings(
            gpus=base.gpus if self.gpus is None else self.gpus,
            gpu_type=base.gpu_type if self.gpu_type is None else self.gpu_type,
            time_s=base.time_s if self.time_s is None else self.time_s,
            memory_mib=base.memory_mib if self.memory_mib is None else self.memory_mib,
            cpus=base.cpus if self.cpus is None else self.cpus,
            partition=base.partition if self.partition is None else self.partition,
        )


def command_problem(words: Sequence[str]) -> str | None:
    """Why ``words``, the command after ``render``'s ``--``, cannot be a job's command (None: it
    can): a word with a line break or another control character, which a batch script's line or
    a container's ``command`` list would carry to a shell as more than one word. The one rule
    of every engine that runs a command."""
    for word in words:
        if any(unicodedata.category(char) == "Cc" for char in word):
            return (
                f"the command after -- has a word with a line break or a control character "
                f"('{printable(word[:80])}'): give each word on one line"
            )
    return None

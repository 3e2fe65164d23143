"""What ``colabenv doctor`` finds: each :class:`Finding` with its evidence and its remedy."""

from __future__ import annotations

from colabenv.models.frozen import model


@model
class Evidence:
    """A sample, a log line or an error text a finding rests on, with its time where it has one."""

    text: str
    time: float | None = None
    """Seconds since the epoch; None for what has no time (an import's error text)."""

    def to_json(self) -> dict[str, object]:
        return {"time": self.time, "text": self.text}


@model
class Finding:
    """One thing that went wrong, the most likely cause first among a report's findings.

    ``kind`` is one word of docs/doctor.md (``oom-kill``, ``gpu-leftover``, ``import-failure``,
    ...); ``cause`` refines it where the kind has causes (an import failure's
    ``undefined-symbol``, ``numpy-abi``, ...).
    """

    kind: str
    summary: str
    evidence: tuple[Evidence, ...]
    remedy: str
    pid: int | None = None
    path: str | None = None
    module: str | None = None
    cause: str | None = None
    time: float | None = None
    """When it happened, where known (an OOM kill's log line, the sample where a disk was full)."""
    elsewhere: bool = False
    """Something on this host that nothing ties to this runtime (another memory cgroup's OOM
    kill in the kernel log): listed after every finding of this runtime, under "elsewhere on
    this host"."""

    def to_json(self) -> dict[str, object]:
        shown: dict[str, object] = {
            "kind": self.kind,
            "summary": self.summary,
            "evidence": [item.to_json() for item in self.evidence],
            "remedy": self.remedy,
        }
        for name in ("pid", "path", "module", "cause", "time"):
            value = getattr(self, name)
            if value is not None:
                shown[name] = value
        if self.elsewhere:
            shown["elsewhere"] = True
        return shown

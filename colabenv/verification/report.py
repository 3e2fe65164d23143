"""The report: one :class:`Check` per row, PASS, WARN, FAIL or SKIP with a one-line detail."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from colabenv.errors import printable
from colabenv.models.base import TextEnum
from colabenv.models.frozen import model


class Status(TextEnum):
    PASS = "PASS"
    WARN = "WARN"
    FAIL = "FAIL"
    SKIP = "SKIP"


@model
class Check:
    """One row of the report; ``detail`` is always a single line."""

    name: str
    status: Status
    detail: str

    def __post_init__(self) -> None:
        object.__setattr__(self, "detail", " ".join(self.detail.split()))

    def to_json(self) -> dict[str, str]:
        return {"name": self.name, "status": self.status.value, "detail": self.detail}


@model
class VerifyReport:
    checks: tuple[Check, ...]
    expected_from: str = ""

    @property
    def ok(self) -> bool:
        return all(check.status is not Status.FAIL for check in self.checks)

    def check(self, name: str) -> Check | None:
        return next((c for c in self.checks if c.name == name), None)

    def to_json(self) -> dict[str, object]:
        return {"ok": self.ok, "checks": [check.to_json() for check in self.checks]}

    def _repr_pretty_(self, printer: Any, cycle: bool) -> None:
        """IPython shows the report as its table when a cell ends with ``colabenv.verify()``."""
        printer.text(str(self))

    @property
    def failed(self) -> tuple[str, ...]:
        return tuple(c.name for c in self.checks if c.status is Status.FAIL)

    @property
    def summary(self) -> str:
        failed = self.failed
        return "all checks passed" if not failed else f"{len(failed)} check(s) failed: " + (", ".join(failed))

    def __str__(self) -> str:
        """Plain lines, one per check at full width (``PASS  smoke:torch  detail``), for a pipe
        or a log; control characters in a detail are shown escaped."""
        width = max((len(c.name) for c in self.checks), default=5)
        lines = [f"{c.status.value:<4}  {c.name:<{width}}  {printable(c.detail)}" for c in self.checks]
        if self.expected_from:
            lines.insert(0, f"colabenv verify: expected from {printable(self.expected_from)}")
        lines.append(self.summary)
        return "\n".join(lines)


def join_limited(items: Sequence[str], limit: int = 3) -> str:
    shown = "; ".join(items[:limit])
    return shown + (f"; and {len(items) - limit} more" if len(items) > limit else "")

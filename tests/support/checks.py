"""``expect``: what a verify report must show, said once and reported whole.

A report is either the JSON of ``colabenv verify --json`` (``{"ok": ..., "checks": [{"name",
"status", "detail"}, ...]}``) or a :class:`colabenv.verification.report.VerifyReport`. What is
expected of a check, by its name:

- ``"PASS"`` (or ``Status.PASS``): exactly that status;
- a set of statuses (``{"PASS", "WARN"}``, or ``ANY``): one of them;
- a tuple, a status (or set) then words: that status, and each word in the check's detail;
- ``None``: no check of that name.

``only=True`` also refuses a check the expectation does not name. A mismatch fails once, naming
every check that differs (expected, got, detail) above the whole report.
"""

from __future__ import annotations

from collections.abc import Mapping, Set
from typing import Any

from colabenv.verification.report import Status, VerifyReport

Statuses = str | Status | Set[str | Status]
Expected = Statuses | tuple[Any, ...] | None

ANY: frozenset[str] = frozenset(status.value for status in Status)
"""Any status: the check is there, whatever it says."""


def rows(report: Mapping[str, Any] | VerifyReport) -> dict[str, tuple[str, str]]:
    """Each check's ``(status, detail)`` by name, in the report's order."""
    if isinstance(report, VerifyReport):
        found = {}
        for check in report.checks:
            assert isinstance(check.status, Status), check
            found[check.name] = (check.status.value, check.detail)
        return found
    checks = report["checks"]
    assert isinstance(checks, list), report
    return {check["name"]: (check["status"], check["detail"]) for check in checks}


def statuses(report: Mapping[str, Any] | VerifyReport) -> dict[str, str]:
    return {name: status for name, (status, _) in rows(report).items()}


def details(report: Mapping[str, Any] | VerifyReport) -> dict[str, str]:
    return {name: detail for name, (_, detail) in rows(report).items()}


def _statuses(wanted: Statuses) -> frozenset[str]:
    if isinstance(wanted, (str, Status)):
        return frozenset({Status(wanted).value})
    return frozenset(Status(one).value for one in wanted)


def _describe(wanted: Expected) -> str:
    if wanted is None:
        return "no such check"
    words: tuple[Any, ...] = ()
    if isinstance(wanted, tuple):
        wanted, *rest = wanted
        words = tuple(rest)
    allowed = sorted(_statuses(wanted))
    text = allowed[0] if len(allowed) == 1 else "one of " + "/".join(allowed)
    return text + "".join(f" with {word!r} in its detail" for word in words)


def _matches(wanted: Expected, row: tuple[str, str] | None) -> bool:
    if wanted is None or row is None:
        return wanted is None and row is None
    words: tuple[Any, ...] = ()
    if isinstance(wanted, tuple):
        assert len(wanted) >= 2, f"{wanted!r}: a status, then the words its detail must hold"
        wanted, *rest = wanted
        words = tuple(rest)
    status, detail = row
    return status in _statuses(wanted) and all(word in detail for word in words)


def expect(
    report: Mapping[str, Any] | VerifyReport,
    expected: Mapping[str, Expected] | None = None,
    /,
    *,
    only: bool = False,
    **by_name: Expected,
) -> None:
    """Fail, naming every check that differs, unless ``report`` shows what is expected: the
    ``expected`` mapping and the keyword arguments together (``expect(report, versions="PASS",
    **{"smoke:torch": "PASS"})`` or ``expect(report, {"io:/x": ("FAIL", "below 200")})``)."""
    wanted: dict[str, Expected] = {**(expected or {}), **by_name}
    assert wanted or only, "expect() needs at least one check to compare"
    found = rows(report)
    differences = []
    for name, want in wanted.items():
        row = found.get(name)
        if not _matches(want, row):
            got = "no such check" if row is None else f"{row[0]}: {row[1]}"
            differences.append(f"  {name}: expected {_describe(want)}, got {got}")
    if only:
        for name, (status, detail) in found.items():
            if name not in wanted:
                differences.append(f"  {name}: expected no such check, got {status}: {detail}")
    if differences:
        shown = "\n".join(f"  {status:<4}  {name}  {detail}" for name, (status, detail) in found.items())
        raise AssertionError(
            f"{len(differences)} check(s) of the verify report differ from what was expected:\n"
            + "\n".join(differences)
            + f"\nthe report:\n{shown or '  (no checks)'}"
        )

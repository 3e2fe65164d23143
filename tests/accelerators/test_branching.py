"""Branching on the kind of accelerator stays inside ``colabenv.accelerators`` (issue 33).

A branch site is a place outside the package that asks which kind a target is: a name of
``Accelerator``'s members (``Accelerator.TPU``), a comparison of a ``.tpu`` against None, a
read of ``.has_gpu``, a comparison with an ``.accelerator``, or an ``isinstance`` test against a
device class. The goal is at most six (one per kind, each device value naming its kind in
``models/target.py``, and two more: the runtime table's image keys, the recorder's NVML samples;
detection asks the kinds); the ceiling below is today's count and only goes down (lower it in
the change that moves a site into the package; a new kind's device adds one).
"""

from __future__ import annotations

import ast
from collections import Counter
from pathlib import Path

import colabenv

PACKAGE = Path(colabenv.__file__).resolve().parent
INSIDE = ("accelerators", "_target")
"""The accelerator package, and the programs run on the target (stdlib-only, by their path)."""
DEVICE_CLASSES = {"NvidiaTarget", "RocmTarget", "TpuTarget", "CpuTarget"}
GOAL = 6
CEILING = 6
"""The count once the resolver asked the kind (the review of issue 33 counted 65 before, with a
narrower rule); it only goes down."""


def _attribute(node: ast.AST, name: str) -> bool:
    return isinstance(node, ast.Attribute) and node.attr == name


def _is_site(node: ast.AST) -> bool:
    """Whether ``node`` asks which kind of accelerator something is."""
    if isinstance(node, ast.Attribute):
        member = isinstance(node.value, ast.Name) and node.value.id == "Accelerator" and node.attr.isupper()
        return member or node.attr == "has_gpu"
    if isinstance(node, ast.Compare):
        sides = [node.left, *node.comparators]
        nones = any(isinstance(s, ast.Constant) and s.value is None for s in sides)
        tpu = nones and any(_attribute(s, "tpu") for s in sides)
        return tpu or any(_attribute(s, "accelerator") for s in sides)
    if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == "isinstance":
        named = {n.id for n in ast.walk(node.args[-1]) if isinstance(n, ast.Name)}
        return bool(named & DEVICE_CLASSES)
    return False


def _sites(tree: ast.AST) -> list[int]:
    return sorted({node.lineno for node in ast.walk(tree) if isinstance(node, ast.expr) and _is_site(node)})


def branch_sites(package: Path = PACKAGE) -> Counter[str]:
    """Each module outside the accelerator package with its count of branch sites."""
    found: Counter[str] = Counter()
    for path in sorted(package.rglob("*.py")):
        relative = path.relative_to(package)
        if relative.parts[0] in INSIDE:
            continue
        count = len(_sites(ast.parse(path.read_text(encoding="utf-8"))))
        if count:
            found[str(relative)] = count
    return found


def test_branching_on_the_accelerator_stays_under_its_ceiling() -> None:
    sites = branch_sites()
    total = sum(sites.values())
    assert total <= CEILING, f"{total} branch sites outside colabenv/accelerators: {sites.most_common()}"


def test_the_resolver_asks_the_kind_and_never_which_kind() -> None:
    sites = branch_sites()
    assert not {"resolve/resolver.py", "resolve/explain.py"} & set(sites), sites


def test_detection_asks_the_kinds_and_never_which_kind() -> None:
    sites = branch_sites()
    assert not [module for module in sites if module.startswith("host/")], sites


def test_the_site_count_sees_each_form(tmp_path: Path) -> None:
    (tmp_path / "m.py").write_text(
        "if target.accelerator == Accelerator.TPU:\n    pass\n"
        "if target.tpu is None:\n    pass\n"
        "x = target.has_gpu\n"
        "y = isinstance(device, (NvidiaTarget, CpuTarget))\n"
        "z = target.tpu.generation\n"
    )
    assert branch_sites(tmp_path) == Counter({"m.py": 4})

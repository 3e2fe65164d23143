"""Names that say what a thing is (issue 15): a loader called a loader, a bug never dressed as
bad input."""

from __future__ import annotations

import pytest
from packaging.version import Version

from colabenv.catalog.load import shipped_catalog
from colabenv.errors import ColabenvError
from colabenv.host.detect import detect
from colabenv.lock.resolvers import IndexPlan, run_resolver
from colabenv.models import Catalog, CpuTarget, Target
from tests.host.test_detect import make_probe, overrides


def test_detect_takes_a_catalog_loader_and_calls_it_for_the_driver_table() -> None:
    calls: list[str] = []

    def loader() -> Catalog:
        calls.append("loaded")
        return shipped_catalog(())

    fingerprint = detect(overrides(driver="550.54.15"), probe=make_probe(), catalog_loader=loader)
    assert fingerprint.target.cuda == Version("12.4")
    assert calls, "the driver's CUDA comes from the loader's driver table"


def test_an_unknown_resolver_is_a_bug_not_bad_input() -> None:
    """The command line offers only the known resolvers: any other reaching the resolver run is
    a caller's bug, which must not be reported as the user's mistake (exit 2)."""
    target = Target(CpuTarget(), Version("3.11"), platform="linux_x86_64")
    with pytest.raises(ValueError, match="unknown resolver 'poetry'") as info:
        run_resolver("poetry", ["numpy"], IndexPlan(None, ()), target, {}, str)
    assert not isinstance(info.value, ColabenvError)

"""The ``cuda:<framework>`` check: the CUDA a framework was built for against the driver, and its
kernels against the GPUs' compute capabilities."""

from __future__ import annotations

from packaging.version import Version

from colabenv.accelerators.registry import accelerator_of
from colabenv.host.framework_builds import FrameworkBuild, catalog_variant
from colabenv.models import Catalog, Framework, Target, archs_cover, format_driver
from colabenv.verification.report import Check, Status


def _driver_cuda(target: Target, catalog: Catalog) -> Version | None:
    if target.cuda is not None:
        return target.cuda
    return catalog.max_cuda_for_driver(target.driver) if target.driver is not None else None


def check_cuda(
    framework: Framework,
    build: FrameworkBuild | None,
    target: Target,
    catalog: Catalog,
    *,
    require_gpu: bool,
) -> Check:
    name = f"cuda:{framework.value}"
    if build is None:
        return Check(name, Status.FAIL, f"{framework.value} is not installed")
    built = f"{build.label} built for CUDA {build.cuda}" if build.cuda else f"{build.label} (CPU)"
    if not accelerator_of(target).verify_checks.cuda:
        if require_gpu:
            return Check(name, Status.FAIL, f"the profile requires a GPU and none was found; {built}")
        return Check(name, Status.SKIP, f"no GPU on this host; {built}")
    if build.cpu_only:
        status = Status.FAIL if require_gpu else Status.WARN
        return Check(name, status, f"{build.label} has no CUDA support ({build.evidence}) on a GPU host")
    assert build.cuda is not None
    driver = format_driver(target.driver) if target.driver is not None else "unknown"
    host_cuda = _driver_cuda(target, catalog)
    problems: list[str] = []
    warnings: list[str] = []
    notes: list[str] = []
    floor = catalog.floor_driver(build.cuda)
    if target.driver is not None and floor is not None and target.driver < floor:
        problems.append(
            f"CUDA {build.cuda.major} builds need driver >= {format_driver(floor)}, this driver is {driver}"
        )
    elif host_cuda is not None and build.cuda.major > host_cuda.major:
        problems.append(f"built for CUDA {build.cuda}, the driver ({driver}) supports up to CUDA {host_cuda}")
    elif host_cuda is not None and build.cuda > host_cuda:
        warnings.append(
            f"built for CUDA {build.cuda}, newer than the driver's {host_cuda}: runs "
            "by minor-version compatibility, PTX JIT may fail"
        )
    _, archs = catalog_variant(catalog, framework, build.version, build.variant, platform=target.platform)
    caps = target.compute_capabilities
    if archs:
        missing = [cap.sm for cap in caps if not archs_cover(archs, cap)]
        if missing:
            listed = " ".join(str(a) for a in archs)
            problems.append(f"no kernels for {', '.join(missing)} in its arch list ({listed})")
        elif caps:
            notes.append(f"kernels for {', '.join(c.sm for c in caps)}")
    elif caps:
        notes.append("arch list not in the catalog, left to the smoke test")
    if problems:
        return Check(name, Status.FAIL, f"{build.label}: " + "; ".join(problems))
    if warnings:
        return Check(name, Status.WARN, f"{build.label}: " + "; ".join(warnings + notes))
    fits = f"{built} ({build.evidence}), driver {driver} (CUDA {host_cuda or '?'})"
    return Check(name, Status.PASS, "; ".join([fits, *notes]))

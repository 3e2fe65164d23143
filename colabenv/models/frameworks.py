"""What colabenv knows of each framework by name, in one place.

Every module that asks "which distributions are torch?", "which companions does jax need?",
"which plugin says which CUDA build jax is?" or "in which order are frameworks listed?" reads
:data:`FACTS`; nothing else spells these names. Versions and builds are catalog data
(``profiles/catalog/``); this is only the naming that no catalog release changes.
"""

from __future__ import annotations

from collections.abc import Iterable

from packaging.utils import NormalizedName, canonicalize_name
from packaging.version import Version

from colabenv.models import Framework
from colabenv.models.frozen import model


@model
class FrameworkFacts:
    """One framework's names.

    ``dists``: the distributions that are the framework itself, the first the usual one
    (``tensorflow-cpu`` is TensorFlow too). ``companions``: released in lockstep, pinned with it
    (``required`` ones always, the others when asked or already present). ``plugins``: a
    distribution whose presence says which variant is installed. ``related``: distributions
    shown beside the framework by ``detect`` (``tf-keras``, the PJRT plugins) but not chosen by
    colabenv. ``owned``: distribution -> the profile key that chooses it; a plain requirement on
    one of these would bypass the per-GPU choice. ``cpu_dists``: the ones of ``dists`` that are
    the CPU build by their name alone.
    """

    framework: Framework
    dists: tuple[NormalizedName, ...]
    companions: tuple[NormalizedName, ...]
    required_companions: tuple[NormalizedName, ...]
    plugins: tuple[tuple[NormalizedName, str], ...]
    related: tuple[NormalizedName, ...]
    owned: tuple[tuple[NormalizedName, str], ...]
    cpu_dists: tuple[NormalizedName, ...] = ()
    tpu_runtime: tuple[NormalizedName, ...] = ()
    """Distributions whose presence makes an install the framework's TPU build (libtpu for
    jax, torch_xla for torch); their versions are catalog data (``tpu.toml``)."""

    @property
    def all_names(self) -> frozenset[NormalizedName]:
        plugin_names = (name for name, _ in self.plugins)
        return frozenset((*self.dists, *self.companions, *plugin_names, *self.related, *self.tpu_runtime))


def _names(*names: str) -> tuple[NormalizedName, ...]:
    return tuple(canonicalize_name(name) for name in names)


FACTS: dict[Framework, FrameworkFacts] = {
    Framework.TORCH: FrameworkFacts(
        framework=Framework.TORCH,
        dists=_names("torch"),
        companions=_names("torchvision", "torchaudio"),
        required_companions=(),
        plugins=(),
        related=(),
        owned=(
            (canonicalize_name("torch"), "frameworks.torch"),
            (canonicalize_name("torchvision"), "frameworks.torch.torchvision"),
            (canonicalize_name("torchaudio"), "frameworks.torch.torchaudio"),
        ),
        tpu_runtime=_names("torch-xla"),
    ),
    Framework.TENSORFLOW: FrameworkFacts(
        framework=Framework.TENSORFLOW,
        dists=_names("tensorflow", "tensorflow-cpu", "tensorflow-gpu", "tf-nightly"),
        companions=(),
        required_companions=(),
        plugins=(),
        related=_names("tf-keras"),
        owned=(
            (canonicalize_name("tensorflow"), "frameworks.tensorflow"),
            (canonicalize_name("tensorflow-cpu"), 'frameworks.tensorflow (variant = "cpu")'),
        ),
        cpu_dists=_names("tensorflow-cpu"),
    ),
    Framework.JAX: FrameworkFacts(
        framework=Framework.JAX,
        dists=_names("jax"),
        companions=_names("jaxlib"),
        required_companions=_names("jaxlib"),
        plugins=(
            (canonicalize_name("jax-cuda13-plugin"), "cuda13"),
            (canonicalize_name("jax-cuda12-plugin"), "cuda12"),
        ),
        related=_names("jax-cuda12-pjrt", "jax-cuda13-pjrt"),
        owned=(
            (canonicalize_name("jax"), "frameworks.jax"),
            (canonicalize_name("jaxlib"), "frameworks.jax.jaxlib"),
        ),
        tpu_runtime=_names("libtpu", "libtpu-nightly"),
    ),
}

ORDER: tuple[Framework, ...] = tuple(Framework)
"""The order frameworks are resolved, listed and checked in: torch, tensorflow, jax."""

POSITION: dict[Framework, int] = {framework: i for i, framework in enumerate(ORDER)}

ALL_FRAMEWORK_NAMES: frozenset[NormalizedName] = frozenset().union(
    *(facts.all_names for facts in FACTS.values())
)

OWNED: dict[NormalizedName, str] = {name: key for facts in FACTS.values() for name, key in facts.owned}


def ordered(frameworks: Iterable[Framework]) -> tuple[Framework, ...]:
    wanted = set(frameworks)
    return tuple(framework for framework in ORDER if framework in wanted)


def framework_of(dist_name: str) -> Framework | None:
    """The framework a distribution is (``tensorflow-cpu`` -> tensorflow); companions are not."""
    name = canonicalize_name(dist_name)
    for framework, facts in FACTS.items():
        if name in facts.dists:
            return framework
    return None


def is_framework_name(dist_name: str) -> bool:
    """Whether ``detect`` lists the distribution among the frameworks and their companions."""
    return canonicalize_name(dist_name) in ALL_FRAMEWORK_NAMES


# ---------------------------------------------------------------------------------------------
# The CUDA packages around the frameworks: their names (their releases are catalog data,
# ``cuda_packages.toml``)


@model
class PackageNames:
    """A CUDA package colabenv knows by name: ``distribution`` is the distribution of one CUDA
    major, ``{major}`` standing for it (``cupy-cuda{major}x``: ``cupy-cuda12x``); ``module`` is
    what it imports as; ``rocm_distribution`` the distribution of one ROCm line, ``{major}`` and
    ``{minor}`` standing for it (``cupy-rocm-{major}-{minor}``: ``cupy-rocm-7-0``; None: the
    package has no ROCm distribution of its own)."""

    name: NormalizedName
    distribution: str
    module: str
    rocm_distribution: str | None = None

    def distribution_for(self, major: int) -> NormalizedName:
        return canonicalize_name(self.distribution.format(major=major))

    def rocm_distribution_for(self, rocm: Version) -> NormalizedName | None:
        """The distribution of a ROCm build for ``rocm`` (its major and minor); None where
        colabenv names none for the package."""
        if self.rocm_distribution is None:
            return None
        return canonicalize_name(self.rocm_distribution.format(major=rocm.major, minor=rocm.minor))

    def spellings(self) -> tuple[NormalizedName, ...]:
        """Every distribution name of the package: its generic name, then its distribution for
        each CUDA major of :data:`PACKAGE_MAJORS` and each ROCm line of
        :data:`PACKAGE_ROCM_LINES` (once each: ``xformers`` is one)."""
        rocm = (self.rocm_distribution_for(line) for line in PACKAGE_ROCM_LINES)
        spelled = (
            self.name,
            *(self.distribution_for(major) for major in PACKAGE_MAJORS),
            *(name for name in rocm if name is not None),
        )
        return tuple(dict.fromkeys(spelled))


CUDA_PACKAGES: dict[NormalizedName, PackageNames] = {
    names.name: names
    for names in (
        PackageNames(canonicalize_name("xformers"), "xformers", "xformers", "xformers"),
        PackageNames(canonicalize_name("flash-attn"), "flash-attn", "flash_attn"),
        PackageNames(canonicalize_name("flash-attn-4"), "flash-attn-4", "flash_attn.cute"),
        PackageNames(canonicalize_name("bitsandbytes"), "bitsandbytes", "bitsandbytes"),
        PackageNames(canonicalize_name("vllm"), "vllm", "vllm"),
        PackageNames(canonicalize_name("torch-scatter"), "torch-scatter", "torch_scatter"),
        PackageNames(canonicalize_name("pyg-lib"), "pyg-lib", "pyg_lib"),
        # CuPy's ROCm wheels: cupy/cupy-release-tools dist_config.py, WHEEL_LINUX_CONFIGS
        # ('rocm-5.0': cupy-rocm-5-0; 'rocm-7.0': cupy-rocm-7-0 from CuPy 14)
        PackageNames(canonicalize_name("cupy"), "cupy-cuda{major}x", "cupy", "cupy-rocm-{major}-{minor}"),
        PackageNames(canonicalize_name("cudf"), "cudf-cu{major}", "cudf"),
        PackageNames(canonicalize_name("cuml"), "cuml-cu{major}", "cuml"),
        PackageNames(canonicalize_name("onnxruntime-gpu"), "onnxruntime-gpu", "onnxruntime"),
    )
}
"""The CUDA packages a profile may name in ``[frameworks]`` without a catalog overlay."""

PACKAGE_MAJORS = (11, 12, 13)
"""The CUDA majors whose distribution names :func:`package_of` recognizes."""

PACKAGE_ROCM_LINES = tuple(Version(line) for line in ("4.0", "4.2", "4.3", "5.0", "7.0"))
"""The ROCm lines whose distribution names :func:`package_of` recognizes: those CuPy has
published wheels for (cupy/cupy-release-tools dist_config.py, CuPy 9 to 14)."""


PACKAGE_DISTRIBUTIONS: dict[NormalizedName, PackageNames] = {
    dist: names for names in CUDA_PACKAGES.values() for dist in names.spellings()
}
"""Each distribution name of a known CUDA package (and its generic name) -> the package."""


def package_of(dist_name: str) -> PackageNames | None:
    """The known CUDA package a distribution is (``cupy-cuda12x`` -> cupy), else None."""
    return PACKAGE_DISTRIBUTIONS.get(canonicalize_name(dist_name))


def spellings_of(name: NormalizedName) -> tuple[NormalizedName, ...]:
    """The distribution names a profile's CUDA package ``name`` may be installed or pinned as:
    a known package's :meth:`PackageNames.spellings`, else ``name`` alone."""
    names = CUDA_PACKAGES.get(name)
    return (name,) if names is None else names.spellings()

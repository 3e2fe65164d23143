"""What a runtime already has installed: each distribution by its canonical name, its version
as installed (local tag kept)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING

from packaging.version import InvalidVersion, Version

from colabenv.models.frozen import model

if TYPE_CHECKING:  # annotations only, canonicalize_name imported where used: see colabenv.models.catalog
    from packaging.utils import NormalizedName


@model
class InstalledDist:
    """A distribution present in the runtime. ``version`` keeps its local tag (``2.6.0+cu124``)."""

    name: NormalizedName
    version: str

    @property
    def parsed_version(self) -> Version | None:
        try:
            return Version(self.version)
        except InvalidVersion:
            return None


@model
class InstalledSet:
    """What the runtime already has, by canonical name."""

    dists: tuple[InstalledDist, ...] = ()

    @classmethod
    def from_mapping(cls, mapping: Mapping[str, str]) -> InstalledSet:
        from packaging.utils import canonicalize_name

        dists = {canonicalize_name(name): version for name, version in mapping.items()}
        return cls(tuple(InstalledDist(n, v) for n, v in sorted(dists.items())))

    def get(self, name: str) -> InstalledDist | None:
        from packaging.utils import canonicalize_name

        wanted = canonicalize_name(name)
        for dist in self.dists:
            if dist.name == wanted:
                return dist
        return None

    def version_of(self, name: str) -> Version | None:
        dist = self.get(name)
        return dist.parsed_version if dist else None

    def __len__(self) -> int:
        return len(self.dists)

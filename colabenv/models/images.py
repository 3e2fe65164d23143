"""The base images a container definition can start from (``base_images.toml``)."""

from __future__ import annotations

from colabenv.models.frozen import model


@model
class BaseImage:
    """One entry of the table: the targets it serves (``platforms``, ``accelerators``, the
    ``rocm`` X.Y a ROCm target must have, the ``pythons`` its ``python3`` is, ``3.14t`` for a
    free-threaded one: empty for any with the GIL),
    the ``image`` (``{python}`` filled in), whether its ``python3`` is marked
    EXTERNALLY-MANAGED, the ``note`` the definition says of it ("" for the slim-Python lines)
    and its ``source``."""

    platforms: tuple[str, ...]
    accelerators: tuple[str, ...]
    image: str
    source: str
    rocm: str | None = None
    pythons: tuple[str, ...] = ()
    externally_managed: bool = False
    note: str = ""

    def serves(self, platform: str, accelerator: str, rocm: str | None, python: str) -> bool:
        return (
            platform in self.platforms
            and accelerator in self.accelerators
            and (self.rocm is None or self.rocm == rocm)
            and (python in self.pythons if self.pythons else not python.endswith("t"))
        )

    def described(self) -> str:
        """``rocm/dev-ubuntu-24.04:6.4-complete (linux_x86_64, rocm, ROCm 6.4, Python 3.12)``."""
        parts = [", ".join(self.platforms), ", ".join(self.accelerators)]
        if self.rocm is not None:
            parts.append(f"ROCm {self.rocm}")
        if self.pythons:
            parts.append(f"Python {', '.join(self.pythons)}")
        return f"{self.image} ({'; '.join(parts)})"

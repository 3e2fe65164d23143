"""The files an index or find-links page lists as wheels whose names cannot be read as a wheel's
(``cupy_cuda12x-99.0.0-cp312-manylinux_2_28_aarch64.whl``, a part missing): each is left aside
and said in one note line naming its URL, never a traceback."""

from __future__ import annotations

from colabenv.errors import printable


class UnreadableFiles:
    """The unreadable wheel file names met while reading pages, by URL, each once."""

    def __init__(self) -> None:
        self._found: dict[str, str] = {}

    def took(self, url: str, problem: Exception) -> None:
        """Keep ``url`` (a ``.whl`` whose name did not parse) for its note."""
        self._found.setdefault(url, str(problem))

    def notes(self) -> list[str]:
        """One line per file, in the order they were met."""
        return [
            f"{printable(url)}: not a wheel file name that can be read ({printable(why)[:160]}); left aside"
            for url, why in self._found.items()
        ]

"""``colabenv bundle``: every wheel a lock's target installs, downloaded into a folder, each
checked against the lock's sha256 while it streams and renamed into place only when it matches.

Where a lock names no URL for a file (the requirements form records hashes only), the index's
project page (:class:`~colabenv.index.client.SimpleClient`) gives the file whose sha256 the lock
records. A lock with no ``--index-url`` line was made against the installer's default index,
which is searched in its place (:func:`default_index`). A file already in the folder with the
lock's sha256 is kept; one with another hash (a damaged or half-copied file) is fetched again.
Index trouble and a file that does not match its hash are
:class:`~colabenv.errors.IndexUnavailableError` (exit 4) naming the file. File names, part files
and the removal of dead runs' part files are the script's fill's own code
(:mod:`colabenv._target.wheelhouse`), so the two follow one rule. Every URL shown or written is
stripped of its credentials and redacted. Redirects are requests' own: it drops
the Authorization header when one leaves the host name or port (``Session.should_strip_auth``),
and has no adapter for a scheme other than http and https, which is refused naming the file.
"""

from __future__ import annotations

import hashlib
import json
import os
import socket
import threading
import time
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING
from urllib.parse import urlsplit

from colabenv._target.wheelhouse import remove_dead_parts, wheel_file_pin, write_wheel
from colabenv._util.files import FileProblem, write_output
from colabenv.errors import IndexUnavailableError, LockError, OutputError, printable
from colabenv.index.client import CONNECT_TIMEOUT_S, READ_TIMEOUT_S, SimpleClient
from colabenv.index.urls import (
    Redactor,
    default_index_url,
    strip_credentials,
    with_credentials,
)
from colabenv.lock.content import Lock, LockedPackage, LockFile
from colabenv.models.frozen import model
from colabenv.wheelhouse.plan import (
    MANIFEST_NAME,
    README_NAME,
    Section,
    Wanted,
    choose_wheel,
    lock_sections,
    manifest_text,
    merge,
    readme_text,
    recorded_size,
    section_label,
    target_tags,
)
from colabenv.wheelhouse.progress import Progress

if TYPE_CHECKING:
    import requests

MAX_WHEEL_BYTES = 64 << 30
"""The largest file bundle downloads: real wheels stay under a few GiB."""
MIN_RATE_BYTES_S = 64 * 1024
"""After its first ``--http-deadline`` seconds a download must have averaged at least this
(64 KiB/s: a 2.5 GiB torch wheel in 11 hours), else it is ended: an index that drips a byte
just inside each read timeout would otherwise hold bundle for ever."""
_CHUNK = 256 * 1024
_WATCH_S = 0.5


@model
class BundleResult:
    files: int
    downloaded: int
    present: int
    bytes_downloaded: int


class _Mismatch(Exception):
    pass


def sha256_of(path: Path) -> str | None:
    """The sha256 of the regular file at ``path``, or None when there is none."""
    try:
        if not path.is_file() or path.is_symlink():
            return None
        digest = hashlib.sha256()
        with open(path, "rb") as handle:
            for chunk in iter(lambda: handle.read(_CHUNK), b""):
                digest.update(chunk)
        return digest.hexdigest()
    except OSError:
        return None


@model
class Plan:
    """The sections bundled, one :class:`Wanted` per file, and the URL each is fetched from
    (credentials kept: never shown, never written)."""

    sections: tuple[Section, ...]
    wanted: tuple[Wanted, ...]
    sources: tuple[tuple[str, str], ...]

    def source(self, item: Wanted) -> str | None:
        return dict(self.sources).get(item.filename)


class Folder:
    """The wheelhouse folder as a run finds it: each file's sha256 computed once, and what its
    manifest recorded (sha256 to file name and URL) from an earlier run."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self._hashes: dict[str, str | None] = {}
        self.recorded = _recorded(path / MANIFEST_NAME)

    def holds(self, filename: str, sha256: str) -> bool:
        if filename not in self._hashes:
            self._hashes[filename] = sha256_of(self.path / filename)
        return self._hashes[filename] == sha256

    def kept(self, package: LockedPackage) -> dict[str, tuple[str, str]]:
        """The files of ``package`` an earlier run recorded and the folder still holds whole."""
        found = {}
        for file in package.files:
            entry = self.recorded.get(file.sha256)
            if entry is not None and self.holds(entry[0], file.sha256):
                found[file.sha256] = entry
        return found


def _recorded(path: Path) -> dict[str, tuple[str, str]]:
    """sha256 to (file, URL) from a manifest an earlier run wrote; nothing from one that is
    missing, too large or not of its shape (the files are checked by their hash anyway)."""
    from colabenv._util.files import read_limited
    from colabenv.wheelhouse.plan import MAX_MANIFEST_BYTES

    try:
        document = json.loads(read_limited(path, MAX_MANIFEST_BYTES))
    except (FileProblem, ValueError, RecursionError):
        return {}
    entries = document.get("files") if isinstance(document, dict) else None
    found: dict[str, tuple[str, str]] = {}
    for entry in entries if isinstance(entries, list) else ():
        if not isinstance(entry, dict):
            continue
        name, digest, url = entry.get("file"), entry.get("sha256"), entry.get("url")
        shaped = isinstance(name, str) and isinstance(digest, str) and isinstance(url, str)
        if shaped and wheel_file_pin(str(name)) is not None:
            found[str(digest)] = (str(name), str(url))
    return found


DEFAULT_INDEX_VARIABLES = ("PIP_INDEX_URL", "UV_DEFAULT_INDEX", "UV_INDEX_URL")
"""Where an installer's default index is set in the environment, in the order they are read."""


def default_index(environ: Mapping[str, str]) -> str | None:
    """The index an installer takes when a lock names none: the first of
    DEFAULT_INDEX_VARIABLES set in ``environ``, else pip's default (None: not known)."""
    for variable in DEFAULT_INDEX_VARIABLES:
        words = environ.get(variable, "").split()
        if words:
            return words[0]
    return default_index_url()


def lock_indexes(lock: Lock, default: str | None) -> tuple[str, ...]:
    """The indexes a lock's files are looked for on: those it names, ``default`` in the place
    of the ``--index-url`` a lock made against the default index does not write."""
    if lock.index_url or default is None:
        return lock.index_urls
    return (default, *lock.extra_index_urls)


def plan(
    lock_file: LockFile,
    target: str | None,
    client: SimpleClient,
    redact: Callable[[str], str],
    environ: Mapping[str, str],
    folder: Folder,
    *,
    default: str | None,
) -> Plan:
    """What to bundle: names and URLs from the lock or, where it has none, from its indexes
    (``default`` standing for the default index a lock names no other for); a pin whose wheel
    an earlier run left whole in the folder needs neither."""
    sections = lock_sections(lock_file, target)
    wanted: list[Wanted] = []
    sources: dict[str, str] = {}
    for section in sections:
        tags = target_tags(section.target)
        label = section_label(section)
        for package in section.packages:
            kept = choose_wheel(package, folder.kept(package), tags)
            if kept is not None:
                filename, url, sha256 = kept
                size = recorded_size(package, sha256)
                wanted.append(Wanted(filename, package.name, package.version, sha256, url, (label,), size))
                continue
            indexes = lock_indexes(section.lock, default)
            files = _known_files(section.lock, indexes, package, client)
            if not any(f.sha256 in files for f in package.files):
                raise _not_found(package, indexes, section.lock, redact)
            chosen = choose_wheel(package, files, tags)
            if chosen is None:
                shown = printable(lock_file.path.name if lock_file.path else "lock")
                raise LockError(
                    f"{shown}: {package.pin}: no wheel with a sha256 of "
                    f"the lock fits Python {section.target.python} {section.target.platform} "
                    "(a wheelhouse holds wheels only)"
                )
            filename, url, sha256 = chosen
            shown = redact(strip_credentials(url))
            size = recorded_size(package, sha256)
            wanted.append(Wanted(filename, package.name, package.version, sha256, shown, (label,), size))
            sources[filename] = with_credentials(url, lock_indexes(section.lock, default), environ)
    return Plan(sections, merge(wanted), tuple(sources.items()))


def _not_found(
    package: LockedPackage, indexes: tuple[str, ...], lock: Lock, redact: Callable[[str], str]
) -> IndexUnavailableError:
    """What it means that no file of ``package`` was found: no index to search, or none of
    those searched lists a file with the lock's sha256."""
    searched = [package.index] if package.index else list(indexes)
    if not searched and not lock.find_links:
        return IndexUnavailableError(
            f"{package.pin}: no index to search: the lock names none and no default index is "
            "known (set PIP_INDEX_URL to the index the lock was made from)"
        )
    shown = ", ".join(printable(redact(strip_credentials(url))) for url in (*searched, *lock.find_links))
    return IndexUnavailableError(
        f"{package.pin}: no file with the lock's sha256 on {shown} (the index changed the file, "
        "or is not the one the lock was made from)"
    )


def _known_files(
    lock: Lock, indexes: tuple[str, ...], package: LockedPackage, client: SimpleClient
) -> dict[str, tuple[str, str]]:
    known = {f.sha256: (f.name, f.url) for f in package.files if f.name and f.url}
    if all(f.sha256 in known for f in package.files if f.is_wheel):
        return {k: (n, u) for k, (n, u) in known.items() if n is not None and u is not None}
    for index in [package.index] if package.index else indexes:
        try:
            page = client.project_files(index, package.name)
        except IndexUnavailableError as error:
            raise IndexUnavailableError(f"{package.pin}: {error}") from None
        for item in page or ():
            if item.sha256 is not None:
                known.setdefault(item.sha256, (item.filename, item.url))
    if not any(f.sha256 in known for f in package.files):  # a find-links page (a TPU runtime)
        for links in lock.find_links:
            try:
                listed = client.page_files(links)
            except IndexUnavailableError as error:
                raise IndexUnavailableError(f"{package.pin}: {error}") from None
            for item in listed:
                if item.sha256 is not None:
                    known.setdefault(item.sha256, (item.filename, item.url))
    return {k: (n, u) for k, (n, u) in known.items() if n is not None and u is not None}


def bundle(
    lock_file: LockFile,
    folder: Path,
    *,
    target: str | None,
    environ: Mapping[str, str],
    progress: Progress,
    deadline_s: float,
) -> BundleResult:
    """Fill ``folder`` with the lock's wheels for ``target`` (all it holds, or one section), then
    write the manifest and the README. Raises exit-4 errors naming the file on index trouble."""
    default = default_index(environ)
    redact = redactor(lock_file, environ, default)
    client = SimpleClient(environ, redact, deadline_s=deadline_s)
    remove_dead_parts(str(folder))  # of runs killed (SIGKILL) mid-download; a live run's stay
    found = Folder(folder)
    planned = plan(lock_file, target, client, redact, environ, found, default=default)
    wanted = planned.wanted
    missing: list[Wanted] = []
    for item in wanted:
        path = folder / item.filename
        if path.is_symlink() or (path.exists() and not path.is_file()):
            raise OutputError(f"{printable(path)}: not a regular file; a wheelhouse writes none over it")
        if not found.holds(item.filename, item.sha256):
            missing.append(item)
    progress.start(len(wanted), len(wanted) - len(missing))
    downloaded = 0
    for item in missing:
        source = planned.source(item)
        if source is None:  # it was whole when planned
            raise OutputError(f"{printable(folder / item.filename)}: changed while bundle ran; run it again")
        downloaded += _download(client.session, item, source, folder, redact, progress, deadline_s)
    name = lock_file.path.name if lock_file.path else "lock"
    _write(folder / MANIFEST_NAME, manifest_text(name, planned.sections, wanted))
    _write(folder / README_NAME, readme_text(name, len(wanted)))
    progress.finish()
    return BundleResult(len(wanted), len(missing), len(wanted) - len(missing), downloaded)


def redactor(lock_file: LockFile, environ: Mapping[str, str], default: str | None = None) -> Redactor:
    """What hides credentials in text shown or written: every section's index URLs and
    find-links pages, expanded, and the values of their ``${VAR}`` references; the ``default``
    index (from the environment, expanded already) shown without its userinfo."""
    urls = (url for s in lock_file.sections for url in (*s.lock.index_urls, *s.lock.find_links))
    found = Redactor.for_urls(tuple(dict.fromkeys(urls)), environ)
    bare = strip_credentials(default) if default else default
    if default is None or bare == default or bare is None:
        return found
    pairs = [*found.pairs, (default, bare), (default.rstrip("/"), bare.rstrip("/"))]
    return Redactor(tuple(sorted(dict.fromkeys(pairs), key=lambda pair: len(pair[0]), reverse=True)))


def _write(path: Path, text: str) -> None:
    try:
        write_output(path, text.encode("utf-8"))
    except (FileProblem, OSError) as problem:
        raise OutputError(f"{printable(path)}: cannot write: {problem}") from None


def _download(
    session: requests.Session,
    item: Wanted,
    url: str,
    folder: Path,
    redact: Callable[[str], str],
    progress: Progress,
    deadline_s: float,
) -> int:
    import requests

    where = f"{printable(item.filename)} from {printable(item.url)}"
    digest = hashlib.sha256()
    count = [0]

    def chunks(response: requests.Response) -> Iterator[bytes]:
        for chunk in response.iter_content(_CHUNK):
            count[0] += len(chunk)
            if count[0] > MAX_WHEEL_BYTES:
                raise _Mismatch(f"more than {MAX_WHEEL_BYTES >> 30} GiB")
            if item.size is not None and count[0] > item.size:
                raise _Mismatch(f"more than the {item.size} bytes the lock records")
            digest.update(chunk)
            progress.advance(len(chunk))
            yield chunk

    def check() -> None:
        if item.size is not None and count[0] != item.size:
            raise _Mismatch(f"{count[0]} bytes, the lock says {item.size}")
        if digest.hexdigest() != item.sha256:
            raise _Mismatch(f"sha256 {digest.hexdigest()}, the lock says {item.sha256}")

    slow = _Slow(count, deadline_s)
    try:
        with session.get(
            url, stream=True, timeout=(CONNECT_TIMEOUT_S, READ_TIMEOUT_S), allow_redirects=True
        ) as response:
            if response.status_code != 200:
                raise IndexUnavailableError(f"{where}: the index answered HTTP {response.status_code}")
            declared = response.headers.get("Content-Length", "")
            size = int(declared) if declared.isdigit() and len(declared) < 20 else None
            if size is not None and size > MAX_WHEEL_BYTES:
                raise _Mismatch(f"{size} bytes announced, more than {MAX_WHEEL_BYTES >> 30} GiB")
            if size is not None and item.size is not None and size != item.size:
                raise _Mismatch(f"{size} bytes announced, the lock says {item.size}")
            progress.expect(size)
            with slow.watching(response):
                write_wheel(str(folder), item.filename, chunks(response), check)
    except (_Mismatch, requests.exceptions.RequestException) as problem:
        progress.back(count[0])
        if slow.ended:
            raise IndexUnavailableError(f"{where}: {slow.why()}; refused (nothing kept)") from None
        if isinstance(problem, _Mismatch):
            raise IndexUnavailableError(f"{where}: {problem}; refused (nothing kept)") from None
        if isinstance(problem, requests.exceptions.InvalidSchema) and _is_http(url):
            # requests has an adapter for http and https only: a Location elsewhere (file:,
            # ftp:) ends the download before any request is made to it
            raise IndexUnavailableError(
                f"{where}: the index redirected to a URL that is not http or https; refused (nothing kept)"
            ) from None
        raise IndexUnavailableError(f"{where}: {_why(problem, redact)}") from None
    except (OSError, ValueError) as problem:
        raise OutputError(f"{printable(folder / item.filename)}: cannot write: {problem}") from None
    progress.file_done()
    return count[0]


class _Slow:
    """The rule :data:`MIN_RATE_BYTES_S` states, kept by a watcher thread while a download
    streams: past it, the connection's socket is shut down, which ends the read the download
    is blocked in (a timeout per read cannot: each drip of a byte starts a new one)."""

    def __init__(self, count: list[int], grace_s: float) -> None:
        self.count, self.grace_s = count, grace_s
        self.ended = False
        self.elapsed = 0.0

    def why(self) -> str:
        return (
            f"{self.count[0]} bytes in {self.elapsed:.0f} s, under {MIN_RATE_BYTES_S // 1024} KiB/s "
            f"after the first {self.grace_s:g} s (--http-deadline)"
        )

    @contextmanager
    def watching(self, response: requests.Response) -> Iterator[None]:
        stop = threading.Event()
        started = time.monotonic()
        sock = _socket_of(response)

        def watch() -> None:
            while not stop.wait(_WATCH_S):
                self.elapsed = time.monotonic() - started
                if self.elapsed > self.grace_s and self.count[0] < MIN_RATE_BYTES_S * self.elapsed:
                    self.ended = True
                    _shut(sock, response)
                    return

        watcher = threading.Thread(target=watch, name="colabenv-bundle-rate", daemon=True)
        watcher.start()
        try:
            yield
        finally:
            stop.set()
            watcher.join()
            if sock is not None:
                sock.close()


def _socket_of(response: requests.Response) -> socket.socket | None:
    """A socket of its own on the connection ``response`` streams from (a duplicate of the
    descriptor its file reads, ``HTTPResponse.fileno()``), taken before the first read and held
    while the download lasts, so it names that connection and no later one; None where the
    response has no socket (its body already read)."""
    try:
        return socket.socket(fileno=os.dup(response.raw.fileno()))
    except (OSError, ValueError):
        return None


def _shut(sock: socket.socket | None, response: requests.Response) -> None:
    """Shut down the connection a download is blocked reading, so that the read returns: a
    shutdown acts on the connection, not on one descriptor of it; without a socket, close the
    response."""
    try:
        if sock is not None:
            sock.shutdown(socket.SHUT_RDWR)
        else:
            response.close()
    except OSError:
        pass


def _is_http(url: str) -> bool:
    return urlsplit(url).scheme.lower() in ("http", "https")


def _why(error: BaseException, redact: Callable[[str], str]) -> str:
    import requests

    text = str(error)
    if isinstance(error, requests.exceptions.Timeout):
        return f"no answer within {READ_TIMEOUT_S:g} s"
    if "Connection refused" in text:
        return "unreachable (connection refused)"
    if isinstance(error, requests.exceptions.ConnectionError):
        return "the connection failed"
    return redact(f"request failed: {type(error).__name__}")

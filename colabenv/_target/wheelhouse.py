"""The wheelhouse program a bootstrap script embeds beside its helper when it installs from a
wheelhouse (issue 26), run by the target's own Python like the helper: standard library only,
Python 3.8+, every value an argument or a file, index URLs in the environment. It is the
helper's other half: it imports the helper from its own folder (the script writes both into its
work folder) and uses its readers (versions, requirement files, index hosts), so a script that
uses no wheelhouse carries and compiles none of this.

Sub-commands (``python wheelhouse.py COMMAND ...``)::

    check LOCKFILE MISSING DIR OFFERED  exit 8 (one line naming the file) unless every pin in
                                  MISSING has a wheel in DIR with the lock's sha256 and none has
                                  another: checked before anything is installed
    fill LOCKFILE MISSING DIR STAGING   serve what DIR holds with the lock's sha256, download the
                                  rest from COLABENV_INDEX_URLS into DIR (STAGING when DIR is
                                  read-only), hash-checked, flushed and renamed into place
    resolve uv|pip DRYRUN REQS PINS     without a lock: what the installer's dry run would
                                  install, each pin with every sha256 the indexes give

The installer is offered only the files checked: OFFERED (check) and STAGING (fill) hold a link
to each (and what was downloaded there), and are the one folder it is given. SIGTERM, SIGHUP,
SIGINT, and the loss of the reader of its standard output (the script that ran it, killed) end
the program at once, its part file removed, exit 128+N.

``colabenv bundle`` imports this module for the rules of a wheelhouse's files, written once:
:func:`wheel_file_pin` (its names), :func:`write_wheel` and :func:`remove_dead_parts`.
"""

from __future__ import annotations

import importlib
import os
import re
import signal
import stat
import sys
from collections.abc import Callable, Iterable
from typing import Any

if __package__:  # imported (colabenv's bundle): the helper of its own package
    helper: Any = importlib.import_module(".helper", __package__)
else:  # run by its path: the helper the script wrote beside it
    sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
    helper = importlib.import_module("helper")


WHEELHOUSE_REFUSED = 8
"""wheelhouse-check and wheelhouse-fill: a file or an index the install cannot trust or reach."""
_WH_CHUNK = 1 << 20
_WH_TIMEOUT_S = 60.0
_WH_MAX_PAGE = 64 << 20
_WH_NOTEBOOK = ("JPY_PARENT_PID", "COLAB_RELEASE_TAG", "KAGGLE_KERNEL_RUN_TYPE")


def _lock_entries(path: str) -> dict[str, list[str]]:
    """Each pin of a requirements lock (``name==version ; marker``) with its sha256 hashes."""
    entries: dict[str, list[str]] = {}
    for entry in helper._lock_lines(path):
        pin, _, rest = entry.partition(" --hash")
        found = re.findall(r"--hash[= ]sha256:([0-9a-fA-F]{64})", "--hash" + rest)
        entries[pin.strip()] = [h.lower() for h in found]
    return entries


MAX_WHEEL_NAME = 180
"""The longest wheel file name a wheelhouse writes or reads (its part file's name is longer)."""
_WHEEL_NAME = re.compile(
    r"([A-Za-z0-9](?:[A-Za-z0-9._]*[A-Za-z0-9])?)-([A-Za-z0-9][A-Za-z0-9._+!]*)"
    r"(?:-[0-9][A-Za-z0-9._]*)?(?:-[A-Za-z0-9][A-Za-z0-9._]*){3}\.whl"
)


def wheel_file_pin(filename: str) -> tuple[str, str] | None:
    """(canonical name, version) of a wheel's file name; None for anything else. The one rule
    for the names a wheelhouse writes, reads or serves, in the script's fill and check and in
    ``colabenv bundle`` alike: a plain name of the wheel form (name, version, optional build,
    three tags: letters, digits, ``._``, ``+!`` in the version), so never a path (``/``,
    ``..``), never hidden (a part file of a run still writing), at most MAX_WHEEL_NAME long."""
    found = _WHEEL_NAME.fullmatch(filename) if len(filename) <= MAX_WHEEL_NAME else None
    return None if found is None else (helper._canonical(found[1]), found[2])


def _same_pin(pin: str, name: str, version: str) -> bool:
    wanted, _, rest = pin.partition("==")
    wanted_version = rest.split(";", 1)[0].strip()
    if helper._canonical(wanted.split("[", 1)[0].strip()) != name:
        return False
    try:
        return bool(helper._MiniVersion(wanted_version) == helper._MiniVersion(version))
    except ValueError:
        return False


def _sha256_file(path: str) -> str:
    import hashlib

    digest = hashlib.sha256()
    with open(path, "rb") as handle:
        for chunk in iter(lambda: handle.read(_WH_CHUNK), b""):
            digest.update(chunk)
    return digest.hexdigest()


def _folder_wheels(folder: str) -> list[tuple[str, str, str]]:
    """(file name, canonical name, version) of each wheel in ``folder`` (none: no folder)."""
    try:
        names = sorted(os.listdir(folder))
    except OSError:
        return []
    pins = [(filename, wheel_file_pin(filename)) for filename in names]
    return [(f, *pin) for f, pin in pins if pin is not None and os.path.isfile(os.path.join(folder, f))]


def _served(
    folder: str, pins: list[str], entries: dict[str, list[str]]
) -> tuple[dict[str, str], list[str], list[str]]:
    """Which pins a file of ``folder`` serves ({pin: file}), the files of a wanted pin whose
    sha256 the lock does not record (``file: why``), and every file with the lock's sha256 of a
    pin (offered to the installer); a wheel another Python's or platform's is none of these."""
    wheels = [w for w in _folder_wheels(folder) if _tag_rank(w[0]) is not None]
    served: dict[str, str] = {}
    wrong: list[str] = []
    good: list[str] = []
    for pin in pins:
        hashes = set(entries.get(pin, []))
        for filename, name, version in wheels:
            if not _same_pin(pin, name, version):
                continue
            path = os.path.join(folder, filename)
            try:
                digest = _sha256_file(path)
            except OSError as error:
                wrong.append(f"{path}: cannot be read ({error.strerror or error})")
                continue
            if digest in hashes:
                served.setdefault(pin, filename)
                good.append(filename)
            else:
                wrong.append(f"{path}: sha256 {digest} is not the lock's for {pin.split(';')[0].strip()}")
    return served, wrong, good


def _offer(folder: str, filenames: Iterable[str], offered: str) -> None:
    """A link in ``offered`` (the one folder the installer is given) to each of ``filenames``
    in ``folder``: only files whose sha256 was checked, never a wheel beside them that an
    installer would take for a pin (``tinya-1.0+evil`` beside ``tinya-1.0``)."""
    os.makedirs(offered, exist_ok=True)
    if os.path.abspath(folder) == os.path.abspath(offered):
        return
    for filename in filenames:
        link = os.path.join(offered, filename)
        if not os.path.lexists(link):
            os.symlink(os.path.abspath(os.path.join(folder, filename)), link)


def _wheelhouse_check(lock: str, missing: str, folder: str, offered: str) -> int:
    """Offline: every pin to install has a wheel in ``folder`` with the lock's sha256 (linked
    into ``offered``), and none there of such a pin another; else one line naming it, exit 8."""
    pins = helper._lines(missing)
    entries = _lock_entries(lock)
    if not os.path.isdir(folder):
        print(f"the wheelhouse {folder} is not a folder on this host")
        return WHEELHOUSE_REFUSED
    served, wrong, good = _served(folder, pins, entries)
    if wrong:
        more = f" (and {len(wrong) - 1} more)" if len(wrong) > 1 else ""
        print(f"refused, nothing installed: {wrong[0]}{more}")
        return WHEELHOUSE_REFUSED
    absent = [pin.split(";")[0].strip() for pin in pins if pin not in served]
    if absent:
        print(f"the wheelhouse {folder} has no wheel of {', '.join(absent)}; nothing installed")
        return WHEELHOUSE_REFUSED
    _offer(folder, good, offered)
    print(f"COLABENV: wheelhouse {folder}: {len(served)} wheels, each with the lock's sha256")
    return 0


def _tag_rank(filename: str) -> int | None:
    """How well a wheel's tags fit this interpreter (lower is better; None: not): interpreter_tags' rule."""
    import platform

    parts = filename[:-4].split("-")
    pythons, abis, platforms = parts[-3].split("."), parts[-2].split("."), parts[-1].split(".")
    major, minor = sys.version_info[:2]
    cpython = f"cp{major}{minor}"
    own, stable = (f"{cpython}t", "abi3t") if helper._free_threaded() else (cpython, "abi3")
    machine = platform.machine()
    glibc = _glibc()
    plat_rank: int | None = None
    rank: int | None
    for tag in platforms:
        if tag == "any":
            rank = 2
        elif tag.endswith("_" + machine) and tag.startswith("manylinux_"):
            found = re.match(r"manylinux_(\d+)_(\d+)_", tag)
            ok = found is not None and glibc is not None and (int(found[1]), int(found[2])) <= glibc
            rank = 0 if ok else None
        elif tag in (f"manylinux2014_{machine}", f"manylinux2010_{machine}", f"manylinux1_{machine}"):
            rank = 0
        elif tag == f"linux_{machine}":
            rank = 1
        else:
            rank = None
        if rank is not None and (plat_rank is None or rank < plat_rank):
            plat_rank = rank
    py_rank: int | None = None
    for tag in pythons:
        for abi in abis:
            if tag == cpython and abi in (own, "none", stable):
                rank = 0 if abi == own else 1
            elif abi == stable and tag.startswith("cp3") and tag[3:].isdigit() and int(tag[3:]) <= minor:
                rank = 2
            elif abi == "none" and tag in (f"py{major}", f"py{major}{minor}", "py2.py3"):
                rank = 3
            else:
                continue
            if py_rank is None or rank < py_rank:
                py_rank = rank
    if plat_rank is None or py_rank is None:
        return None
    return py_rank * 3 + plat_rank


def _glibc() -> tuple[int, int] | None:
    try:
        text = os.confstr("CS_GNU_LIBC_VERSION") or ""
    except (AttributeError, ValueError, OSError):
        return None
    found = re.match(r"glibc (\d+)\.(\d+)", text)
    return (int(found[1]), int(found[2])) if found else None


def _get(url: str, accept: str) -> Any:
    """An open answer to GET ``url`` (credentials in its userinfo sent as Basic auth)."""
    import base64
    import urllib.request
    from urllib.parse import unquote, urlsplit

    parts = urlsplit(url)
    plain = parts._replace(netloc=parts.netloc.rpartition("@")[2]).geturl()
    request = urllib.request.Request(plain, headers={"User-Agent": "colabenv-script", "Accept": accept})
    if parts.username is not None or parts.password is not None:
        pair = f"{unquote(parts.username or '')}:{unquote(parts.password or '')}"
        request.add_header("Authorization", "Basic " + base64.b64encode(pair.encode("utf-8")).decode())
    return urllib.request.urlopen(request, timeout=_WH_TIMEOUT_S)


def _listed(index: str, name: str) -> list[tuple[str, str, str]] | None:
    """:func:`_index_files`; None, after one line saying so, when the page cannot be read."""
    try:
        return _index_files(index, name)
    except Exception as error:  # any failure of a page is this one line
        where = helper._index_location(index)
        print(f"the package index at {where} cannot list {name} ({type(error).__name__})")
        return None


def _index_files(index: str, name: str) -> list[tuple[str, str, str]]:
    """(file name, URL, sha256) of each file of ``name`` whose sha256 ``index``'s project page
    gives (PEP 691 JSON, else the ``#sha256=`` of PEP 503 links)."""
    import json
    import urllib.error
    from html import unescape
    from urllib.parse import unquote, urljoin, urlsplit

    page = index.rstrip("/") + "/" + name + "/"
    try:
        with _get(page, "application/vnd.pypi.simple.v1+json, text/html;q=0.1") as answer:
            body = answer.read(_WH_MAX_PAGE + 1)
            kind = answer.headers.get("Content-Type", "")
            base = answer.geturl()
    except urllib.error.HTTPError as error:
        if error.code == 404:
            return []
        raise
    if len(body) > _WH_MAX_PAGE:
        raise ValueError(f"the project page of {name} is larger than {_WH_MAX_PAGE >> 20} MiB")
    found = []
    if "json" in kind:
        for entry in json.loads(body.decode("utf-8")).get("files", []):
            digest = (entry.get("hashes") or {}).get("sha256")
            if isinstance(digest, str) and isinstance(entry.get("url"), str):
                found.append((str(entry.get("filename")), urljoin(base, entry["url"]), digest.lower()))
        return found
    for href in re.findall(r"""<a\s[^>]*href=["']([^"']+)["']""", body.decode("utf-8", "replace")):
        url = urljoin(base, unescape(href))
        parts = urlsplit(url)
        if parts.fragment.startswith("sha256="):
            filename = unquote(parts.path.rsplit("/", 1)[-1])
            found.append((filename, parts._replace(fragment="").geturl(), parts.fragment[7:].lower()))
    return found


DEFAULT_INDEX = "https://pypi.org/simple/"  # pip's and uv's, where nothing names another


def _indexes() -> list[str]:
    """``COLABENV_INDEX_URLS`` (``"$index_url $extra_urls"``); with no index URL first, the lock
    names none (made against the default index): the installer's default in its place (the
    first of PIP_INDEX_URL, UV_DEFAULT_INDEX, UV_INDEX_URL set, else DEFAULT_INDEX)."""
    given = os.environ.get("COLABENV_INDEX_URLS", "")
    found = [os.environ.get(v, "").split() for v in ("PIP_INDEX_URL", "UV_DEFAULT_INDEX", "UV_INDEX_URL")]
    default = [] if given[:1].strip() else [next((w[0] for w in found if w), DEFAULT_INDEX)]
    return default + given.split()


def _credentialed(url: str, indexes: list[str]) -> str:
    """A file URL on an index's host gets that index's userinfo when it has none."""
    from urllib.parse import urlsplit

    parts = urlsplit(url)
    if "@" in parts.netloc:
        return url
    for index in indexes:
        userinfo, _, host = urlsplit(index).netloc.rpartition("@")
        if userinfo and host == parts.netloc:
            return parts._replace(netloc=f"{userinfo}@{host}").geturl()
    return url


def _writable(folder: str) -> bool:
    """Whether files can be added to ``folder`` (made when missing): not to a read-only mount."""
    try:
        os.makedirs(folder, exist_ok=True)
        probe = os.path.join(folder, f".colabenv-probe.{os.getpid()}")
        fd = os.open(probe, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        os.close(fd)
        os.unlink(probe)
    except OSError:
        return False
    return True


class _Meter:
    """Files and bytes done, the rate, the time left: a ``\\r`` line on a terminal or in a
    notebook cell (stderr), one summary line otherwise."""

    def __init__(self, files: int, total: int) -> None:
        import time

        self.files, self.total, self.done, self.bytes = files, total, 0, 0
        self.announced, self.sized = 0, 0
        self.started, self.shown = time.monotonic(), 0.0
        stream = sys.stderr
        self.live = (hasattr(stream, "isatty") and stream.isatty()) or any(
            os.environ.get(v) for v in _WH_NOTEBOOK
        )

    def expect(self, size: int | None) -> None:
        """A file of ``size`` bytes (None: not said) started: the total, averaged for the rest."""
        if size is not None:
            self.announced += size
            self.sized += 1
        if self.sized:
            later = max(self.files - self.done - 1, 0)
            self.total = self.announced + later * self.announced // self.sized

    def line(self) -> str:
        import time

        elapsed = max(time.monotonic() - self.started, 1e-6)
        rate = self.bytes / elapsed
        left = f", {int((self.total - self.bytes) / rate)} s left" if rate > 0 and self.total else ""
        return (
            f"COLABENV: wheelhouse: {self.done}/{self.files} files, {self.bytes / 1048576:.1f}/"
            f"{self.total / 1048576:.1f} MiB, {rate / 1048576:.1f} MiB/s{left}"
        )

    def add(self, count: int) -> None:
        import time

        self.bytes += count
        if self.live and time.monotonic() - self.shown >= 0.25:
            self.shown = time.monotonic()
            sys.stderr.write("\r" + self.line() + "\x1b[K")
            sys.stderr.flush()

    def end(self) -> None:
        if self.live:
            sys.stderr.write("\r\x1b[K")
            sys.stderr.flush()


class _Refused(Exception):
    """A file whose sha256 is not the lock's."""


def _fetch_into(url: str, digest_wanted: str, folder: str, filename: str, meter: _Meter) -> str | None:
    """Download ``url`` into ``folder/filename`` (:func:`write_wheel`), renamed into place only
    when its sha256 is the lock's. None, or why not."""
    import hashlib

    digest = hashlib.sha256()

    def chunks(answer: Any) -> Iterable[bytes]:
        declared = answer.headers.get("Content-Length", "")
        meter.expect(int(declared) if declared.isdigit() and len(declared) < 20 else None)
        for chunk in iter(lambda: answer.read(_WH_CHUNK), b""):
            digest.update(chunk)
            meter.add(len(chunk))
            yield chunk

    def accept() -> None:
        if digest.hexdigest() != digest_wanted:
            raise _Refused(
                f"{filename}: the index sent a file with sha256 {digest.hexdigest()}, not the lock's"
            )

    try:
        with _get(url, "*/*") as answer:
            write_wheel(folder, filename, chunks(answer), accept)
    except _Refused as refused:
        return str(refused)
    except (OSError, ValueError) as error:
        reason = getattr(error, "reason", None) or getattr(error, "strerror", None) or error
        return f"{filename}: cannot be downloaded ({reason})"
    return None


STALE_PART_S = 24 * 3600
"""The age a part file whose writer cannot be asked (another host's or boot's) is removed at."""
PART_SUFFIX = ".part"
_PART_NAME = re.compile(r"\.(.+)\.([0-9]+)-([0-9]+)-([0-9]+)-([0-9a-f]{8}|0)\.[0-9]+\.part")


def _start_ticks(pid: int) -> str | None:
    """When process ``pid`` started, in clock ticks since boot (``/proc/PID/stat``); None when
    it is not alive (a zombie is not) or cannot be seen."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as handle:
            fields = handle.read().rpartition(b")")[2].split()
    except OSError:
        return None
    return fields[19].decode() if len(fields) > 19 and fields[0] != b"Z" else None


def _this_host() -> str:
    """``NS-BOOT``: this process's pid namespace (its inode) and the first 8 hex digits of the
    boot id; ``0-0`` where /proc does not say."""
    try:
        namespace = re.sub(r"[^0-9]", "", os.readlink("/proc/self/ns/pid"))
        with open("/proc/sys/kernel/random/boot_id", encoding="ascii") as handle:
            boot = handle.read().strip().replace("-", "")[:8]
    except (OSError, ValueError):
        return "0-0"
    return f"{namespace}-{boot}" if namespace and re.fullmatch("[0-9a-f]{8}", boot) else "0-0"


def part_owner() -> str:
    """``PID-START-NS-BOOT`` of this process, as its part files are named, so that a later run
    knows whether their writer still runs (``0-0-0`` after the pid where /proc does not say)."""
    start, host = _start_ticks(os.getpid()), _this_host()
    if start is None or host == "0-0":
        return f"{os.getpid()}-0-0-0"
    return f"{os.getpid()}-{start}-{host}"


def _part_is_dead(name: str, mtime: float, now: float, host: str) -> bool:
    found = _PART_NAME.fullmatch(name)
    if found is None or found[3] == "0" or host == "0-0" or f"{found[4]}-{found[5]}" != host:
        return now - mtime > STALE_PART_S  # its writer is not one this process can ask after
    pid = int(found[2])
    started = _start_ticks(pid)
    if started is not None:
        return started != found[3]  # alive, or its pid taken by a later process
    try:
        os.kill(pid, 0)
    except OSError as error:
        return isinstance(error, ProcessLookupError)  # else alive, hidden from this user's /proc
    return False


def remove_dead_parts(folder: str) -> list[str]:
    """Remove the part files in ``folder`` of runs that no longer run (by the pid, start time,
    pid namespace and boot their name records; of another host's or boot's, or of an older
    name, once :data:`STALE_PART_S` old), and only those; the names removed."""
    import time

    now, host, removed = time.time(), _this_host(), []
    try:
        names = os.listdir(folder)
    except OSError:
        return []
    for name in names:
        if not (name.startswith(".") and name.endswith(PART_SUFFIX)):
            continue
        path = os.path.join(folder, name)
        try:
            info = os.lstat(path)
            if stat.S_ISREG(info.st_mode) and _part_is_dead(name, info.st_mtime, now, host):
                os.unlink(path)
                removed.append(name)
        except OSError:
            continue
    return removed


def write_wheel(folder: str, filename: str, chunks: Iterable[bytes], accept: Callable[[], None]) -> None:
    """Write ``chunks`` to ``folder/filename`` by way of a private part file beside it,
    ``.NAME.PID-START-NS-BOOT.N.part`` (:func:`part_owner`), flushed to disk before ``accept``
    (which raises to refuse it) and the rename; the part file is removed whatever ends the
    write. ValueError, nothing written, for a name :func:`wheel_file_pin` refuses."""
    if wheel_file_pin(filename) is None:
        raise ValueError(f"{filename!r} is not a wheel's file name")
    owner, flags = part_owner(), os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_CLOEXEC", 0)
    for attempt in range(100):
        part = os.path.join(folder, f".{filename}.{owner}.{attempt}{PART_SUFFIX}")
        try:
            fd = os.open(part, flags, 0o600)
            break
        except FileExistsError:
            continue
    else:
        raise FileExistsError(f"no free part file name beside {filename}")
    try:
        with os.fdopen(fd, "wb") as out:
            for chunk in chunks:
                out.write(chunk)
            out.flush()
            os.fsync(out.fileno())
        accept()
        os.chmod(part, 0o644)
        os.replace(part, os.path.join(folder, filename))
        directory = os.open(folder, os.O_RDONLY)
        try:
            os.fsync(directory)
        finally:
            os.close(directory)
    finally:
        if os.path.lexists(part):
            os.unlink(part)


def _wheelhouse_fill(lock: str, missing: str, folder: str, staging: str) -> int:
    """The persistent cache: the pins to install that ``folder`` holds with the lock's sha256
    are served from it; the rest are downloaded from the indexes (``COLABENV_INDEX_URLS``,
    expanded, in the environment, never in argv) into ``folder``, or into ``staging`` when
    ``folder`` is read-only. Prints one summary line; exit 8 naming the file on trouble."""
    import time

    pins = helper._lines(missing)
    entries = _lock_entries(lock)
    indexes = _indexes()
    served, _wrong, good = _served(folder, pins, entries)
    writable = _writable(folder)
    if writable:
        remove_dead_parts(folder)
    destination = folder if writable else staging
    os.makedirs(staging, exist_ok=True)
    plan: list[tuple[str, str, str, str]] = []
    for pin in pins:
        if pin in served:
            continue
        name = helper._canonical(pin.split("==", 1)[0].split("[", 1)[0].strip())
        hashes = set(entries.get(pin, []))
        choices: list[tuple[int, str, str, str]] = []
        for index in indexes:
            listed = _listed(index, name)
            if listed is None:
                return WHEELHOUSE_REFUSED
            for filename, url, digest in listed:
                named = wheel_file_pin(filename)  # a path (``/../``) is no wheel's name
                rank = _tag_rank(filename) if named is not None and _same_pin(pin, *named) else None
                if digest in hashes and rank is not None:
                    choices.append((rank, filename, _credentialed(url, indexes), digest))
            if choices:
                break
        if not choices:
            print(
                f"no index has a wheel of {pin.split(';')[0].strip()} with the lock's sha256 for this Python"
            )
            return WHEELHOUSE_REFUSED
        plan.append((*min(choices)[1:], pin))
    meter = _Meter(len(plan), 0)
    started = time.monotonic()
    for filename, url, digest, _pin in plan:
        problem = _fetch_into(url, digest, destination, filename, meter)
        if problem is not None:
            meter.end()
            print(f"refused, nothing installed: {problem}")
            return WHEELHOUSE_REFUSED
        meter.done += 1
    meter.end()
    _offer(folder, good + ([p[0] for p in plan] if writable else []), staging)
    elapsed = max(time.monotonic() - started, 1e-6)
    mib = meter.bytes / 1048576
    fetched = f"{len(plan)} downloaded ({mib:.1f} MiB, {mib / elapsed:.1f} MiB/s)"
    where = f"added to {folder}" if writable else f"{folder} is read-only: installing from it, adding nothing"
    if not plan:
        where = "nothing to add"
    print(f"COLABENV: wheelhouse {folder}: {len(served)} wheels from it, {fetched}; {where}")
    return 0


def _dry_run_pins(kind: str, path: str) -> list[tuple[str, str]]:
    """(name, version) of what the installer's dry run would install: uv's ``+ name==version``
    lines, or pip's ``--report`` JSON."""
    import json

    if kind == "pip":
        with open(path, encoding="utf-8") as handle:
            report = json.load(handle)
        return [
            (str(i["metadata"]["name"]), str(i["metadata"]["version"])) for i in report.get("install", [])
        ]
    found = []
    for line in helper._read_text(path).splitlines():
        match = re.match(r"^\s*\+\s+([A-Za-z0-9._-]+)==(\S+)\s*$", helper._ANSI.sub("", line))
        if match:
            found.append((match[1], match[2]))
    return found


def _wheelhouse_resolve(kind: str, dry_run: str, out_reqs: str, out_pins: str) -> int:
    """Without a lock: the pins the installer's dry run would install, each with every sha256
    the indexes (``COLABENV_INDEX_URLS``) give for its wheels: the only files a wheelhouse may
    serve. Exit 8, one line, for a pin no index gives a wheel's sha256 of."""
    indexes = _indexes()
    requirements, pins = [], []
    for name, version in _dry_run_pins(kind, dry_run):
        canonical = helper._canonical(name)
        hashes: list[str] = []
        for index in indexes:
            listed = _listed(index, canonical)
            if listed is None:
                return WHEELHOUSE_REFUSED
            for filename, _url, digest in listed:
                pin = wheel_file_pin(filename)
                if pin is not None and pin[0] == canonical and _same_pin(f"{canonical}=={version}", *pin):
                    hashes.append(digest)
        if not hashes:
            print(f"no index gives the sha256 of a wheel of {canonical}=={version}: not taken")
            return WHEELHOUSE_REFUSED
        pins.append(f"{canonical}=={version}")
        requirements.append(pins[-1] + "".join(f" --hash=sha256:{h}" for h in dict.fromkeys(hashes)))
    helper._write_file(out_reqs, "".join(line + "\n" for line in requirements))
    helper._write_file(out_pins, "".join(line + "\n" for line in pins))
    return 0


class _Stopped(BaseException):
    """A signal, or the reader of the answer gone: the run that started this program ended."""

    def __init__(self, signum: int) -> None:
        super().__init__(signum)
        self.signum = signum


def _stop(signum: int, _frame: object) -> None:
    raise _Stopped(signum)


def _watch_reader() -> None:
    """SIGTERM to this process once the reader of its standard output is gone (the script,
    killed, closed its ``$(...)`` pipe: a pipe without a reader polls as POLLERR)."""
    import select

    if not hasattr(select, "poll"):
        return
    poller = select.poll()
    poller.register(1, 0)
    while True:
        if any(event & (select.POLLERR | select.POLLHUP | select.POLLNVAL) for _fd, event in poller.poll()):
            os.kill(os.getpid(), signal.SIGTERM)
            return


def _end_with_the_run() -> None:
    """SIGTERM, SIGHUP and SIGINT end this program through :class:`_Stopped` (its part file
    removed on the way out); so does the loss of the reader of its answer (:func:`_watch_reader`)."""
    import threading

    for signum in (signal.SIGTERM, signal.SIGHUP, signal.SIGINT):
        signal.signal(signum, _stop)
    try:
        piped = stat.S_ISFIFO(os.fstat(1).st_mode)
    except OSError:
        piped = False
    if piped:
        threading.Thread(target=_watch_reader, name="colabenv-reader", daemon=True).start()


def main(argv: list[str]) -> int:
    command, args = (argv[0], argv[1:]) if argv else ("", [])
    commands: dict[str, tuple[int, Callable[..., int]]] = {
        "check": (4, _wheelhouse_check),
        "resolve": (4, _wheelhouse_resolve),
        "fill": (4, _wheelhouse_fill),
    }
    if command not in commands or len(args) != commands[command][0]:
        print(f"usage: wheelhouse check|fill|resolve ..., not {command!r}", file=sys.stderr)
        return 2
    _end_with_the_run()
    try:
        return commands[command][1](*args)
    except _Stopped as stopped:
        return 128 + stopped.signum


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))

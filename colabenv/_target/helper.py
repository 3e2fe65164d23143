"""The helper program embedded in every bootstrap script, run by the target's own Python.

It must run on any Python >= 3.8 with nothing but the standard library, so it carries its own
small PEP 440 / PEP 508 reading (versions, specifiers, markers; tested against packaging).
Every value reaches it as an argument, never through the shell, so no profile string is
evaluated.

Sub-commands (``python helper.py COMMAND ...``); lists arrive in files the script writes
into its work folder, never as one long argv::

    preflight --python X.Y --driver D --state DIR --hash H --env FILE (--reqs FILE | --lock FILE)
              [--python-needs SPECS] [--constraints FILE] [--url TEMPLATE ...]
              [--free-threaded yes|no] [--platform P] [--rocm-gfx GFX,... [--rocm X.Y]]
                                  exit 3 unless this is Python X.Y (its full version within
                                  SPECS: what a lock's pins need), free-threaded or not as
                                  said (absent: not) and, without P, linux_x86_64; 4 unless
                                  the NVIDIA driver is at least D, this is platform P
                                  (``linux_aarch64``), or (ROCm) there is a
                                  ``/dev/kfd``, every AMD GPU's gfx is in the list and the
                                  host's ROCm, where readable, is at least X.Y, 6 when an index
                                  URL needs an unset variable, 5 unless DIR can be written, 7
                                  when a lock pins a component the GPUs cannot run ("-" skips
                                  a check; ``--python -`` the host's too); then print
                                  satisfied|installed|missing and the pending-changes file
    missing REQFILE OUT [SNAPSHOT]  write the requirements this environment does not satisfy
    missing-lock LOCKFILE OUT [SNAPSHOT]   the same for the pins of a requirements lock
    report-changes SNAPSHOT PENDING name what changed since the snapshot; record it in PENDING
    expand-url TEMPLATE...        the URLs with ${VAR} expanded and percent-encoded
    install-cause LOG TEMPLATE... one line: why an install failed
    write-env ENVFILE             write (or remove) the .pth hook that sets [env] variables
    write-marker DIR RECORD CHANGED PENDING   write the restart marker
    marker-ok DIR HASH            exit 1 when the marker is missing, unreadable, incomplete,
                                  another profile's or another interpreter's
    hold-lock LOCKFILE PID N [preflight OPTIONS...]
                                  take the run lock for the script PID and hold it until that
                                  script ends, saying whom it waits for; answer N*N, then run
                                  the preflight under the lock and print its exit and lines

``COLABENV_HELPER_ROOT`` (set by tests only) is a folder read in place of ``/`` for the AMD GPU
files the preflight reads: ``/dev/kfd``, the KFD topology, ``$ROCM_PATH/.info/version``.
"""

from __future__ import annotations

import os
import re
import sys
from collections.abc import Mapping
from typing import Any


def _canonical(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


_VERSION_RE = re.compile(
    r"^\s*v?(?:(\d+)!)?(\d+(?:\.\d+)*)"
    r"(?:[-_.]?(a|alpha|b|beta|rc|c|pre|preview)[-_.]?(\d*))?"
    r"(?:-(\d+)|[-_.]?(?:post|rev|r)[-_.]?(\d*))?"
    r"(?:[-_.]?dev[-_.]?(\d*))?"
    r"(?:\+([a-z0-9]+(?:[-_.][a-z0-9]+)*))?\s*$",
    re.IGNORECASE,
)
_PRE_ORDER = {"a": 0, "alpha": 0, "b": 1, "beta": 1, "rc": 2, "c": 2, "pre": 2, "preview": 2}


class _MiniVersion:
    """PEP 440 ordering (packaging's, without packaging)."""

    def __init__(self, text: str) -> None:
        match = _VERSION_RE.match(text)
        if match is None:
            raise ValueError(f"invalid version {text!r}")
        epoch, release, pre_l, pre_n, post_a, post_b, dev, local = match.groups()
        self.release = tuple(int(p) for p in release.split("."))
        trimmed = list(self.release)
        while len(trimmed) > 1 and trimmed[-1] == 0:
            trimmed.pop()
        post = post_a if post_a is not None else post_b
        has_post = post_a is not None or post_b is not None
        pre_key: tuple[int, ...]
        if pre_l is None and not has_post and dev is not None:
            pre_key = (-1,)
        elif pre_l is None:
            pre_key = (3,)
        else:
            pre_key = (_PRE_ORDER[pre_l.lower()], int(pre_n or 0))
        post_key = (0, int(post or 0)) if has_post else (-1,)
        dev_key = (0, int(dev or 0)) if dev is not None else (1,)
        self.local = local.lower() if local else None
        local_key: tuple[Any, ...] = ()
        if local:
            local_key = tuple(
                (1, int(part), "") if part.isdigit() else (0, 0, part)
                for part in re.split(r"[-_.]", local.lower())
            )
        self.public_key = (int(epoch or 0), tuple(trimmed), pre_key, post_key, dev_key)
        self.base_key = (int(epoch or 0), tuple(trimmed))
        self.is_pre = pre_l is not None or dev is not None
        self.is_post = has_post
        self.key = (*self.public_key, (1, local_key) if local else (0, ()))

    def __eq__(self, other: object) -> bool:
        return isinstance(other, _MiniVersion) and self.key == other.key

    def __lt__(self, other: _MiniVersion) -> bool:
        return self.key < other.key

    def __hash__(self) -> int:
        return hash(self.key)


class _MiniSpecifier:
    def __init__(self, operator: str, version: str) -> None:
        self.operator = operator
        self.version = version

    def contains(self, text: str) -> bool:
        version = _MiniVersion(text)
        op, wanted = self.operator, self.version
        if op == "===":
            return text.strip().lower() == wanted.strip().lower()
        if op in ("==", "!=") and wanted.endswith(".*"):
            prefix = _MiniVersion(wanted[:-2]).release
            padded = version.release + (0,) * max(0, len(prefix) - len(version.release))
            same = padded[: len(prefix)] == prefix
            return same if op == "==" else not same
        spec = _MiniVersion(wanted)
        if op in ("==", "!="):
            same = version.key == spec.key if spec.local else version.public_key == spec.public_key
            return same if op == "==" else not same
        if op == "~=":
            prefix = spec.release[:-1]
            return version.public_key >= spec.public_key and version.release[: len(prefix)] == prefix
        if op == ">=":
            return version.public_key >= spec.public_key
        if op == "<=":
            return version.public_key <= spec.public_key
        same_base = version.base_key == spec.base_key
        if op == "<":
            return version.public_key < spec.public_key and not (
                version.is_pre and not spec.is_pre and same_base
            )
        return version.public_key > spec.public_key and not (
            version.is_post and not spec.is_post and same_base
        )


_MARKER_TOKEN = re.compile(
    r"\s*(?:(?P<str>'[^']*'|\"[^\"]*\")|(?P<op>===|==|!=|~=|<=|>=|<|>|not\s+in\b|in\b)"
    r"|(?P<bool>and\b|or\b)|(?P<paren>[()])|(?P<var>[a-z_.]+))"
)


def marker_environment() -> dict[str, str]:
    """The PEP 508 environment of this interpreter (as packaging.markers computes it)."""
    import platform

    info = sys.implementation.version
    implementation_version = f"{info.major}.{info.minor}.{info.micro}"
    if info.releaselevel != "final":
        implementation_version += info.releaselevel[0] + str(info.serial)
    return {
        "implementation_name": sys.implementation.name,
        "implementation_version": implementation_version,
        "os_name": os.name,
        "platform_machine": platform.machine(),
        "platform_release": platform.release(),
        "platform_system": platform.system(),
        "platform_version": platform.version(),
        "python_full_version": platform.python_version(),
        "platform_python_implementation": platform.python_implementation(),
        "python_version": ".".join(platform.python_version_tuple()[:2]),
        "sys_platform": sys.platform,
    }


class _Marker:
    """A PEP 508 environment marker, evaluated without packaging (which may be absent)."""

    def __init__(self, text: str) -> None:
        self.tokens: list[tuple[str, str]] = []
        position = 0
        text = text.strip()
        while position < len(text):
            match = _MARKER_TOKEN.match(text, position)
            if match is None or match.end() == position:
                raise ValueError(f"invalid marker {text!r}")
            kind = match.lastgroup or ""
            self.tokens.append((kind, re.sub(r"\s+", " ", match.group(kind))))
            position = match.end()

    def evaluate(self, environment: dict[str, str]) -> bool:
        self._position = 0
        self._environment = environment
        result = self._or()
        if self._position != len(self.tokens):
            raise ValueError("trailing tokens in marker")
        return result

    def _peek(self) -> tuple[str, str]:
        return self.tokens[self._position] if self._position < len(self.tokens) else ("", "")

    def _take(self) -> tuple[str, str]:
        token = self._peek()
        self._position += 1
        return token

    def _or(self) -> bool:
        result = self._and()
        while self._peek() == ("bool", "or"):
            self._take()
            right = self._and()
            result = result or right
        return result

    def _and(self) -> bool:
        result = self._atom()
        while self._peek() == ("bool", "and"):
            self._take()
            right = self._atom()
            result = result and right
        return result

    def _atom(self) -> bool:
        if self._peek() == ("paren", "("):
            self._take()
            result = self._or()
            if self._take() != ("paren", ")"):
                raise ValueError("unbalanced parentheses in marker")
            return result
        left_kind, left = self._take()
        op_kind, op = self._take()
        right_kind, right = self._take()
        if op_kind != "op":
            raise ValueError(f"expected a comparison in marker, got {op!r}")
        variable = left if left_kind == "var" else right if right_kind == "var" else ""
        lhs = self._value(left_kind, left)
        rhs = self._value(right_kind, right)
        if variable == "extra":
            lhs, rhs = _canonical(lhs), _canonical(rhs)
        return _compare(lhs, op, rhs, variable in _VERSION_VARIABLES)

    def _value(self, kind: str, token: str) -> str:
        if kind == "str":
            return token[1:-1]
        if kind == "var":
            return self._environment.get(token, "")
        raise ValueError(f"unexpected {token!r} in marker")


_VERSION_VARIABLES = {"implementation_version", "platform_release", "python_full_version", "python_version"}


def _compare(lhs: str, op: str, rhs: str, as_version: bool) -> bool:
    """packaging's rule: for the version variables a right side that reads as a specifier
    compares as versions (a left side that is no version fails); all else as strings."""
    if op == "in":
        return lhs in rhs
    if op == "not in":
        return lhs not in rhs
    if as_version and op != "===":
        try:
            _MiniVersion(rhs[:-2] if rhs.endswith(".*") else rhs)
            usable = not rhs.endswith(".*") or op in ("==", "!=")
        except ValueError:
            usable = False
        if usable:
            try:
                return _MiniSpecifier(op, rhs).contains(lhs)
            except ValueError:
                return False
    if op in ("==", "==="):
        return lhs == rhs
    if op == "!=":
        return lhs != rhs
    ordering = {"<": lhs < rhs, "<=": lhs <= rhs, ">": lhs > rhs, ">=": lhs >= rhs}
    return ordering.get(op, False)


class _MiniRequirement:
    """``name[extras] specifiers ; marker`` (PEP 508 without direct URLs' fine print)."""

    _RE = re.compile(
        r"^\s*([A-Za-z0-9][A-Za-z0-9._-]*)\s*(?:\[([^\]]*)\])?\s*(?:@\s*\S+\s*)?"
        r"\(?([^;()]*)\)?\s*(?:;(.*))?$"
    )

    def __init__(self, text: str) -> None:
        match = self._RE.match(text)
        if match is None:
            raise ValueError(f"invalid requirement {text!r}")
        self.name = match.group(1)
        self.extras = {e.strip() for e in (match.group(2) or "").split(",") if e.strip()}
        self.specs = [
            _MiniSpecifier(m.group(1), m.group(2).strip())
            for m in re.finditer(r"(===|==|!=|~=|>=|<=|>|<)\s*([^,\s]+)", match.group(3) or "")
        ]
        marker = (match.group(4) or "").strip()
        self.marker = _Marker(marker) if marker else None

    def applies(self, extra: str, environment: dict[str, str]) -> bool:
        if self.marker is None:
            return extra == ""
        return self.marker.evaluate({**environment, "extra": extra})


class _Dist:
    """An installed distribution found by its metadata directory; METADATA is read on demand."""

    def __init__(self, location: str, version: str | None) -> None:
        self.location = location
        self._version = version
        self._header: list[str] | None = None

    def _lines(self) -> list[str]:
        if self._header is None:
            path = self.location
            if os.path.isdir(path):
                name = "METADATA" if path.endswith(".dist-info") else "PKG-INFO"
                path = os.path.join(path, name)
            try:
                with open(path, encoding="utf-8", errors="replace") as handle:
                    text = handle.read()
            except OSError:
                text = ""
            self._header = text.split("\n\n", 1)[0].splitlines()
        return self._header

    @property
    def version(self) -> str:
        if self._version is None:
            found = [line.split(":", 1)[1].strip() for line in self._lines() if line.startswith("Version:")]
            self._version = found[0] if found else ""
        return self._version

    @property
    def requires(self) -> list[str]:
        return [line.split(":", 1)[1].strip() for line in self._lines() if line.startswith("Requires-Dist:")]


def _installed() -> dict[str, _Dist]:
    """Every distribution on sys.path, the first of each name winning as for imports.

    Names and versions come from the ``name-version.dist-info`` directory names, which is what
    makes a re-run of a finished script fast; importlib.metadata would parse every METADATA.
    """
    found: dict[str, _Dist] = {}
    for entry in sys.path:
        try:
            # dist-infos first: in one folder a dist-info wins over an egg-info of its name
            names = sorted(os.listdir(entry or "."), key=lambda n: (n.endswith(".egg-info"), n))
        except OSError:
            continue
        for item in names:
            if not item.endswith((".dist-info", ".egg-info")):
                continue
            stem = item.rsplit(".", 1)[0]
            name, _, version = stem.partition("-")
            if item.endswith(".egg-info"):
                version = version.split("-", 1)[0]
            key = _canonical(name)
            if key and key not in found:
                found[key] = _Dist(os.path.join(entry or ".", item), version or None)
    return found


class _Checker:
    """Whether requirements are satisfied by what is installed in this interpreter."""

    def __init__(self) -> None:
        self.dists = _installed()
        self.environment = marker_environment()

    def satisfied(self, text: str, depth: int = 0) -> bool:
        """Installed, at exactly the pinned version (local tag included) or within the range."""
        req = _MiniRequirement(text)
        if req.marker is not None and not req.applies("", self.environment):
            return True
        dist = self.dists.get(_canonical(req.name))
        if dist is None:
            return False
        installed = dist.version
        try:
            if len(req.specs) == 1 and req.specs[0].operator == "==" and "*" not in (req.specs[0].version):
                if _MiniVersion(installed) != _MiniVersion(req.specs[0].version):
                    return False
            elif not all(spec.contains(installed) for spec in req.specs):
                return False
        except ValueError:
            return False
        if req.extras and depth < 4:
            return self._extras_satisfied(dist, req.extras, depth)
        return True

    def _extras_satisfied(self, dist: _Dist, extras: set[str], depth: int) -> bool:
        for line in dist.requires:
            sub = _MiniRequirement(line)
            if sub.marker is None or sub.applies("", self.environment):
                continue
            if not any(sub.applies(extra, self.environment) for extra in extras):
                continue
            if not self.satisfied(line.split(";", 1)[0].strip(), depth + 1):
                return False
        return True


def _lock_lines(path: str) -> list[str]:
    """The entries of a requirements lock, each on one line (its ``\\`` continuations joined,
    its ``--hash`` options kept), comments and option lines left out."""
    entries: list[str] = []
    logical = ""
    for raw in _read_text(path).splitlines():
        line = raw.strip()
        if line.endswith("\\"):
            logical += line[:-1] + " "
            continue
        logical += line
        entry, logical = logical.strip(), ""
        if entry and not entry.startswith(("#", "-")):
            entries.append(entry)
    return entries


def _lock_pins(path: str) -> list[str]:
    """The lock's pins, each with its environment marker (``name==version ; marker``): the
    installer skips a pin whose marker is false here, and so does :class:`_Checker`."""
    return [entry.split(" --hash", 1)[0].strip() for entry in _lock_lines(path)]


def _read_text(path: str) -> str:
    """A file the script wrote into its own work folder."""
    with open(path, encoding="utf-8") as handle:
        return handle.read()


def _lines(path: str) -> list[str]:
    """The non-blank lines of a list the script wrote (one requirement a line)."""
    return [line.strip() for line in _read_text(path).splitlines() if line.strip()]


def _pairs(path: str) -> list[tuple[str, str]]:
    """``NAME\\0VALUE\\0...``, as the script writes the ``[env]`` table (values may hold any
    character but NUL, newlines included)."""
    with open(path, "rb") as handle:
        items = handle.read().decode("utf-8").split("\0")
    if items and items[-1] == "":
        items.pop()
    return list(zip(items[0::2], items[1::2]))  # noqa: B905 (runs on Python 3.8)


# ---------------------------------------------------------------------------------------------
# Names shared with colabenv (colabenv.script.state): written in by colabenv.script.render for the script.

SHARED: dict[str, str] = {}

MAX_READ_BYTES = 1 << 20
"""What the helper reads of a file it does not own (the ``.pth`` hook, ``/proc`` files)."""
MAX_MARKER_BYTES = 16 << 20
"""What the helper reads of the restart marker: what ``verify`` reads of it
(``colabenv.script.marker.MAX_MARKER_BYTES``; a test holds the two equal), since a marker holds
the profile's requirements and ``[env]`` and may pass 1 MiB."""


def _shared(name: str) -> str:
    value = SHARED.get(name)
    if not value:
        raise SystemExit(f"helper: {name!r} was not written in by colabenv.script.render")
    return value


def _read_bounded(path: str, limit: int = MAX_READ_BYTES) -> str | None:
    """The text of the regular file at ``path`` (links followed), at most ``limit`` bytes;
    None for anything else: missing, a FIFO or device (never opened for blocking), too large."""
    import stat

    flags = os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_NOCTTY", 0) | getattr(os, "O_CLOEXEC", 0)
    try:
        fd = os.open(path, flags)
    except OSError:
        return None
    try:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode) or info.st_size > limit:
            return None
        data = os.read(fd, limit + 1)
        if len(data) > limit:
            return None
        return data.decode("utf-8", errors="replace")
    except OSError:
        return None
    finally:
        os.close(fd)


class _WriteProblem(Exception):
    """Why a file the script must write cannot be written, in words for one line."""


def _write_file(path: str, text: str) -> None:
    """Write ``text`` where ``path`` points, as ``colabenv -o`` does: a regular file or a link to
    one is replaced atomically at its real path (the link stays); a character device or a FIFO
    is written through, never replaced; a directory or anything else is refused."""
    import stat

    data = text.encode("utf-8")
    try:
        info: os.stat_result | None = os.stat(path)
    except FileNotFoundError:
        info = None
    except OSError as error:
        raise _WriteProblem(f"{path}: {error.strerror or error}") from None
    if info is not None:
        if stat.S_ISDIR(info.st_mode):
            raise _WriteProblem(f"{path}: is a directory")
        if stat.S_ISCHR(info.st_mode) or stat.S_ISFIFO(info.st_mode):
            _write_through(path, data)
            return
        if not stat.S_ISREG(info.st_mode):
            raise _WriteProblem(f"{path}: is not a regular file")
    real = os.path.realpath(path)
    try:
        _atomic_write(real, data)
    except OSError as error:
        raise _WriteProblem(f"{path}: {error.strerror or error}") from None


def _write_through(path: str, data: bytes) -> None:
    import fcntl

    try:
        fd = os.open(path, os.O_WRONLY | os.O_NONBLOCK | getattr(os, "O_NOCTTY", 0))
    except OSError as error:
        raise _WriteProblem(f"{path}: {error.strerror or error}") from None
    try:
        fcntl.fcntl(fd, fcntl.F_SETFL, fcntl.fcntl(fd, fcntl.F_GETFL) & ~os.O_NONBLOCK)
        view = memoryview(data)
        while view:
            view = view[os.write(fd, view) :]
    except OSError as error:
        raise _WriteProblem(f"{path}: {error.strerror or error}") from None
    finally:
        os.close(fd)


def _atomic_write(path: str, data: bytes) -> None:
    directory = os.path.dirname(path) or "."
    os.makedirs(directory, exist_ok=True)
    try:
        mode = os.stat(path).st_mode & 0o777
    except OSError:
        mode = 0o644
    for attempt in range(100):
        tmp = os.path.join(directory, f".{os.path.basename(path)}.{os.getpid()}.{attempt}")
        try:
            fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
            break
        except FileExistsError:
            continue
    else:
        raise OSError(f"no free temporary name beside {path}")
    try:
        with os.fdopen(fd, "wb") as handle:
            handle.write(data)
            handle.flush()
            os.fsync(handle.fileno())
        os.chmod(tmp, mode)
        os.replace(tmp, path)
    finally:
        if os.path.lexists(tmp):
            os.unlink(tmp)


def _remove_file(path: str) -> None:
    """Remove a regular file or a link; anything else at ``path`` is left and refused."""
    import stat

    try:
        info = os.lstat(path)
    except FileNotFoundError:
        return
    if not (stat.S_ISREG(info.st_mode) or stat.S_ISLNK(info.st_mode)):
        raise _WriteProblem(f"{path}: is not a regular file; not removed")
    try:
        os.unlink(path)
    except OSError as error:
        raise _WriteProblem(f"{path}: {error.strerror or error}") from None


# ---------------------------------------------------------------------------------------------
# Index URLs: ${VAR} expanded and percent-encoded for its place


_VAR_REF = re.compile(r"\$\{([A-Za-z_][A-Za-z0-9_]*)\}")
_HOST_CHARS = re.compile(r"[A-Za-z0-9.:\[\]-]*")


class UnsetVariable(ValueError):
    """A ``${VAR}`` in an index URL names a variable the environment does not have."""

    def __init__(self, name: str) -> None:
        super().__init__(f"index URL needs ${name}, which is not set")
        self.name = name


def expand_url(url: str, environ: Mapping[str, str]) -> str:
    """``url`` with each ``${VAR}`` replaced by its value, percent-encoded for where it stands:
    in the user or password of the userinfo, the query or the fragment everything but RFC 3986's
    unreserved characters is encoded; in the path ``/`` is kept too. A value in the host must be
    a host name (ValueError otherwise); an unset variable raises :class:`UnsetVariable`.

    The script and ``colabenv lock`` both expand index URLs with this one function.
    """
    scheme, separator, rest = url.partition("://")
    if not separator:
        return _expand(url, environ, "/")
    cut = min([i for i in (rest.find("/"), rest.find("?"), rest.find("#")) if i >= 0] + [len(rest)])
    authority, tail = rest[:cut], rest[cut:]
    userinfo, at, hostport = authority.rpartition("@")
    host = _expand(hostport, environ, None)
    if not _HOST_CHARS.fullmatch(host):
        raise ValueError(f"index URL {url}: the host is not a host name once expanded")
    head = f"{scheme}://"
    if at:
        head += ":".join(_expand(part, environ, "") for part in userinfo.split(":")) + "@"
    path, hash_mark, fragment = tail.partition("#")
    path, question, query = path.partition("?")
    expanded = head + host + _expand(path, environ, "/")
    if question:
        expanded += "?" + _expand(query, environ, "")
    if hash_mark:
        expanded += "#" + _expand(fragment, environ, "")
    return expanded


def _expand(text: str, environ: Mapping[str, str], safe: str | None) -> str:
    """``text`` with its ``${VAR}`` values quoted with ``safe`` kept (None: inserted as given)."""
    from urllib.parse import quote

    def value(match: re.Match[str]) -> str:
        name = match.group(1)
        if name not in environ:
            raise UnsetVariable(name)
        found = environ[name]
        return found if safe is None else quote(found, safe=safe)

    return _VAR_REF.sub(value, text)


def _index_location(url: str) -> str:
    """``host[:port]`` of ``url``: what a message may show of an index (no credentials, no path,
    which can hold a token)."""
    from urllib.parse import urlsplit

    parts = urlsplit(url)
    return parts.netloc.rpartition("@")[2] or url.split("://", 1)[0]


def _probe(url: str, timeout: float = 10.0) -> str | None:
    """Why the index at ``url`` cannot serve an install, or None when it answers."""
    import base64
    import urllib.error
    import urllib.request
    from urllib.parse import unquote, urlsplit

    parts = urlsplit(url)
    if parts.scheme not in ("http", "https"):
        return None
    where = _index_location(url)
    plain = parts._replace(netloc=parts.netloc.rpartition("@")[2]).geturl()
    request = urllib.request.Request(plain, headers={"User-Agent": "colabenv-script"})
    if parts.username is not None or parts.password is not None:
        pair = f"{unquote(parts.username or '')}:{unquote(parts.password or '')}"
        token = base64.b64encode(pair.encode("utf-8")).decode("ascii")
        request.add_header("Authorization", f"Basic {token}")
    try:
        with urllib.request.urlopen(request, timeout=timeout) as answer:
            answer.read(1)
    except urllib.error.HTTPError as error:
        if error.code >= 500:
            return f"the package index at {where} answered HTTP {error.code}"
        if error.code in (401, 403):
            return f"the package index at {where} refused the credentials (HTTP {error.code})"
        return None
    except (urllib.error.URLError, OSError, ValueError) as error:
        reason = getattr(error, "reason", error)
        text = getattr(reason, "strerror", None) or str(reason)
        return f"cannot reach the package index at {where} ({text})"
    return None


_ANSI = re.compile(r"\x1b\[[0-9;?]*[A-Za-z]")
_USERINFO = re.compile(r"(?i)\b([a-z][a-z0-9+.-]*://)[^/\s@]*@")


def _last_error(log: str) -> str | None:
    """The installer's last error line (pip's ``ERROR:``, uv's ``error:`` with its deepest
    ``cause``), else its last line."""
    text = _read_bounded(log, 8 * MAX_READ_BYTES) or ""
    lines = [_ANSI.sub("", line).rstrip() for line in text.splitlines()]
    lines = [line for line in lines if line.strip()]
    if not lines:
        return None
    found = None
    for number, line in enumerate(lines):
        if line.lower().startswith("error:"):
            found = number
    if found is None:
        return lines[-1].strip()
    message = lines[found].strip()
    causes = []
    for line in lines[found + 1 :]:
        if not line.startswith((" ", "\t")):
            break
        stripped = line.strip()
        for label in ("caused by:", "cause:"):
            if stripped.lower().startswith(label):
                causes.append(stripped[len(label) :].strip())
    if causes:
        message += f" ({causes[-1]})"
    return message


def _install_cause(log: str, templates: list[str]) -> str:
    """One line naming why an install failed: an index that cannot be reached, else what the
    installer said last; credentials never shown."""
    expanded = []
    for template in templates:
        try:
            url = expand_url(template, os.environ)
        except ValueError as error:
            return str(error)
        expanded.append((url, template))
        problem = _probe(url)
        if problem is not None:
            return problem
    message = _last_error(log) or "the installer failed without a message"
    for url, template in sorted(expanded, key=lambda pair: len(pair[0]), reverse=True):
        if url != template:
            message = message.replace(url, template).replace(url.rstrip("/"), template.rstrip("/"))
    message = _USERINFO.sub(r"\1****@", message)
    shown = "".join(ch if ch.isprintable() else " " for ch in message)
    return shown if len(shown) <= 400 else shown[:397] + "..."


# ---------------------------------------------------------------------------------------------
# The host


def _driver_version() -> str | None:
    import subprocess

    text = _read_bounded("/proc/driver/nvidia/version") or ""
    match = re.search(r"Kernel Module(?: for \S+)?\s+([0-9]+(?:\.[0-9]+)+)", text)
    if match:
        return match.group(1)
    try:
        out = subprocess.run(
            ["nvidia-smi", "--query-gpu=driver_version", "--format=csv,noheader"],
            capture_output=True,
            text=True,
            timeout=15,
            check=False,
        )
    except (OSError, subprocess.TimeoutExpired):
        return None
    first = out.stdout.strip().splitlines()[0].strip() if out.stdout.strip() else ""
    return first if out.returncode == 0 and re.fullmatch(r"[0-9]+(\.[0-9]+)+", first) else None


def _as_tuple(version: str) -> tuple[int, ...]:
    return tuple(int(part) for part in re.findall(r"[0-9]+", version))


HELPER_ROOT_VARIABLE = "COLABENV_HELPER_ROOT"
"""Set by tests only: a folder read in place of ``/`` for the AMD GPU files (``/dev/kfd``, the
KFD topology, ``/opt/rocm/.info/version``), so recorded hosts' trees stand in for a host's."""
KFD_NODES = "/sys/class/kfd/kfd/topology/nodes"
MAX_KFD_NODES = 1024
MAX_KFD_PROPERTIES_BYTES = 64 * 1024
DEFAULT_ROCM_PATH = "/opt/rocm"


def _host_path(path: str) -> str:
    root = os.environ.get(HELPER_ROOT_VARIABLE, "")
    return os.path.join(root, path.lstrip("/")) if root else path


def gfx_name(version: int) -> str | None:
    """A KFD node's ``gfx_target_version`` as the GPU's gfx name, as ``colabenv.host.kfd`` decodes
    it (``major * 10000 + minor * 100 + stepping``; minor and stepping one hex digit each:
    90402 -> gfx942, 90010 -> gfx90a, 110000 -> gfx1100); None for 0 (a CPU node) or a value no
    gfx name spells."""
    if not 10000 <= version < 1000000:
        return None
    major, minor, stepping = (version // 10000) % 100, (version // 100) % 100, version % 100
    if minor > 15 or stepping > 15:
        return None
    return f"gfx{major}{minor:x}{stepping:x}"


def kfd_gpus(root: str) -> list[tuple[int, str | None]]:
    """(node, gfx) of each GPU node of the KFD topology under ``root``, in node order, as
    ``colabenv.host.kfd`` reads them: a CPU node (``simd_count 0`` or ``gfx_target_version 0``)
    and a node that states neither are left out; gfx is None where the node states no usable
    ``gfx_target_version``."""
    folder = os.path.join(root, KFD_NODES.lstrip("/"))
    try:
        names = [name for name in os.listdir(folder) if name.isascii() and name.isdigit()]
    except OSError:
        return []
    gpus: list[tuple[int, str | None]] = []
    for name in sorted(names, key=int)[:MAX_KFD_NODES]:
        text = _read_bounded(os.path.join(folder, name, "properties"), MAX_KFD_PROPERTIES_BYTES)
        if text is None:
            continue
        values: dict[str, int] = {}
        for line in text.splitlines():
            parts = line.split()
            if len(parts) == 2 and parts[1].isascii() and parts[1].isdigit():
                values.setdefault(parts[0], int(parts[1]))
        if values.get("simd_count") == 0 or values.get("gfx_target_version") == 0:
            continue
        if "simd_count" not in values and "gfx_target_version" not in values:
            continue
        version = values.get("gfx_target_version")
        gpus.append((int(name), gfx_name(version) if version is not None else None))
    return gpus


def _rocm_version() -> tuple[str, str] | None:
    """The host's ROCm (``6.4.0``) and the file it was read from, ``$ROCM_PATH/.info/version``
    (``/opt/rocm``'s without it), as ``colabenv.host.rocm`` reads it; None where unreadable."""
    base = os.environ.get("ROCM_PATH", "").strip() or DEFAULT_ROCM_PATH
    shown = os.path.join(base, ".info", "version")
    text = _read_bounded(_host_path(shown), 256) or ""
    match = re.fullmatch(r"([0-9]{1,3}\.[0-9]{1,3}(?:\.[0-9]{1,4})?)(?:-[0-9]{1,9})?", text.strip())
    return (match.group(1), shown) if match else None


def _rocm_problem(gfx_list: str, rocm: str | None) -> str | None:
    """Why this host cannot run the chosen ROCm build, or None: no ``/dev/kfd`` (no amdgpu
    driver with KFD), a GPU whose gfx the build's list lacks (not asked where
    ``HSA_OVERRIDE_GFX_VERSION`` is set: the runtime then takes the GPUs for another gfx), a
    ROCm older than the build's where the host's is readable."""
    if not os.path.exists(_host_path("/dev/kfd")):
        return "no AMD GPU driver (no /dev/kfd)"
    wanted = [gfx for gfx in gfx_list.split(",") if gfx]
    if not os.environ.get("HSA_OVERRIDE_GFX_VERSION"):
        for node, gfx in kfd_gpus(_host_path("/")):
            if gfx is not None and gfx not in wanted:
                return (
                    f"the AMD GPU of KFD node {node} is {gfx}; the chosen build has kernels for "
                    f"{', '.join(wanted) or 'none'} only"
                )
    found = _rocm_version()
    if rocm and found is not None and _as_tuple(found[0])[:2] < _as_tuple(rocm)[:2]:
        return f"ROCm {found[0]} ({found[1]}) is older than {rocm}, which the chosen build needs"
    return None


def _this_platform() -> str:
    """This interpreter's platform as a wheel tag names it (``linux_x86_64``)."""
    import sysconfig

    return re.sub(r"[-.]", "_", sysconfig.get_platform())


def _free_threaded() -> bool:
    import sysconfig

    return bool(sysconfig.get_config_var("Py_GIL_DISABLED"))


def _site_packages() -> str:
    import sysconfig

    return sysconfig.get_paths()["purelib"]


def _interpreter_key() -> str:
    """This interpreter (``sys.executable``, as the marker records it) in a file name."""
    import hashlib

    return hashlib.sha256(sys.executable.encode("utf-8", "surrogateescape")).hexdigest()[:16]


def _pending_path(state: str, profile_hash: str) -> str:
    profile = re.sub(r"[^0-9a-z]", "", profile_hash.split(":")[-1].lower())[:16] or "none"
    name = _shared("pending").format(interpreter=_interpreter_key(), profile=profile)
    return os.path.join(state, name)


# ---------------------------------------------------------------------------------------------
# Commands


PREFLIGHT_WRONG_PYTHON = 3
PREFLIGHT_OLD_DRIVER = 4
PREFLIGHT_WRONG_HOST = 4
"""AMD GPUs the chosen wheels cannot run on: the exit of a driver too old (the script appends
its remedy to either)."""
RENDERED_PLATFORMS = ("linux_x86_64", "linux_aarch64")
"""The platforms colabenv renders for (``colabenv.models.target.PLATFORMS``); the first is the
one a script that names none was rendered for."""
PREFLIGHT_STATE_DIR = 5
PREFLIGHT_URL = 6
PREFLIGHT_LOCK_UNFIT = 7
PREFLIGHT_WRONG_PLATFORM = 8
"""Another platform than the one the script names: the line names the render that fits, so the
script prints it alone."""


def _options(args: list[str]) -> dict[str, list[str]]:
    """``--name value`` pairs (a name may repeat); every value is data, whatever it holds."""
    found: dict[str, list[str]] = {}
    for name, value in zip(args[0::2], args[1::2]):  # noqa: B905 (runs on Python 3.8)
        found.setdefault(name.lstrip("-"), []).append(value)
    return found


def _preflight(args: list[str]) -> int:
    """Every check before anything is installed, in one process ("-" skips a check): this
    Python, free-threaded or not, its platform, the AMD GPUs, the NVIDIA driver, every index
    URL's variables, the state directory, a lock's pins against the GPUs' component bounds.
    Then print whether a finished run left nothing to do (``satisfied``), only the
    requirements are met (``installed``) or not (``missing``), and the file that records what
    runs of this profile and interpreter changed."""
    options = _options(args)
    python = options["python"][0]
    driver = options["driver"][0]
    state = options["state"][0]
    here = f"{sys.version_info[0]}.{sys.version_info[1]}"
    if python != "-" and here != python:
        print(f"this is Python {here}, the script was rendered for {python}", file=sys.stderr)
        return PREFLIGHT_WRONG_PYTHON
    needs = options.get("python-needs", [""])[0]
    full = ".".join(str(n) for n in sys.version_info[:3])
    if python != "-" and needs and not all(s.contains(full) for s in _MiniRequirement("py" + needs).specs):
        print(f"this is Python {full}; the lock's pins need Python {needs}", file=sys.stderr)
        return PREFLIGHT_WRONG_PYTHON
    wrong_host = _host_problem(options) if python != "-" else None
    if wrong_host is not None:
        code, text = wrong_host
        print(text)  # the script's message, whichever the exit
        return code
    if driver != "-":
        found = _driver_version()
        if found is None:
            print("no NVIDIA driver found (no /proc/driver/nvidia/version, no nvidia-smi)", file=sys.stderr)
            return PREFLIGHT_OLD_DRIVER
        if _as_tuple(found) < _as_tuple(driver):
            print(
                f"NVIDIA driver {found} is older than {driver}, which the chosen wheels need", file=sys.stderr
            )
            return PREFLIGHT_OLD_DRIVER
    for template in options.get("url", []):
        try:
            expand_url(template, os.environ)
        except ValueError as error:
            print(error)
            return PREFLIGHT_URL
    problem = _state_dir_problem(state)
    if problem is not None:
        print(problem)
        return PREFLIGHT_STATE_DIR
    lock = options.get("lock", [None])[0]
    constraints = _lines(options["constraints"][0]) if "constraints" in options else []
    if lock is not None:
        unfit = _unfit_pins(_lock_pins(lock), constraints)
        if unfit:
            print("; ".join(unfit))
            return PREFLIGHT_LOCK_UNFIT
    profile_hash = options["hash"][0]
    pending = _pending_path(state, profile_hash)
    if os.path.islink(pending):  # the script appends to it: never through a link
        print(f"{pending} is a symbolic link; remove it")
        return PREFLIGHT_STATE_DIR
    reqs = _lock_pins(lock) if lock is not None else _lines(options["reqs"][0])
    met = all(_Checker().satisfied(req) for req in reqs)
    if not met:
        status = "missing"
    elif _finished(state, profile_hash, pending, _pairs(options["env"][0])):
        status = "satisfied"
    else:
        status = "installed"
    print(status)
    print(pending)
    return 0


def _host_problem(options: dict[str, list[str]]) -> tuple[int, str] | None:
    """The host checks of every script: a free-threaded Python or not (absent: not), the
    platform (absent: ``linux_x86_64``), and AMD GPUs through ROCm where the target has them.
    A Python of the other kind, or of another platform where the script names none, is exit 3
    (such a script's exit 4 is its NVIDIA driver's); a platform the script names is exit 8, its
    line naming its own fix; the AMD GPUs are exit 4, as a driver too old. Either way the line
    goes to stdout: it is the script's message."""
    free_threaded = options.get("free-threaded", ["no"])[0] == "yes"
    if _free_threaded() != free_threaded:
        return PREFLIGHT_WRONG_PYTHON, _gil_problem(free_threaded)
    named = options.get("platform", [""])[0]
    wanted, here = named or RENDERED_PLATFORMS[0], _this_platform()
    if here != wanted:
        fits = f"render it with --platform {here}"
        if here not in RENDERED_PLATFORMS:
            fits = f"colabenv renders for {' and '.join(RENDERED_PLATFORMS)} only"
        said = f"this is {here}, the script was rendered for {wanted}; {fits}"
        return (PREFLIGHT_WRONG_PLATFORM if named else PREFLIGHT_WRONG_PYTHON), said
    if "rocm-gfx" in options:
        problem = _rocm_problem(options["rocm-gfx"][0], options.get("rocm", [None])[0])
        if problem is not None:
            return PREFLIGHT_WRONG_HOST, problem
    return None


def _gil_problem(wanted: bool) -> str:
    """Why a Python with the GIL is not the free-threaded one the script was rendered for
    (``wanted``), or the other way round, and the ``--python`` that fits this one."""
    minor = f"{sys.version_info[0]}.{sys.version_info[1]}"
    if wanted:
        return (
            f"this is Python {minor} with the GIL, the script was rendered for Python {minor}t "
            f"(free-threaded); render it with --python {minor}"
        )
    return (
        f"this is Python {minor}t (free-threaded: Py_GIL_DISABLED), the script was rendered for "
        f"Python {minor} with the GIL; render it with --python {minor}t"
    )


def _state_dir_problem(state: str) -> str | None:
    import tempfile

    try:
        os.makedirs(state, exist_ok=True)
        with tempfile.NamedTemporaryFile(dir=state, prefix=".probe.") as probe:
            probe.write(b"\0" * 4096)  # a full file system fails here, not halfway through a run
            probe.flush()
    except OSError as exc:
        return exc.strerror or str(exc)
    return None


def _unfit_pins(pins: list[str], constraints: list[str]) -> list[str]:
    """The lock's pins that a component bound for this host's GPUs excludes."""
    bounds = [_MiniRequirement(text) for text in constraints]
    environment = marker_environment()
    unfit = []
    for pin in pins:
        requirement = _MiniRequirement(pin)
        if requirement.marker is not None and not requirement.applies("", environment):
            continue
        pin = pin.split(";", 1)[0].strip()
        name, _, version = pin.partition("==")
        for bound in bounds:
            if _canonical(bound.name) != _canonical(name):
                continue
            try:
                fits = all(spec.contains(version) for spec in bound.specs)
            except ValueError:
                fits = False
            if not fits:
                wanted = ",".join(spec.operator + spec.version for spec in bound.specs)
                unfit.append(
                    f"the lock pins {pin}, but this host's GPUs need {_canonical(bound.name)}{wanted}"
                )
    return unfit


def _finished(state: str, profile_hash: str, pending: str, env: list[tuple[str, str]]) -> bool:
    """Whether a finished run left everything in place: the fast path of a re-run."""
    if os.path.exists(pending):
        return False
    if not _marker_ok(os.path.join(state, _shared("marker")), profile_hash):
        return False
    hook = os.path.join(_site_packages(), _shared("env_hook"))
    current = _read_bounded(hook) if os.path.lexists(hook) else None
    return current == _env_hook_text(dict(env))


def _env_hook_text(pairs: dict[str, str]) -> str | None:
    """The ``.pth`` line that sets ``pairs``: ASCII only, since Python 3.12 and older read
    ``.pth`` files in the locale's encoding and one non-ASCII byte there stops every interpreter
    from starting under ``LC_ALL=C``; the values go in as their UTF-8 bytes (``os.environb``),
    which an interpreter whose file-system encoding is ASCII can hold too. A ``+NAME`` pair puts
    a flag into ``NAME`` after the others are set (``XLA_FLAGS`` keeps what it held)."""
    if not pairs:
        return None
    raw = {
        name.encode("utf-8"): value.encode("utf-8")
        for name, value in pairs.items()
        if not name.startswith("+") and not _VAR_REF.search(value)
    }
    line = f"import os; os.environb.update({raw!a})"
    line += _references_statement(pairs)
    for name, flag in pairs.items():
        if name.startswith("+"):
            line += _flag_statement(name[1:].encode("utf-8"), flag.encode("utf-8"))
    return line + "\n"


def _references_statement(pairs: dict[str, str]) -> str:
    """The hook's statement for the values that hold ``${VAR}`` references: each expanded from
    the environment as the interpreter has it then (after the literal values), by the index
    URLs' rule (:data:`_VAR_REF`) with the value inserted as it is; a name whose references are
    not all set is left as it was. The hook's file holds only the references, never a value."""
    templates = tuple(
        (name.encode("utf-8"), tuple(part.encode("utf-8") for part in _VAR_REF.split(value)))
        for name, value in pairs.items()
        if not name.startswith("+") and _VAR_REF.search(value)
    )
    if not templates:
        return ""
    return (
        "; os.environb.update({n: b''.join(os.environb[w] if i % 2 else w for i, w in enumerate(p))"
        f" for n, p in {templates!a} if all(w in os.environb for w in p[1::2])}})"
    )


def expand_value(text: str, environ: Mapping[str, str]) -> str:
    """An ``[env]`` value with each ``${VAR}`` replaced by its value from ``environ``, inserted
    as it is (the hook's expansion); an unset variable raises :class:`UnsetVariable`."""
    return _expand(text, environ, None)


def _flag_statement(name: bytes, flag: bytes) -> str:
    """The hook's statement for a ``+NAME`` pair: ``flag`` (``--x=v``) last in the space-separated
    ``NAME``, any word of the same ``--x`` taken out, the other words kept (colabenv.seeding)."""
    key = flag.split(b"=", 1)[0]
    return (
        f"; os.environb[{name!a}] = b' '.join([w for w in os.environb.get({name!a}, b'')"
        f".split() if w.split(b'=', 1)[0] != {key!a}] + [{flag!a}])"
    )


def _marker_ok(path: str, profile_hash: str) -> bool:
    """Whether the marker is this profile's, for this interpreter, and readable by ``verify``."""
    import json

    text = _read_bounded(path, MAX_MARKER_BYTES)
    if text is None:
        return False
    try:
        record = json.loads(text)
    except ValueError:
        return False
    if not isinstance(record, dict) or record.get("schema") != 1:
        return False
    kinds: dict[str, type | tuple[type, ...]] = {
        "colabenv": str,
        "profile": str,
        "profile_hash": str,
        "changed": bool,
        "written_at": (int, float),
        "installed": list,
        "requirements": list,
        "frameworks": dict,
        "env": dict,
        "verify": dict,
        "python": str,
    }
    if record.get("profile_hash") != profile_hash or record.get("python") != sys.executable:
        return False
    return all(isinstance(record.get(key), kind) for key, kind in kinds.items())


def _report_changes(snapshot: str, pending: str) -> int:
    """Name every distribution the install added, moved or removed, and record it as
    ``dist:NAME==VERSION`` in the pending list that becomes the marker's ``installed``."""
    before = {}
    for line in _read_text(snapshot).splitlines():
        if "==" in line:
            name, version = line.split("==", 1)
            before[name] = version
    after = {name: d.version for name, d in _installed().items()}
    moved = []
    for name in sorted(set(before) | set(after)):
        old, new = before.get(name), after.get(name)
        if old == new:
            continue
        moved.append(f"dist:{name}=={new or old}")
        if old is None:
            print(f"COLABENV: installed {name} {new}")
        elif new is None:
            print(f"COLABENV: removed {name} {old}")
        else:
            try:
                older = _MiniVersion(new) < _MiniVersion(old)
                direction = "DOWNGRADED" if older else "upgraded"
            except ValueError:
                direction = "changed"
            print(f"COLABENV: {direction} {name} {old} -> {new}")
    if moved:
        with open(pending, "a", encoding="utf-8") as handle:
            handle.write("".join(line + "\n" for line in moved))
    return 0


def _snapshot(path: str) -> None:
    lines = sorted(f"{name}=={d.version}" for name, d in _installed().items())
    with open(path, "w", encoding="utf-8") as handle:
        handle.write("\n".join(lines) + "\n")


def _missing(reqs: list[str], out: str, snapshot: str | None) -> int:
    """Write the requirements this environment does not satisfy to ``out``; with ``snapshot``,
    also what is installed now (the install's "before")."""
    checker = _Checker()
    unmet = [req for req in reqs if not checker.satisfied(req)]
    with open(out, "w", encoding="utf-8") as handle:
        handle.write("".join(req + "\n" for req in unmet))
    if snapshot is not None and unmet:
        _snapshot(snapshot)
    return 0


def _write_env(env_file: str) -> int:
    hook = os.path.join(_site_packages(), _shared("env_hook"))
    wanted = _env_hook_text(dict(_pairs(env_file)))
    current = _read_bounded(hook) if os.path.lexists(hook) else None
    if current == wanted:
        return 0
    try:
        if wanted is None:
            _remove_file(hook)
        else:
            _write_file(hook, wanted)
    except _WriteProblem as problem:
        print(f"cannot write the [env] hook {problem}")
        return 1
    print("changed")
    return 0


def _write_marker(state: str, record_file: str, changed: str, pending: str) -> int:
    import json
    import time

    record = json.loads(_read_text(record_file))
    lines = _lines(pending) if os.path.exists(pending) else []
    record["installed"] = list(dict.fromkeys(lines))
    record["changed"] = changed == "1"
    record["written_at"] = time.time()
    record["python"] = sys.executable
    text = json.dumps(record, indent=2, sort_keys=True, ensure_ascii=True)
    try:
        _write_file(os.path.join(state, _shared("marker")), text)
    except _WriteProblem as problem:
        print(f"cannot write the restart marker {problem}")
        return 1
    return 0


def _start_time(pid: int) -> str | None:
    """When process ``pid`` started (clock ticks since boot, /proc/PID/stat); None when it is
    gone or a zombie (an ended process its parent has not reaped yet)."""
    text = _read_bounded(f"/proc/{pid}/stat")
    if not text:
        return None
    fields = text.rsplit(")", 1)[-1].split()
    if len(fields) < 20 or fields[0] == "Z":
        return None
    return fields[19]


def _lock_holders(lock_file: str, identity: tuple[int, int]) -> list[int]:
    """The processes that have the run lock open (/proc/PID/fd), this one left out."""
    found = []
    try:
        pids = [int(name) for name in os.listdir("/proc") if name.isdigit()]
    except OSError:
        return []
    for pid in sorted(pids):
        if pid == os.getpid():
            continue
        try:
            fds = os.listdir(f"/proc/{pid}/fd")
        except OSError:
            continue
        for fd in fds:
            try:
                info = os.stat(f"/proc/{pid}/fd/{fd}")
            except OSError:
                continue
            if (info.st_dev, info.st_ino) == identity:
                found.append(pid)
                break
    return found


def _holder(lock_file: str, identity: tuple[int, int]) -> str:
    """Who holds the run lock: the run the lock file names when it is alive, else a process that
    has the file open (a run's child that inherited it from an older script), else unknown."""
    recorded = (_read_bounded(lock_file) or "").split()
    if recorded and recorded[0].isdigit():
        started = _start_time(int(recorded[0]))
        if started is not None and recorded[1:2] in ([], [started]):
            return recorded[0]
    holders = _lock_holders(lock_file, identity)
    return str(holders[0]) if holders else "unknown"


def _alive(pid: int, started: str) -> bool:
    """Whether process ``pid`` is still the one that started at ``started`` ("-": no /proc)."""
    if started != "-":
        return _start_time(pid) == started
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except OSError:
        return True
    return True


def _wait_for_exit(pid: int, started: str) -> None:
    """Return once process ``pid`` (started at ``started``) has ended."""
    import select
    import time

    opener = getattr(os, "pidfd_open", None)
    if opener is not None:
        try:
            pidfd = opener(pid)
        except OSError:
            pidfd = None
        if pidfd is not None:
            if _alive(pid, started):
                select.select([pidfd], [], [])
            os.close(pidfd)
            return
    while _alive(pid, started):
        time.sleep(0.2)


def _answer_preflight(args: list[str]) -> None:
    """Run ``preflight`` with ``args`` (none: nothing), its exit and its lines on stdout."""
    import contextlib
    import io

    if not args:
        return
    said = io.StringIO()
    with contextlib.redirect_stdout(said):
        code = _preflight(args)
    lines = said.getvalue().splitlines()
    print(f"{code} {len(lines)}")
    print("".join(line + "\n" for line in lines), end="", flush=True)


def _hold_lock(lock_file: str, owner: str, challenge: str, preflight: list[str]) -> int:
    """Take the run lock for the script whose pid is ``owner`` and hold it until that script ends.

    The lock belongs to this process alone: the file is opened close-on-exec and never through a
    link, so nothing the script starts (an apt post-install daemon, a build server) inherits it,
    and it is released the moment the script is gone, however it ended. The script reads one
    line: ``locked ANSWER`` (the answer to its challenge proves this is a Python running the
    helper), ``unlocked ANSWER`` when the state directory cannot hold a lock (the preflight says
    why), or ``error MESSAGE``; a waiting run's line comes before it. Then, holding the lock,
    this process runs the ``preflight`` command (arguments ``preflight``): ``EXIT COUNT`` and
    the COUNT lines it printed, one interpreter started where the script needs two.
    """
    import errno
    import fcntl
    import signal
    import stat
    import time

    answer = str(int(challenge) * int(challenge))
    owner_pid = int(owner)
    started = _start_time(owner_pid) if _start_time(os.getpid()) is not None else "-"
    if started is None:
        return 1
    flags = os.O_RDWR | os.O_CREAT | os.O_NONBLOCK | getattr(os, "O_NOFOLLOW", 0)
    flags |= getattr(os, "O_CLOEXEC", 0) | getattr(os, "O_NOCTTY", 0)
    waiting = False
    while True:
        try:
            fd = os.open(lock_file, flags, 0o644)
        except OSError as error:
            if error.errno == errno.ELOOP:
                print(f"error the run lock {lock_file} is a symbolic link; remove it", flush=True)
                return 1
            print(f"unlocked {answer}", flush=True)
            _answer_preflight(preflight)
            return 0
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode):
            print(f"error the run lock {lock_file} is not a regular file", flush=True)
            return 1
        identity = (info.st_dev, info.st_ino)
        while True:
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                break
            except OSError:
                pass
            if not waiting:
                waiting = True
                print("waiting " + _shared("waiting").format(pid=_holder(lock_file, identity)), flush=True)
            if not _alive(owner_pid, started):
                return 1
            time.sleep(0.1)
        try:
            now = os.stat(lock_file, follow_symlinks=False)
        except OSError:
            now = None
        if now is not None and (now.st_dev, now.st_ino) == identity:
            break
        os.close(fd)  # the file was removed or replaced while this run waited: lock the new one
    try:
        os.ftruncate(fd, 0)
        os.pwrite(fd, f"{owner_pid} {started}\n".encode("ascii"), 0)
    except OSError as error:
        print(f"error cannot write the run lock {lock_file}: {error.strerror or error}", flush=True)
        return 1
    print(f"locked {answer}", flush=True)
    _answer_preflight(preflight)
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    quiet = os.open(os.devnull, os.O_RDWR)
    for number in (0, 1, 2):
        os.dup2(quiet, number)
    _wait_for_exit(owner_pid, started)
    return 0


def main(argv: list[str]) -> int:
    if not argv:
        print("usage: helper COMMAND ...", file=sys.stderr)
        return 2
    command, args = argv[0], argv[1:]
    if command == "preflight":
        return _preflight(args)
    if command == "missing":
        return _missing(_lines(args[0]), args[1], args[2] if len(args) > 2 else None)
    if command == "missing-lock":
        return _missing(_lock_pins(args[0]), args[1], args[2] if len(args) > 2 else None)
    if command == "report-changes":
        return _report_changes(args[0], args[1])
    if command == "expand-url":
        try:
            print(" ".join(expand_url(url, os.environ) for url in args))
        except ValueError as error:
            print(error, file=sys.stderr)
            return PREFLIGHT_URL
        return 0
    if command == "install-cause":
        print(_install_cause(args[0], args[1:]))
        return 0
    if command == "write-env":
        return _write_env(args[0])
    if command == "write-marker":
        return _write_marker(*args[:4])
    if command == "marker-ok":
        return 0 if _marker_ok(os.path.join(args[0], _shared("marker")), args[1]) else 1
    if command == "hold-lock":
        return _hold_lock(args[0], args[1], args[2], args[4:] if args[3:4] == ["preflight"] else [])
    print(f"unknown helper command {command!r}", file=sys.stderr)
    return 2


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))

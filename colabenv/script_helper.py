"""The helper program embedded in every bootstrap script, run by the target's own Python.

It must run on any Python >= 3.8 with nothing but the standard library, so it carries its own
small PEP 440 / PEP 508 reading (versions, specifiers, markers; tested against packaging).
Every value reaches it as an argument, never through the shell, so no profile string is
evaluated.

Sub-commands (``python helper.py COMMAND ...``)::

    preflight X.Y DRIVER DIR [HASH N NAME VALUE ... (reqs REQ ... | lock FILE)]
                                  exit 3 unless this is Python X.Y, 4 unless the NVIDIA driver
                                  is at least DRIVER, 5 unless DIR can be written ("-" skips);
                                  print "satisfied" when a finished run left nothing to do
    missing REQ...                print the requirements this environment does not satisfy
    missing-lock LOCKFILE         the same for the pins of a requirements lock
    snapshot FILE                 record name==version of every installed distribution
    report-changes FILE [PENDING] name what changed since the snapshot; record it in PENDING
    expand-url URL                expand ${VAR} references from the environment
    write-env NAME VALUE ...      write (or remove) the .pth hook that sets [env] variables
    write-marker DIR JSON CHANGED INSTALLED-FILE
                                  write the restart marker atomically
    marker-ok DIR HASH            exit 1 when the marker is missing, unreadable, incomplete or
                                  another profile's
"""

from __future__ import annotations

import os
import re
import sys
from pathlib import Path
from typing import Any

ENV_HOOK_NAME = "colabenv_env.pth"
MARKER_NAME = "restart-marker.json"


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
            return (
                version.public_key >= spec.public_key
                and version.release[: len(prefix)] == prefix
            )
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


_VERSION_VARIABLES = {"implementation_version", "platform_release", "python_full_version",
                      "python_version"}


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
            found = [line.split(":", 1)[1].strip() for line in self._lines()
                     if line.startswith("Version:")]
            self._version = found[0] if found else ""
        return self._version

    @property
    def requires(self) -> list[str]:
        return [line.split(":", 1)[1].strip() for line in self._lines()
                if line.startswith("Requires-Dist:")]


def _installed() -> dict[str, _Dist]:
    """Every distribution on sys.path, the first of each name winning as for imports.

    Names and versions come from the ``name-version.dist-info`` directory names, which is what
    makes a re-run of a finished script fast; importlib.metadata would parse every METADATA.
    """
    found: dict[str, _Dist] = {}
    for entry in sys.path:
        try:
            names = sorted(os.listdir(entry or "."))
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
            if len(req.specs) == 1 and req.specs[0].operator == "==" and "*" not in (
                req.specs[0].version
            ):
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


def _lock_pins(path: str) -> list[str]:
    pins: list[str] = []
    logical = ""
    for raw in Path(path).read_text(encoding="utf-8").splitlines():
        line = raw.strip()
        if line.endswith("\\"):
            logical += line[:-1] + " "
            continue
        logical += line
        entry, logical = logical.strip(), ""
        if not entry or entry.startswith(("#", "-")):
            continue
        pins.append(entry.split(" --hash", 1)[0].split(";", 1)[0].strip())
    return pins


def _driver_version() -> str | None:
    import subprocess

    proc = Path("/proc/driver/nvidia/version")
    try:
        match = re.search(r"Kernel Module(?: for \S+)?\s+([0-9]+(?:\.[0-9]+)+)", proc.read_text())
        if match:
            return match.group(1)
    except OSError:
        pass
    try:
        out = subprocess.run(
            ["nvidia-smi", "--query-gpu=driver_version", "--format=csv,noheader"],
            capture_output=True, text=True, timeout=15, check=False,
        )
    except (OSError, subprocess.TimeoutExpired):
        return None
    first = out.stdout.strip().splitlines()[0].strip() if out.stdout.strip() else ""
    return first if out.returncode == 0 and re.fullmatch(r"[0-9]+(\.[0-9]+)+", first) else None


def _as_tuple(version: str) -> tuple[int, ...]:
    return tuple(int(part) for part in re.findall(r"[0-9]+", version))


def _atomic_write(path: Path, text: str) -> None:
    import tempfile

    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", dir=str(path.parent))
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as handle:
            handle.write(text)
            handle.flush()
            os.fsync(handle.fileno())
        os.replace(tmp, path)
    except BaseException:
        if os.path.exists(tmp):
            os.unlink(tmp)
        raise


def _site_packages() -> Path:
    import sysconfig

    return Path(sysconfig.get_paths()["purelib"])


def main(argv: list[str]) -> int:
    if not argv:
        print("usage: helper COMMAND ...", file=sys.stderr)
        return 2
    command, args = argv[0], argv[1:]
    if command == "preflight":
        status = _preflight(*args[:3])
        if status == 0 and len(args) > 3 and _nothing_to_do(args[2], args[3], args[4:]):
            print("satisfied")
        return status
    if command in ("missing", "missing-lock"):
        reqs = _lock_pins(args[0]) if command == "missing-lock" else args
        checker = _Checker()
        for req in reqs:
            if not checker.satisfied(req):
                print(req)
        return 0
    if command == "snapshot":
        lines = sorted(f"{name}=={d.version}" for name, d in _installed().items())
        Path(args[0]).write_text("\n".join(lines) + "\n", encoding="utf-8")
        return 0
    if command == "report-changes":
        return _report_changes(Path(args[0]), Path(args[1]) if len(args) > 1 else None)
    if command == "expand-url":
        print(os.path.expandvars(args[0]))
        return 0
    if command == "write-env":
        pairs = dict(zip(args[0::2], args[1::2]))  # noqa: B905 (runs on Python 3.8)
        hook = _site_packages() / ENV_HOOK_NAME
        current = hook.read_text(encoding="utf-8") if hook.exists() else None
        wanted = _env_hook_text(pairs)
        if current == wanted:
            return 0
        if wanted is None:
            hook.unlink()
        else:
            _atomic_write(hook, wanted)
        print("changed")
        return 0
    if command == "write-marker":
        import json
        import time

        state, static, changed, pending_file = args[:4]
        record = json.loads(static)
        pending = Path(pending_file)
        lines = pending.read_text(encoding="utf-8").splitlines() if pending.exists() else []
        record["installed"] = list(dict.fromkeys(line for line in lines if line))
        record["changed"] = changed == "1"
        record["written_at"] = time.time()
        record["python"] = sys.executable
        _atomic_write(Path(state) / MARKER_NAME, json.dumps(record, indent=2, sort_keys=True))
        return 0
    if command == "marker-ok":
        return 0 if _marker_ok(Path(args[0]) / MARKER_NAME, args[1]) else 1
    print(f"unknown helper command {command!r}", file=sys.stderr)
    return 2


PREFLIGHT_WRONG_PYTHON = 3
PREFLIGHT_OLD_DRIVER = 4
PREFLIGHT_STATE_DIR = 5


def _preflight(python: str, driver: str, state: str) -> int:
    """One process for every check before anything is installed ("-" skips a check)."""
    here = f"{sys.version_info[0]}.{sys.version_info[1]}"
    if python != "-" and here != python:
        print(f"this is Python {here}, the script was rendered for {python}", file=sys.stderr)
        return PREFLIGHT_WRONG_PYTHON
    if driver != "-":
        found = _driver_version()
        if found is None:
            print("no NVIDIA driver found (no /proc/driver/nvidia/version, no nvidia-smi)",
                  file=sys.stderr)
            return PREFLIGHT_OLD_DRIVER
        if _as_tuple(found) < _as_tuple(driver):
            print(f"NVIDIA driver {found} is older than {driver}, which the chosen wheels need",
                  file=sys.stderr)
            return PREFLIGHT_OLD_DRIVER
    import tempfile

    directory = Path(state)
    try:
        directory.mkdir(parents=True, exist_ok=True)
        with tempfile.NamedTemporaryFile(dir=str(directory), prefix=".probe."):
            pass
    except OSError as exc:
        print(f"state directory {directory} is not writable: {exc.strerror or exc}",
              file=sys.stderr)
        return PREFLIGHT_STATE_DIR
    return 0


def _env_hook_text(pairs: dict[str, str]) -> str | None:
    return f"import os; os.environ.update({pairs!r})\n" if pairs else None


def _nothing_to_do(state: str, profile_hash: str, rest: list[str]) -> bool:
    """Whether a finished run already left everything in place: the fast path of a re-run.

    ``rest`` is ``N NAME VALUE ... (N pairs) reqs REQ ...`` or ``N NAME VALUE ... lock FILE``;
    counting the pairs keeps any value, "--reqs" included, a value.
    """
    if Path(state, "pending-installs.txt").exists():
        return False
    if not _marker_ok(Path(state) / MARKER_NAME, profile_hash):
        return False
    count = int(rest[0])
    env = rest[1 : 1 + 2 * count]
    kind, items = rest[1 + 2 * count], rest[2 + 2 * count :]
    pairs = dict(zip(env[0::2], env[1::2]))  # noqa: B905 (runs on Python 3.8)
    hook = _site_packages() / ENV_HOOK_NAME
    current_hook = hook.read_text(encoding="utf-8") if hook.exists() else None
    if current_hook != _env_hook_text(pairs):
        return False
    reqs = _lock_pins(items[0]) if kind == "lock" else items
    checker = _Checker()
    return all(checker.satisfied(req) for req in reqs)


def _marker_ok(path: Path, profile_hash: str) -> bool:
    """Whether the marker is this profile's and ``colabenv verify`` can read it."""
    import json

    try:
        record = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return False
    if not isinstance(record, dict) or record.get("schema") != 1:
        return False
    kinds: dict[str, type | tuple[type, ...]] = {
        "colabenv": str, "profile": str, "profile_hash": str, "changed": bool,
        "written_at": (int, float), "installed": list, "requirements": list,
        "frameworks": dict, "env": dict, "verify": dict,
    }
    if record.get("profile_hash") != profile_hash:
        return False
    return all(isinstance(record.get(key), kind) for key, kind in kinds.items())


def _report_changes(snapshot: Path, pending: Path | None) -> int:
    """Name every distribution the install added, moved or removed, and record it as
    ``dist:NAME==VERSION`` in the pending list that becomes the marker's ``installed``."""
    before = {}
    for line in snapshot.read_text(encoding="utf-8").splitlines():
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
    if pending is not None and moved:
        with open(pending, "a", encoding="utf-8") as handle:
            handle.write("".join(line + "\n" for line in moved))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))

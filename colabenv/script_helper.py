"""The helper program embedded in every bootstrap script, run by the target's own Python.

It must run on any Python >= 3.8 with nothing but the standard library: ``packaging`` is used
when importable (or pip's vendored copy), and exact ``==`` pins are handled without it. Every
value reaches it as an argument, never through the shell, so no profile string is evaluated.

Sub-commands (``python helper.py COMMAND ...``)::

    python-is X.Y                 exit 1 unless this interpreter is Python X.Y
    driver-at-least V             exit 1 unless the host NVIDIA driver is at least V
    state-dir DIR                 create DIR and prove it is writable
    missing REQ...                print the requirements this environment does not satisfy
    missing-lock LOCKFILE         the same for the pins of a requirements lock
    snapshot FILE                 record name==version of every installed distribution
    report-changes FILE           name what changed since the snapshot (downgrades first)
    expand-url URL                expand ${VAR} references from the environment
    write-env NAME VALUE ...      write (or remove) the .pth hook that sets [env] variables
    write-marker DIR JSON CHANGED INSTALLED-FILE
                                  write the restart marker atomically
    marker-ok DIR                 exit 1 when the marker is missing, unreadable or incomplete
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import sysconfig
import tempfile
import time
from pathlib import Path
from typing import Any

ENV_HOOK_NAME = "colabenv_env.pth"
MARKER_NAME = "restart-marker.json"


def _canonical(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


def _packaging() -> Any:
    try:
        import packaging.markers
        import packaging.requirements
        import packaging.specifiers
        import packaging.version

        return packaging
    except ImportError:
        pass
    try:
        import pip._vendor.packaging.markers
        import pip._vendor.packaging.requirements
        import pip._vendor.packaging.version  # noqa: F401
        from pip._vendor import packaging as vendored

        return vendored
    except ImportError:
        return None

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
    """PEP 440 ordering for when neither packaging nor pip is importable in the target."""

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
        has_post = post_a is not None or post_b is not None or re.search(
            r"(post|rev|r)", text[len(release):] or "", re.IGNORECASE) is not None
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


class _MiniRequirement:
    """``name[extras] specifiers ; marker`` with only ``extra == "x"`` markers understood."""

    _RE = re.compile(
        r"^\s*([A-Za-z0-9][A-Za-z0-9._-]*)\s*(?:\[([^\]]*)\])?\s*\(?([^;()]*)\)?\s*(?:;(.*))?$"
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
        self.marker_extras = set(re.findall(r"extra\s*==\s*[\"']([^\"']+)[\"']", marker))

    def applies(self, extra: str) -> bool:
        return extra in self.marker_extras if self.marker_extras else extra == ""



def _installed() -> dict[str, Any]:
    from importlib import metadata

    found: dict[str, Any] = {}
    for dist in metadata.distributions():
        name = dist.metadata["Name"]
        if name and _canonical(name) not in found:
            found[_canonical(name)] = dist
    return found


def _normal(version: str, pkg: Any) -> str:
    if pkg is not None:
        try:
            return str(pkg.version.Version(version))
        except Exception:
            return version
    return version.lower()


class _Checker:
    def __init__(self) -> None:
        self.pkg = _packaging()
        self.dists = _installed()

    def _parse(self, text: str) -> tuple[str, set[str], list[tuple[str, str]], Any]:
        if self.pkg is None:
            mini = _MiniRequirement(text)
            specs = [(s.operator, s.version) for s in mini.specs]
            return mini.name, mini.extras, specs, mini
        req = self.pkg.requirements.Requirement(text)
        return req.name, set(req.extras), [(s.operator, s.version) for s in req.specifier], req

    def _applies(self, parsed: Any, extra: str) -> bool:
        if isinstance(parsed, _MiniRequirement):
            return parsed.applies(extra)
        return parsed.marker is None or bool(parsed.marker.evaluate({"extra": extra}))

    def _contains(self, parsed: Any, installed: str) -> bool:
        try:
            if isinstance(parsed, _MiniRequirement):
                return all(spec.contains(installed) for spec in parsed.specs)
            return bool(parsed.specifier.contains(installed, prereleases=True))
        except Exception:
            return False

    def _same(self, installed: str, wanted: str) -> bool:
        if self.pkg is None:
            try:
                return _MiniVersion(installed) == _MiniVersion(wanted)
            except ValueError:
                return installed.lower() == wanted.lower()
        return _normal(installed, self.pkg) == _normal(wanted, self.pkg)

    def satisfied(self, text: str, depth: int = 0) -> bool:
        """Installed, at exactly the pinned version (local tag included) or within the range."""
        name, extras, specs, parsed = self._parse(text)
        if not self._applies(parsed, ""):
            return True
        dist = self.dists.get(_canonical(name))
        if dist is None:
            return False
        installed = dist.version
        if len(specs) == 1 and specs[0][0] == "==" and "*" not in specs[0][1]:
            if not self._same(installed, specs[0][1]):
                return False
        elif specs and not self._contains(parsed, installed):
            return False
        if extras and depth < 4:
            return self._extras_satisfied(dist, extras, depth)
        return True

    def _extras_satisfied(self, dist: Any, extras: set[str], depth: int) -> bool:
        for line in dist.requires or []:
            _name, _extras, _specs, sub = self._parse(line)
            if self._applies(sub, ""):
                continue
            if not any(self._applies(sub, extra) for extra in extras):
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
    return Path(sysconfig.get_paths()["purelib"])


def main(argv: list[str]) -> int:
    if not argv:
        print("usage: helper COMMAND ...", file=sys.stderr)
        return 2
    command, args = argv[0], argv[1:]
    if command == "python-is":
        here = f"{sys.version_info[0]}.{sys.version_info[1]}"
        if here != args[0]:
            print(f"this is Python {here}, the script was rendered for {args[0]}", file=sys.stderr)
            return 1
        return 0
    if command == "driver-at-least":
        driver = _driver_version()
        if driver is None:
            print("no NVIDIA driver found (no /proc/driver/nvidia/version, no nvidia-smi)",
                  file=sys.stderr)
            return 1
        if _as_tuple(driver) < _as_tuple(args[0]):
            print(f"NVIDIA driver {driver} is older than {args[0]}, which the chosen wheels need",
                  file=sys.stderr)
            return 1
        print(driver)
        return 0
    if command == "state-dir":
        directory = Path(args[0])
        try:
            directory.mkdir(parents=True, exist_ok=True)
            with tempfile.NamedTemporaryFile(dir=str(directory), prefix=".probe."):
                pass
        except OSError as exc:
            print(f"state directory {directory} is not writable: {exc.strerror or exc}",
                  file=sys.stderr)
            return 1
        return 0
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
        return _report_changes(Path(args[0]))
    if command == "expand-url":
        print(os.path.expandvars(args[0]))
        return 0
    if command == "write-env":
        pairs = dict(zip(args[0::2], args[1::2]))  # noqa: B905 (runs on Python 3.8)
        hook = _site_packages() / ENV_HOOK_NAME
        current = hook.read_text(encoding="utf-8") if hook.exists() else None
        wanted = f"import os; os.environ.update({pairs!r})\n" if pairs else None
        if current == wanted:
            return 0
        if wanted is None:
            hook.unlink()
        else:
            _atomic_write(hook, wanted)
        print("changed")
        return 0
    if command == "write-marker":
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
        return 0 if _marker_ok(Path(args[0]) / MARKER_NAME) else 1
    print(f"unknown helper command {command!r}", file=sys.stderr)
    return 2


def _marker_ok(path: Path) -> bool:
    """Whether ``colabenv verify`` can read the marker (``colabenv/marker.py``'s fields)."""
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
    return all(isinstance(record.get(key), kind) for key, kind in kinds.items())


def _report_changes(snapshot: Path) -> int:
    pkg = _packaging()
    before = {}
    for line in snapshot.read_text(encoding="utf-8").splitlines():
        if "==" in line:
            name, version = line.split("==", 1)
            before[name] = version
    after = {name: d.version for name, d in _installed().items()}
    for name in sorted(set(before) | set(after)):
        old, new = before.get(name), after.get(name)
        if old == new:
            continue
        if old is None:
            print(f"COLABENV: installed {name} {new}")
        elif new is None:
            print(f"COLABENV: removed {name} {old}")
        else:
            direction = "changed"
            if pkg is not None:
                try:
                    older = pkg.version.Version(new) < pkg.version.Version(old)
                    direction = "DOWNGRADED" if older else "upgraded"
                except Exception:
                    direction = "changed"
            print(f"COLABENV: {direction} {name} {old} -> {new}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))

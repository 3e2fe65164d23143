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
_PIN_RE = re.compile(
    r"^\s*([A-Za-z0-9][A-Za-z0-9._-]*)\s*(?:\[([^\]]*)\])?\s*==\s*([A-Za-z0-9.+!_-]+)\s*$"
)


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
        from pip._vendor import packaging as vendored

        import pip._vendor.packaging.markers
        import pip._vendor.packaging.requirements
        import pip._vendor.packaging.version  # noqa: F401

        return vendored
    except ImportError:
        return None


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

    def satisfied(self, text: str, depth: int = 0) -> bool:
        pin = _PIN_RE.match(text)
        if self.pkg is None:
            if pin is None:
                return False
            dist = self.dists.get(_canonical(pin.group(1)))
            return dist is not None and dist.version.lower() == pin.group(3).lower() and (
                not pin.group(2)
            )
        req = self.pkg.requirements.Requirement(text)
        if req.marker is not None and not req.marker.evaluate({"extra": ""}):
            return True
        dist = self.dists.get(_canonical(req.name))
        if dist is None:
            return False
        installed = dist.version
        specs = list(req.specifier)
        if len(specs) == 1 and specs[0].operator == "==" and "*" not in specs[0].version:
            if _normal(installed, self.pkg) != _normal(specs[0].version, self.pkg):
                return False
        elif specs:
            try:
                if not req.specifier.contains(installed, prereleases=True):
                    return False
            except Exception:
                return False
        if req.extras and depth < 4:
            return self._extras_satisfied(dist, req.extras, depth)
        return True

    def _extras_satisfied(self, dist: Any, extras: set[str], depth: int) -> bool:
        for line in dist.requires or []:
            sub = self.pkg.requirements.Requirement(line)
            if sub.marker is None:
                continue
            if not any(sub.marker.evaluate({"extra": extra}) for extra in extras):
                continue
            if sub.marker.evaluate({"extra": ""}):
                continue
            plain = str(sub).split(";", 1)[0].strip()
            if not self.satisfied(plain, depth + 1):
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
        here = "%d.%d" % sys.version_info[:2]
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
            probe = tempfile.NamedTemporaryFile(dir=str(directory), prefix=".probe.", delete=True)
            probe.close()
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
        pairs = dict(zip(args[0::2], args[1::2]))
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
    print(f"unknown helper command {command!r}", file=sys.stderr)
    return 2


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

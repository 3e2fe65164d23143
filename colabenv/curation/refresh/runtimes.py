"""``colabenv catalog refresh runtimes``: the Colab runtime versions googlecolab/backend-info
lists that ``runtimes.toml`` lacks, read from the files upstream keeps at each version's commit.

Upstream's README lists the versions a notebook can pin, newest first, each as a
``### 2026.07`` heading and a link to the commit (``.../tree/<40 hex digits>``) whose
``os-info*.txt``, ``pip-freeze*.txt`` and ``apt-list*.txt`` describe it. From 2026.01 on each
image has its own files (``pip-freeze.gpu.txt``, ``pip-freeze.txt`` for the CPU image,
``pip-freeze.tpu.txt``); before, one ``pip-freeze.txt`` served the GPU and the CPU image.
A version the file has is kept as it is; one whose commit upstream names differently is
reported, not rewritten.

A fresh notebook gets none of those: it runs the image of upstream's head (the newest commit on
``main``), which the README lists only once it becomes a version. That image is written as
``colab-latest`` with the date of its commit, read from the head's own files; it is replaced when
the head moves, and dropped when the head is a listed version's commit.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence

from colabenv.errors import printable
from colabenv.models.frozen import model
from colabenv.models.runtimes import LATEST

BACKEND_INFO = "https://raw.githubusercontent.com/googlecolab/backend-info"
"""Where upstream's files are read: ``{BACKEND_INFO}/{commit or branch}/{file}``."""
TREE_URL = "https://github.com/googlecolab/backend-info/tree/"
"""The source each entry names: the commit's tree, as upstream's README links it."""
README_REF = "main"
GITHUB_API = "https://api.github.com/repos/googlecolab/backend-info"
"""Where upstream's head is read: ``{GITHUB_API}/commits?sha=main&per_page=1`` (the commit
and its date)."""

_HEADING_RE = re.compile(r"^###\s+(20[0-9]{2}\.(?:0[1-9]|1[0-2]))\s*$", re.MULTILINE | re.ASCII)
_TREE_RE = re.compile(r"/backend-info/tree/([0-9a-f]{40})", re.ASCII)
_PYTHON_RE = re.compile(r"^Python (3\.[0-9]{1,2}\.[0-9]{1,3})\s*$", re.MULTILINE | re.ASCII)
_APT_LINE_RE = re.compile(r"^([a-z0-9][a-z0-9.+-]*)/\S*\s+(\S+)\s", re.MULTILINE | re.ASCII)
_APT_WANTED_RE = re.compile(
    r"cuda-(?:compat|cudart|nvcc|libraries)-[0-9]+-[0-9]+|libcudnn[0-9]+-cuda-[0-9]+|libnccl2", re.ASCII
)
_CUDART_RE = re.compile(r"cuda-cudart-([0-9]+)-([0-9]+)", re.ASCII)
_GLIBC_RE = re.compile(r"^libc6/\S*\s+(?:[0-9]+:)?([0-9]+\.[0-9]+)[-.+~]", re.MULTILINE | re.ASCII)
"""The glibc of an image: its ``libc6`` package's upstream version (``2.35-0ubuntu3.14``)."""
_ENTRY_ID_RE = re.compile(r'^id = "([^"]+)"$', re.MULTILINE)
_ENTRY_COMMIT_RE = re.compile(r'^commit = "([^"]+)"$', re.MULTILINE)
_ENTRY_DATE_RE = re.compile(r'^date = "([^"]+)"$', re.MULTILINE)
_GLIBC_KEY_RE = re.compile(r'^glibc = "', re.MULTILINE)
_COMMIT_RE = re.compile(r"[0-9a-f]{40}", re.ASCII)
_DAY_RE = re.compile(r"(20[0-9]{2}-[01][0-9]-[0-3][0-9])T", re.ASCII)

Get = Callable[[str, str], "str | None"]
"""``get(ref, file)``: the text of upstream's ``file`` at ``ref``, None when it has none."""
Head = Callable[[], "tuple[str, str]"]
"""``head()``: the commit upstream's ``main`` is at and its day (``2026-08-19``)."""


class RuntimeRefreshProblem(Exception):
    """Upstream answered something this refresh cannot read (its message says what)."""


@model
class ListedVersion:
    """A runtime version upstream's README lists, and the commit it points to."""

    version: str
    commit: str

    @property
    def id(self) -> str:
        return f"colab-{self.version}"


@model
class RuntimesOutcome:
    """The refreshed file's text, the ids added, the contradictions left as they were, and the
    entries an older writer made written again (one line each)."""

    text: str
    added: tuple[str, ...] = ()
    contradictions: tuple[str, ...] = ()
    rewritten: tuple[str, ...] = ()


def listed_versions(readme: str) -> tuple[ListedVersion, ...]:
    """The versions upstream's README lists, in its order (newest first): each ``### YYYY.MM``
    heading with the first commit link before the next heading."""
    headings = list(_HEADING_RE.finditer(readme))
    found = []
    for number, heading in enumerate(headings):
        end = headings[number + 1].start() if number + 1 < len(headings) else len(readme)
        link = _TREE_RE.search(readme, heading.end(), end)
        if link is None:
            raise RuntimeRefreshProblem(f"README: runtime {heading.group(1)} links no commit")
        found.append(ListedVersion(heading.group(1), link.group(1)))
    if not found:
        raise RuntimeRefreshProblem("README: no runtime version (### YYYY.MM) listed")
    return tuple(found)


def refresh_runtimes(text: str, get: Get, head: Head | None = None) -> RuntimesOutcome:
    """``text`` (a ``runtimes.toml``) with the versions upstream lists that it lacks, and
    (``head``: where upstream's head is) the image a fresh notebook gets as ``colab-latest``."""
    readme = get(README_REF, "README.md")
    if readme is None:
        raise RuntimeRefreshProblem("README.md: not found upstream")
    header, entries = _split(text)
    known = {_field(_ENTRY_ID_RE, entry): entry for entry in entries}
    added: list[str] = []
    contradictions: list[str] = []
    for listed in listed_versions(readme):
        entry = known.get(listed.id)
        if entry is None:
            known[listed.id] = runtime_entry(listed, get)
            added.append(listed.id)
        elif _field(_ENTRY_COMMIT_RE, entry) != listed.commit:
            contradictions.append(
                f"{listed.id}: the file has commit {_field(_ENTRY_COMMIT_RE, entry)},"
                f" upstream's README names {listed.commit}; kept the file's"
            )
    rewritten = _completed(known, get)
    if head is not None:
        added.extend(_latest(known, listed_versions(readme), head, get))
    body = "\n".join(known[key] for key in sorted(known, reverse=True))
    return RuntimesOutcome(header + body, tuple(added), tuple(contradictions), tuple(rewritten))


def _completed(known: dict[str, str], get: Get) -> list[str]:
    """``known`` with each entry an older writer made (no ``glibc``) written again from its own
    commit's files; what changed."""
    done = []
    for key, entry in sorted(known.items(), reverse=True):
        if _GLIBC_KEY_RE.search(entry) is not None:
            continue
        listed = ListedVersion(key.removeprefix("colab-"), _field(_ENTRY_COMMIT_RE, entry))
        day = _field(_ENTRY_DATE_RE, entry) or None
        known[key] = runtime_entry(listed, get, day)
        if known[key] != entry:
            done.append(f"{key} written again from {listed.commit[:8]}'s files (glibc recorded)")
    return done


def _latest(known: dict[str, str], listed: Sequence[ListedVersion], head: Head, get: Get) -> list[str]:
    """``known`` with the entry of upstream's head (``colab-latest``) as it is now: written anew
    when the head moved, dropped when the head is a listed version's commit; what changed."""
    commit, day = head()
    if not _COMMIT_RE.fullmatch(commit) or not re.fullmatch(r"20[0-9]{2}-[01][0-9]-[0-3][0-9]", day):
        raise RuntimeRefreshProblem(
            f"the head of main: {printable(commit)[:60]!r} of {printable(day)[:30]!r}"
        )
    version = next((v.id for v in listed if v.commit == commit), None)
    had = known.get(LATEST)
    if version is not None:
        if had is None:
            return []
        del known[LATEST]
        return [f"{LATEST} dropped (the head is {version}'s commit)"]
    if had is not None and _field(_ENTRY_COMMIT_RE, had) == commit:
        return []
    known[LATEST] = runtime_entry(ListedVersion("latest", commit), get, day)
    return [f"{LATEST} (the head, {commit[:12]} of {day})"]


def head_of(body: bytes) -> tuple[str, str]:
    """The commit and day of the first commit a GitHub API ``commits`` answer lists (the head
    of the branch asked for)."""
    import json

    try:
        answer = json.loads(body)
        first = answer[0]
        commit, date = first["sha"], first["commit"]["committer"]["date"]
    except (ValueError, LookupError, TypeError, RecursionError):
        raise RuntimeRefreshProblem("the head of main: not a list of commits") from None
    day = _DAY_RE.match(date) if isinstance(date, str) else None
    if not isinstance(commit, str) or day is None:
        raise RuntimeRefreshProblem("the head of main: no commit and date")
    return commit, day.group(1)


def _split(text: str) -> tuple[str, list[str]]:
    """The file's header (comments and ``schema``) and each ``[[runtime]]`` entry's text."""
    parts = re.split(r"(?m)^(?=\[\[runtime\]\]\s*$)", text)
    header = parts[0]
    if not header.endswith("\n\n"):
        header = header.rstrip("\n") + "\n\n"
    return header, [p.rstrip("\n") + "\n" for p in parts[1:]]


def _field(pattern: re.Pattern[str], entry: str) -> str:
    match = pattern.search(entry)
    return match.group(1) if match else ""


def runtime_entry(listed: ListedVersion, get: Get, day: str | None = None) -> str:
    """The ``[[runtime]]`` entry of one version, read from upstream's files at its commit
    (``day``: the commit's, written for upstream's head)."""
    ref = listed.commit
    os_info = _need(get, ref, "os-info.txt")
    python = _PYTHON_RE.search(os_info)
    if python is None:
        raise RuntimeRefreshProblem(f"{listed.version}: os-info.txt names no Python version")
    system = next((s for s in _plain_lines(os_info) if s.startswith("Ubuntu")), "")
    gpu_freeze = get(ref, "pip-freeze.gpu.txt")
    gpu_file = "pip-freeze.gpu.txt" if gpu_freeze is not None else "pip-freeze.txt"
    apt_text = get(ref, "apt-list-gpu.txt") if gpu_freeze is not None else None
    apt_text = apt_text if apt_text is not None else _need(get, ref, "apt-list.txt")
    apt = _apt_packages(apt_text)
    cuda = next((f"{m.group(1)}.{m.group(2)}" for p in apt if (m := _CUDART_RE.match(p))), None)
    glibc = _GLIBC_RE.search(apt_text)
    lines = [
        "[[runtime]]",
        f'id = "{listed.id}"',
        *([f'date = "{day}"'] if day is not None else []),
        f'python = "{python.group(1)}"',
        f"os = {_string(system or 'unknown')}",
        *([f'glibc = "{glibc.group(1)}"'] if glibc is not None else []),
        f'commit = "{listed.commit}"',
        f'source = "{TREE_URL}{listed.commit}"',
        "",
        "[runtime.gpu]",
        f'freeze_file = "{gpu_file}"',
    ]
    if cuda is not None:
        lines.append(f'cuda_toolkit = "{cuda}"')
    lines.append("apt = [" + ", ".join(_string(p) for p in apt) + "]")
    lines += _freeze(listed, gpu_freeze if gpu_freeze is not None else _need(get, ref, gpu_file))
    lines += ["", "[runtime.cpu]"]
    if gpu_freeze is None:
        lines.append('same_as = "gpu"')
    else:
        lines += ['freeze_file = "pip-freeze.txt"', *_freeze(listed, _need(get, ref, "pip-freeze.txt"))]
    lines += ["", "[runtime.tpu]", 'freeze_file = "pip-freeze.tpu.txt"']
    lines += _freeze(listed, _need(get, ref, "pip-freeze.tpu.txt"))
    return "\n".join(lines) + "\n"


def _need(get: Get, ref: str, name: str) -> str:
    text = get(ref, name)
    if text is None:
        raise RuntimeRefreshProblem(f"{name} at {ref}: not found upstream")
    return text


def _plain_lines(text: str) -> list[str]:
    return [s.strip() for s in text.splitlines() if s.strip() and not s.lstrip().startswith("#")]


def _apt_packages(text: str) -> tuple[str, ...]:
    """The apt packages that say which CUDA, cuDNN and NCCL the image has, as name=version."""
    lines = _APT_LINE_RE.finditer(text)
    return tuple(sorted(f"{m[1]}={m[2]}" for m in lines if _APT_WANTED_RE.fullmatch(m[1])))


def _freeze(listed: ListedVersion, text: str) -> Sequence[str]:
    """The ``freeze = '''...'''`` lines of a ``pip freeze``: ``name==version``, by name; a
    ``name @ URL`` line takes the version of the wheel the URL names (``--installed-from``'s rule)."""
    from colabenv._util.freeze import parse_freeze

    installed = parse_freeze(text, f"backend-info {listed.version}")
    pins = [f"{dist.name}=={dist.version}" for dist in installed.dists]
    return ["freeze = '''", *pins, "'''"]


def _string(text: str) -> str:
    """A TOML basic string (upstream's values are plain ASCII; anything else is escaped)."""
    escaped = text.replace("\\", "\\\\").replace('"', '\\"')
    if not escaped.isprintable():
        raise RuntimeRefreshProblem(f"unexpected characters in {printable(text)!r}")
    return f'"{escaped}"'

"""What ``colabenv render`` loads, and the pieces that keep it fast (render within 2.0x of the
import floor; 1.5x until issue 33). Timing itself lives in ``bench/run render``; these tests pin
down the causes."""

from __future__ import annotations

import dataclasses
import difflib
import gc
import hashlib
import inspect
import json
import marshal
import os
import shlex
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from colabenv._util import cache, toml
from colabenv._util.reader import close_match as _close_match
from colabenv.catalog import load
from colabenv.catalog.load import load_catalog
from colabenv.cli import main
from colabenv.models.frozen import model, record
from colabenv.script.bash import q
from tests.support.fixtures import Runner

T4 = ("--driver", "550.54.15", "--compute-capability", "7.5", "--python", "3.11")

NOT_ON_THE_RENDER_PATH = (
    "rich",
    "requests",
    "tomlkit",
    "pynvml",
    "piptools",
    "uv",
    "colabenv.host.gpu",
    "colabenv.catalog.tpu",
    "colabenv._util.processes",
    "colabenv.lock.make",
    "colabenv.lock.resolvers",
    "colabenv.lock.file",
    "colabenv.index.client",
    "colabenv.verification",
    "subprocess_tee",
    "tempfile",
    "shlex",
    "difflib",
)


def test_render_imports_nothing_it_does_not_use(tmp_path: Path) -> None:
    """The console script's own module, run as it runs, then a look at ``sys.modules``."""
    probe = (
        "import sys, json\n"
        "sys.argv = ['colabenv', 'render', 'pytorch', *json.loads(sys.argv[1]), '-o', sys.argv[2]]\n"
        "from colabenv.cli.entry import main\n"
        "import gc\n"
        "code = main()\n"
        "print(json.dumps({'code': code, 'gc_enabled': gc.isenabled(),\n"
        "                  'frozen': gc.get_freeze_count(),\n"
        "                  'modules': sorted(sys.modules)}))\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", probe, json.dumps(T4), str(tmp_path / "s.sh")],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr
    report = json.loads(done.stdout)
    assert report["code"] == 0
    assert (tmp_path / "s.sh").read_text().startswith("#!/usr/bin/env bash")
    loaded = set(report["modules"])
    assert sorted(loaded & set(NOT_ON_THE_RENDER_PATH)) == []
    assert report["gc_enabled"] is False, "the console script runs with the collector off"
    assert report["frozen"] > 10_000, "what exists at exit is frozen, so the exit skips it"


@pytest.mark.skipif(
    Path("/proc/driver/nvidia/version").exists(),
    reason="a host with an NVIDIA driver may need the driver table",
)
def test_detect_on_a_host_without_a_gpu_imports_no_catalog(tmp_path: Path) -> None:
    """No driver, no TPU sign: ``detect --json`` reads no catalog file and imports no TOML reader."""
    probe = (
        "import sys, json, io, contextlib\n"
        "sys.argv = ['colabenv', 'detect', '--json']\n"
        "from colabenv.cli.entry import main\n"
        "with contextlib.redirect_stdout(io.StringIO()):\n"
        "    code = main()\n"
        "print(json.dumps({'code': code, 'modules': sorted(sys.modules)}))\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", probe], capture_output=True, text=True, timeout=120, cwd=tmp_path
    )
    assert done.returncode == 0, done.stderr
    report = json.loads(done.stdout)
    assert report["code"] == 0
    loaded = set(report["modules"])
    assert sorted(loaded & {"colabenv.catalog.load", "colabenv.catalog.tpu", "tomllib", "tomli"}) == []


@pytest.mark.parametrize("command", [["detect", "--json"], ["watch", "status", "--json"]])
def test_commands_that_parse_no_pin_do_not_import_the_requirement_grammar(
    tmp_path: Path, command: list[str]
) -> None:
    """packaging.requirements (and the markers grammar under it) costs about 20 ms to import:
    the models name Requirement only in annotations, and modules import it where they parse."""
    probe = (
        "import sys, json, io, contextlib\n"
        f"sys.argv = ['colabenv', *{command!r}]\n"
        "from colabenv.cli.entry import main\n"
        "with contextlib.redirect_stdout(io.StringIO()):\n"
        "    code = main()\n"
        "print(json.dumps({'code': code, 'modules': sorted(sys.modules)}))\n"
    )
    env = {**os.environ, "COLABENV_STATE_DIR": str(tmp_path / "state")}
    done = subprocess.run(
        [sys.executable, "-c", probe], capture_output=True, text=True, timeout=120, cwd=tmp_path, env=env
    )
    assert done.returncode == 0, done.stderr
    report = json.loads(done.stdout)
    assert report["code"] == 0
    assert sorted(set(report["modules"]) & {"packaging.requirements", "packaging.markers"}) == []


def test_the_recorder_samples_without_the_specifier_and_tag_modules(tmp_path: Path) -> None:
    """The recorder (``python -m colabenv.recorder``) takes its samples' models, never a
    specifier or a wheel tag: packaging.specifiers, packaging.utils and packaging.tags (with
    logging, subprocess and sysconfig) stay out of its memory, and so do the AMD sysfs readers
    on a host where no DRM card states its VRAM use (``tmp_path`` as its root)."""
    probe = (
        "import json, os, sys\n"
        "from pathlib import Path\n"
        "import colabenv.recorder.loop\n"
        "from colabenv.host.sampler import Sampler\n"
        "run = Sampler(kernel_pid=os.getpid(), paths=('.',), amd_root=Path(sys.argv[1])).start()\n"
        "samples = [run.sample(), run.sample()]\n"
        "run.close()\n"
        "print(json.dumps({'processes': len(samples[1].processes), 'modules': sorted(sys.modules)}))\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", probe, str(tmp_path)],
        capture_output=True,
        text=True,
        timeout=120,
        cwd=tmp_path,
    )
    assert done.returncode == 0, done.stderr
    report = json.loads(done.stdout)
    assert report["processes"] >= 1
    kept_out = {
        "packaging.specifiers",
        "packaging.utils",
        "packaging.tags",
        "packaging.requirements",
        "colabenv.host.kfd",
        "colabenv.host.amd_vram",
    }
    assert sorted(set(report["modules"]) & kept_out) == []


def test_doctor_without_gpu_variables_imports_no_gpu_variable_judge(tmp_path: Path) -> None:
    """``doctor`` where no GPU variable is set (``HSA_OVERRIDE_GFX_VERSION``) loads neither the
    judge of those variables nor the KFD reader it spells gfx names with, reads
    ``deaths.toml`` without the catalog's loader (releases, components, packages), and takes no
    target (no ``app.resolution``)."""
    probe = (
        "import sys, json, io, contextlib\n"
        "sys.argv = ['colabenv', 'doctor', '--json']\n"
        "from colabenv.cli.entry import main\n"
        "with contextlib.redirect_stdout(io.StringIO()):\n"
        "    code = main()\n"
        "print(json.dumps({'code': code, 'modules': sorted(sys.modules)}))\n"
    )
    env = {k: v for k, v in os.environ.items() if not k.startswith(("COLABENV_", "HSA_"))}
    env["COLABENV_STATE_DIR"] = str(tmp_path / "state")
    done = subprocess.run(
        [sys.executable, "-c", probe], capture_output=True, text=True, timeout=120, cwd=tmp_path, env=env
    )
    assert done.returncode == 0, done.stderr
    report = json.loads(done.stdout)
    assert report["code"] in (0, 1)
    loaded = set(report["modules"])
    assert "colabenv.diagnosis.run" in loaded
    assert "colabenv.catalog.deaths" in loaded
    kept_out = {
        "colabenv.diagnosis.gpu_variables",
        "colabenv.host.kfd",
        "colabenv.catalog.load",
        "colabenv.app.resolution",
    }
    assert sorted(loaded & kept_out) == []


def test_main_leaves_the_collector_as_it_found_it(capsys: pytest.CaptureFixture[str]) -> None:
    assert gc.isenabled()
    assert main.main(["profiles", "list"]) == 0
    assert gc.isenabled()
    gc.disable()
    try:
        assert main.main(["profiles", "list"]) == 0
        assert not gc.isenabled()
    finally:
        gc.enable()
    assert "pytorch" in capsys.readouterr().out


def test_help_is_as_wide_as_columns_says(runner: Runner) -> None:
    for columns in (50, 120):
        done = runner("render", "--help", base={"COLUMNS": str(columns), "PATH": ""}, timeout=60)
        assert done.returncode == 0, done.stderr
        widths = [len(line) for line in done.stdout.splitlines()]
        assert max(widths) <= columns
        assert max(widths) > columns - 30


# ---------------------------------------------------------------------------------------------
# @model gives what @dataclass(frozen=True) gives


@model
class _Point:
    """A model with every kind of field."""

    x: int
    label: str = "p"
    cached: tuple[int, ...] = dataclasses.field(default=(), compare=False, repr=False)


@dataclasses.dataclass(frozen=True)
class _ReferencePoint:
    """The same, as a plain frozen dataclass."""

    x: int
    label: str = "p"
    cached: tuple[int, ...] = dataclasses.field(default=(), compare=False, repr=False)


values = st.tuples(st.integers(-3, 3), st.sampled_from(["p", "q", "it's"]), st.tuples(st.integers(0, 2)))


@given(values, values)
def test_model_matches_a_frozen_dataclass(
    a: tuple[int, str, tuple[int]], b: tuple[int, str, tuple[int]]
) -> None:
    ours_a, ours_b = _Point(*a), _Point(*b)
    ref_a, ref_b = _ReferencePoint(*a), _ReferencePoint(*b)
    assert (ours_a == ours_b) == (ref_a == ref_b)
    assert (ours_a != ours_b) == (ref_a != ref_b)
    if ours_a == ours_b:
        assert hash(ours_a) == hash(ours_b)
    assert repr(ours_a) == repr(ref_a).replace("_ReferencePoint", "_Point")
    assert dataclasses.astuple(ours_a) == dataclasses.astuple(ref_a)
    assert dataclasses.replace(ours_a, x=9) == _Point(9, a[1], a[2])


def test_model_is_frozen_and_typed_apart() -> None:
    point = _Point(1)
    with pytest.raises(dataclasses.FrozenInstanceError):
        point.x = 2  # type: ignore[misc]
    with pytest.raises(dataclasses.FrozenInstanceError):
        del point.label  # type: ignore[misc]
    assert point != _ReferencePoint(1)
    assert point.__eq__(_ReferencePoint(1)) is NotImplemented
    assert len({_Point(1), _Point(1, cached=(5,)), _Point(2)}) == 2
    assert _Point.__match_args__ == ("x", "label", "cached")


@model
class _Shape:
    """Every way a field can take its value: a factory, init=False, keyword-only, __post_init__."""

    name: str
    points: tuple[int, ...] = dataclasses.field(default_factory=tuple)
    tags: frozenset[str] = dataclasses.field(default_factory=frozenset, compare=False)
    area: int = dataclasses.field(init=False, default=0)
    scale: int = dataclasses.field(default=1, kw_only=True)

    def __post_init__(self) -> None:
        object.__setattr__(self, "area", len(self.points) * self.scale)


@dataclasses.dataclass(frozen=True)
class _ReferenceShape:
    """The same, as a plain frozen dataclass."""

    name: str
    points: tuple[int, ...] = dataclasses.field(default_factory=tuple)
    tags: frozenset[str] = dataclasses.field(default_factory=frozenset, compare=False)
    area: int = dataclasses.field(init=False, default=0)
    scale: int = dataclasses.field(default=1, kw_only=True)

    def __post_init__(self) -> None:
        object.__setattr__(self, "area", len(self.points) * self.scale)


def test_model_init_is_the_frozen_dataclass_init() -> None:
    ours, ref = inspect.signature(_Shape), inspect.signature(_ReferenceShape)
    assert [(p.name, p.kind, p.default is p.empty) for p in ours.parameters.values()] == [
        (p.name, p.kind, p.default is p.empty) for p in ref.parameters.values()
    ]
    pairs = [
        (_Shape("a"), _ReferenceShape("a")),
        (_Shape("b", (1, 2), scale=3), _ReferenceShape("b", (1, 2), scale=3)),
        (
            _Shape("c", points=(4,), tags=frozenset("x")),
            _ReferenceShape("c", points=(4,), tags=frozenset("x")),
        ),
    ]
    for made, expected in pairs:
        assert dataclasses.astuple(made) == dataclasses.astuple(expected)
        assert repr(made) == repr(expected).replace("_ReferenceShape", "_Shape")
    assert _Shape("a").points is _Shape("b").points == ()
    with pytest.raises(TypeError):
        _Shape("a", (), frozenset(), 2)  # type: ignore[call-arg]
    with pytest.raises(TypeError):
        _Shape("a", area=3)  # type: ignore[call-arg]
    for call in (
        lambda cls: cls(),  # the required field missing
        lambda cls: cls("a", name="b"),  # one parameter given twice
        lambda cls: cls("a", (), frozenset(), 2),  # scale is keyword-only
        lambda cls: cls("a", colour=1),  # no such field
    ):
        with pytest.raises(TypeError):
            call(_ReferenceShape)
        with pytest.raises(TypeError):
            call(_Shape)
    made = _Shape("a", (1, 2), scale=3)
    assert list(vars(made)) == [f.name for f in dataclasses.fields(_ReferenceShape)]
    assert vars(made) == vars(_ReferenceShape("a", (1, 2), scale=3))
    assert dataclasses.replace(_Shape("a", (1,)), scale=5).area == 5
    assert _Shape.__init__.__qualname__ == "_Shape.__init__"


def test_an_undocumented_model_is_made_without_reading_a_signature(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """dataclasses writes a missing doc from ``inspect.signature``: for ``init=False`` that
    tokenizes ``object.__init__``'s text signature, 1.5 ms of render's start."""

    def refuse(*_: object, **__: object) -> None:
        raise AssertionError("inspect.signature called while making a model")

    monkeypatch.setattr(inspect, "signature", refuse)

    @model
    class Bare:
        name: str
        size: int = 0
        hidden: int = dataclasses.field(init=False, default=1)

    @model
    class Documented:
        """Says what it is."""

        name: str

    assert Bare.__doc__ == "Bare(name, size)"
    assert Documented.__doc__ == "Says what it is."
    assert Bare("a") == Bare("a", 0)


@record
class _Probe:
    """Holds a live mapping, as HostProbe holds os.environ."""

    environ: dict[str, str]
    reader: Callable[[str], str] = str.upper
    timeout: float = 5.0


def test_a_record_is_frozen_and_compared_by_identity() -> None:
    environ = {"TOKEN": "s3cret"}
    probe = _Probe(environ)
    assert probe.environ is environ and probe.reader is str.upper and probe.timeout == 5.0
    with pytest.raises(dataclasses.FrozenInstanceError):
        probe.timeout = 1.0  # type: ignore[misc]
    with pytest.raises(dataclasses.FrozenInstanceError):
        del probe.environ  # type: ignore[misc]
    twin = _Probe(environ)
    assert probe != twin and probe == probe
    assert len({probe, twin}) == 2, "hashable although it holds a dict"
    changed = dataclasses.replace(probe, timeout=1.0)
    assert (changed.environ, changed.timeout) == (environ, 1.0)
    assert "s3cret" not in repr(probe), "a record does not print what it holds"
    assert [f.name for f in dataclasses.fields(_Probe)] == ["environ", "reader", "timeout"]


def test_every_model_in_colabenv_has_value_semantics() -> None:
    """Models made with @model compare by value: two loads of the catalog are equal, not the same."""
    first, second = load_catalog(), load_catalog()
    assert first is not second
    assert first == second
    assert hash(first.releases[0]) == hash(second.releases[0])
    assert "Release(framework=" in repr(first.releases[0])


# ---------------------------------------------------------------------------------------------
# Helpers that stand in for modules render no longer imports


@given(st.text())
def test_quoting_is_shlex_quote(value: str) -> None:
    """shlex.quote's words, except where shlex would end a single-quoted piece with a backslash
    (shellcheck's SC1003): there bash must read the word back as the value."""
    if "\\'" in value or value.endswith("\\"):
        if "\0" not in value and value.isprintable():
            shown = subprocess.run(
                ["bash", "-c", f"printf %s {q(value)}"], capture_output=True, text=True, timeout=30
            )
            assert shown.stdout == value
        return
    assert q(value) == shlex.quote(value)


@given(
    st.text(alphabet="abcdeinorstv-_", max_size=14),
    st.lists(st.text(alphabet="abcdeinorstv-_", max_size=14), max_size=6),
    st.sampled_from([0.6, 0.7]),
)
def test_close_match_is_difflib(word: str, options: list[str], cutoff: float) -> None:
    found = difflib.get_close_matches(word, options, n=1, cutoff=cutoff)
    assert _close_match(word, options, cutoff) == (found[0] if found else None)


# ---------------------------------------------------------------------------------------------
# The parsed-TOML cache


def _stored(entry: Path) -> object:
    """The parsed document a cache entry holds (after its magic and seal)."""
    data = entry.read_bytes()
    assert data.startswith(cache.ENTRY_MAGIC), entry.name
    return marshal.loads(data[len(cache.ENTRY_MAGIC) + hashlib.sha256().digest_size :])


def _counting_parser(calls: list[bytes]) -> Callable[[bytes], dict[str, object]]:
    def parse(data: bytes) -> dict[str, object]:
        calls.append(data)
        return {"schema": 1, "text": data.decode()}

    return parse


def test_a_second_parse_of_the_same_bytes_comes_from_the_cache(tmp_path: Path) -> None:
    env = {"COLABENV_CACHE_DIR": str(tmp_path)}
    calls: list[bytes] = []
    parse = _counting_parser(calls)
    assert cache.parsed_toml(b"a = 1", parse, env) == {"schema": 1, "text": "a = 1"}
    assert cache.parsed_toml(b"a = 1", parse, env) == {"schema": 1, "text": "a = 1"}
    assert calls == [b"a = 1"]
    assert cache.parsed_toml(b"a = 2", parse, env)["text"] == "a = 2"
    assert calls == [b"a = 1", b"a = 2"]
    entries = sorted((tmp_path / "parsed").iterdir())
    assert len(entries) == 2
    assert not [e for e in entries if e.name.startswith(".")], "no temporary file left behind"


@pytest.mark.parametrize("damage", [b"", b"\x00garbage", b"truncated"])
def test_a_damaged_entry_is_parsed_again_and_repaired(tmp_path: Path, damage: bytes) -> None:
    env = {"COLABENV_CACHE_DIR": str(tmp_path)}
    calls: list[bytes] = []
    parse = _counting_parser(calls)
    cache.parsed_toml(b"x", parse, env)
    (entry,) = (tmp_path / "parsed").iterdir()
    entry.write_bytes(damage if damage != b"truncated" else entry.read_bytes()[:5])
    assert cache.parsed_toml(b"x", parse, env) == {"schema": 1, "text": "x"}
    assert len(calls) == 2
    assert _stored(entry) == {"schema": 1, "text": "x"}


def test_an_unwritable_cache_is_no_error(tmp_path: Path) -> None:
    blocker = tmp_path / "not-a-dir"
    blocker.write_text("a file where the cache directory would go")
    env = {"COLABENV_CACHE_DIR": str(blocker)}
    calls: list[bytes] = []
    parse = _counting_parser(calls)
    for _ in range(2):
        assert cache.parsed_toml(b"x", parse, env) == {"schema": 1, "text": "x"}
    assert len(calls) == 2


def test_a_parsed_entry_is_private_and_not_taken_from_a_place_others_may_write(tmp_path: Path) -> None:
    """A parsed catalog file becomes the script (its index URLs): the same rule as compiled code."""
    env = {"COLABENV_CACHE_DIR": str(tmp_path)}
    calls: list[bytes] = []
    parse = _counting_parser(calls)
    cache.parsed_toml(b"x", parse, env)
    folder = tmp_path / "parsed"
    (entry,) = folder.iterdir()
    assert (folder.stat().st_mode & 0o777, entry.stat().st_mode & 0o777) == (0o700, 0o600)
    cache._write_entry(entry, hashlib.sha256(b"x").digest(), {"schema": 1, "text": "planted"})
    folder.chmod(0o770)
    assert cache.parsed_toml(b"x", parse, env) == {"schema": 1, "text": "x"}, "parsed afresh"
    assert _stored(entry) == {"schema": 1, "text": "planted"}, "and nothing stored there"
    folder.chmod(0o700)
    entry.chmod(0o606)
    assert cache.parsed_toml(b"x", parse, env)["text"] == "x"
    entry.chmod(0o600)
    assert cache.parsed_toml(b"x", parse, env)["text"] == "planted", "a private entry is trusted"
    assert len(calls) == 3


def test_an_oversized_parsed_entry_is_parsed_again(tmp_path: Path) -> None:
    env = {"COLABENV_CACHE_DIR": str(tmp_path)}
    calls: list[bytes] = []
    parse = _counting_parser(calls)
    cache.parsed_toml(b"x", parse, env)
    (entry,) = (tmp_path / "parsed").iterdir()
    with entry.open("r+b") as sparse:
        sparse.truncate(cache.MAX_ENTRY_BYTES + 1)
    assert cache.parsed_toml(b"x", parse, env) == {"schema": 1, "text": "x"}
    assert len(calls) == 2
    assert _stored(entry) == {"schema": 1, "text": "x"}, "repaired"


def test_a_parse_error_is_not_cached(tmp_path: Path) -> None:
    env = {"COLABENV_CACHE_DIR": str(tmp_path)}

    def broken(data: bytes) -> dict[str, object]:
        raise ValueError("bad TOML")

    for _ in range(2):
        with pytest.raises(ValueError, match="bad TOML"):
            cache.parsed_toml(b"x", broken, env)
    assert not (tmp_path / "parsed").exists() or not list((tmp_path / "parsed").iterdir())


def test_the_catalog_read_through_the_cache_equals_a_fresh_parse(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("COLABENV_CACHE_DIR", str(tmp_path / "cache"))
    load._shipped_tpu.cache_clear()
    fresh = load_catalog()
    assert len(list((tmp_path / "cache" / "parsed").iterdir())) == 5, "drivers, 3 frameworks, tpu"

    def no_parsing(text: str) -> dict[str, object]:
        raise AssertionError("parsed again instead of read from the cache")

    monkeypatch.setattr(toml, "loads", no_parsing)
    assert load_catalog() == fresh


def test_an_edited_catalog_file_is_parsed_again(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from colabenv._util.resources import catalog_dir

    monkeypatch.setenv("COLABENV_CACHE_DIR", str(tmp_path / "cache"))
    copy = tmp_path / "catalog"
    copy.mkdir()
    for source in catalog_dir().iterdir():
        (copy / source.name).write_bytes(source.read_bytes())
    before = load_catalog(copy)
    drivers = copy / "drivers.toml"
    text = drivers.read_text()
    assert 'floor_driver = "450.80.02"' in text
    drivers.write_text(text.replace('floor_driver = "450.80.02"', 'floor_driver = "999.1"', 1))
    after = load_catalog(copy)
    assert after.major_lines != before.major_lines
    assert "999.1" in {str(line.floor_driver) for line in after.major_lines}


# ---------------------------------------------------------------------------------------------
# Importing writes nothing; the cache holds data only

_IMPORT_EVERYTHING = (
    "import importlib, json, pkgutil, sys\n"
    "import colabenv\n"
    "names = [m.name for m in pkgutil.walk_packages(colabenv.__path__, 'colabenv.')\n"
    "         if '_target.smoke' not in m.name and not m.name.endswith('__main__')]\n"
    "for name in names:\n"
    "    importlib.import_module(name)\n"
    "print(json.dumps(sorted(names)))\n"
)


def test_importing_every_module_writes_nothing_anywhere(tmp_path: Path) -> None:
    """No colabenv module writes on import or at exit (issue 21: the compiled-code cache wrote
    ``~/.cache/colabenv/code/`` when ``colabenv.models`` was imported)."""
    home, cache_home, work = tmp_path / "home", tmp_path / "xdg", tmp_path / "work"
    for folder in (home, cache_home, work):
        folder.mkdir()
    env = {
        **{k: v for k, v in os.environ.items() if not k.startswith("COLABENV_")},
        "HOME": str(home),
        "XDG_CACHE_HOME": str(cache_home),
        "PYTHONDONTWRITEBYTECODE": "1",
    }
    done = subprocess.run(
        [sys.executable, "-c", _IMPORT_EVERYTHING],
        capture_output=True,
        text=True,
        env=env,
        cwd=work,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr
    imported = json.loads(done.stdout)
    assert {"colabenv.models.frozen", "colabenv.verification.run", "colabenv.cli.main"} <= set(imported)
    assert sorted(p for p in tmp_path.rglob("*") if p.is_file()) == []


def test_the_cache_holds_parsed_data_and_never_code(tmp_path: Path) -> None:
    """After a render, every cache entry is a parsed TOML document: dicts, lists, strings,
    numbers and booleans, nothing that could be run."""
    env = {**os.environ, "COLABENV_CACHE_DIR": str(tmp_path / "cache")}
    done = subprocess.run(
        [sys.executable, "-m", "colabenv", "render", "pytorch", *T4, "-o", str(tmp_path / "s.sh")],
        capture_output=True,
        text=True,
        env=env,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr
    entries = sorted(p for p in (tmp_path / "cache").rglob("*") if p.is_file())
    assert entries and {p.parent.name for p in entries} == {"parsed"}

    def plain(value: object) -> bool:
        if isinstance(value, dict):
            return all(isinstance(k, str) and plain(v) for k, v in value.items())
        if isinstance(value, list):
            return all(plain(v) for v in value)
        return isinstance(value, (str, int, float, bool))

    for entry in entries:
        assert plain(_stored(entry)), entry.name

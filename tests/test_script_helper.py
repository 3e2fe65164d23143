"""The script helper's own PEP 440 fallback agrees with packaging where the script relies on it.

The helper runs in the target's Python, which may have neither packaging nor pip (a venv made by
uv); the real-run tests use such a venv, these compare the fallback with packaging directly.
"""

from __future__ import annotations

from hypothesis import assume, given, settings
from hypothesis import strategies as st
from packaging.specifiers import SpecifierSet
from packaging.version import InvalidVersion, Version

from colabenv.script_helper import (
    _Marker,
    _MiniRequirement,
    _MiniSpecifier,
    _MiniVersion,
    marker_environment,
)


@st.composite
def versions(draw: st.DrawFn) -> str:
    release = ".".join(str(draw(st.integers(0, 12))) for _ in range(draw(st.integers(1, 4))))
    text = release
    if draw(st.booleans()):
        text += draw(st.sampled_from(["a", "b", "rc"])) + str(draw(st.integers(0, 3)))
    if draw(st.booleans()):
        text += f".post{draw(st.integers(0, 3))}"
    if draw(st.integers(0, 4)) == 0:
        text += f".dev{draw(st.integers(0, 3))}"
    if draw(st.integers(0, 3)) == 0:
        text += "+" + draw(st.sampled_from(["cu124", "cu126", "cpu", "1", "ubuntu.2"]))
    return text


@settings(max_examples=400, deadline=None)
@given(versions(), versions())
def test_ordering_matches_packaging(a: str, b: str) -> None:
    assert (_MiniVersion(a) < _MiniVersion(b)) == (Version(a) < Version(b))
    assert (_MiniVersion(a) == _MiniVersion(b)) == (Version(a) == Version(b))


@st.composite
def near_pairs(draw: st.DrawFn) -> tuple[str, str]:
    """A version and one a suffix away from it (``1.0rc1`` and ``1.0rc1.post0``, ``1.0`` and
    ``1.0rc1``): where a parser that reads a suffix loosely gets the order wrong."""
    base = draw(versions()).split("+", 1)[0]
    suffix = draw(st.sampled_from([".post0", ".post1", "rc1", "a0", ".dev0", "-1", "r1", "rev2",
                                   ".0", "+cu126"]))
    pair = (base, base + suffix)
    try:
        Version(pair[1])
    except InvalidVersion:
        assume(False)
    return pair if draw(st.booleans()) else (pair[1], pair[0])


@settings(max_examples=500, deadline=None)
@given(near_pairs(), st.sampled_from(["==", "!=", ">=", "<=", "<", ">"]))
def test_near_identical_versions_match_packaging(pair: tuple[str, str], operator: str) -> None:
    a, b = pair
    assert (_MiniVersion(a) < _MiniVersion(b)) == (Version(a) < Version(b))
    assert (_MiniVersion(a) == _MiniVersion(b)) == (Version(a) == Version(b))
    if operator in ("<", ">") and Version(a).base_version == Version(b).base_version:
        return
    bound = str(Version(b).public) if operator not in ("==", "!=") else b
    expected = SpecifierSet(f"{operator}{bound}").contains(a, prereleases=True)
    assert _MiniSpecifier(operator, bound).contains(a) == expected


def test_rc_is_not_read_as_a_post_release() -> None:
    assert _MiniVersion("1.0rc1") < _MiniVersion("1.0rc1.post0")
    assert not _MiniVersion("1.0rc1").is_post
    assert _MiniSpecifier(">=", "0rc0.post0.dev0").contains("0rc0.dev0") is False


@settings(max_examples=600, deadline=None)
@given(versions(), st.sampled_from(["==", "!=", ">=", "<=", ">", "<", "~="]), versions())
def test_specifiers_match_packaging(candidate: str, operator: str, bound: str) -> None:
    public = str(Version(bound).public)
    if operator == "~=":
        public = Version(bound).base_version
        if len(Version(public).release) < 2:
            public += ".0"
    if operator not in ("==", "!="):
        bound = public
    # Exclusive comparisons between pre/post releases of one release changed across packaging
    # versions; the script only ever meets == pins and ordinary ranges.
    assume(not (operator in ("<", ">")
                and Version(Version(candidate).base_version) == Version(Version(bound).base_version)))
    expected = SpecifierSet(f"{operator}{bound}").contains(candidate, prereleases=True)
    assert _MiniSpecifier(operator, bound).contains(candidate) == expected


@settings(max_examples=300, deadline=None)
@given(versions(), st.sampled_from(["==", "!="]), st.lists(st.integers(0, 12), min_size=1,
                                                           max_size=3))
def test_wildcards_match_packaging(candidate: str, operator: str, prefix: list[int]) -> None:
    bound = ".".join(map(str, prefix)) + ".*"
    expected = SpecifierSet(f"{operator}{bound}").contains(candidate, prereleases=True)
    assert _MiniSpecifier(operator, bound).contains(candidate) == expected


def test_requirements_with_extras_markers_and_local_tags() -> None:
    req = _MiniRequirement('jax-cuda12-plugin[with_cuda]<=0.5.3,>=0.5.3; extra == "cuda12"')
    assert req.name == "jax-cuda12-plugin"
    assert req.extras == {"with_cuda"}
    assert [(s.operator, s.version) for s in req.specs] == [("<=", "0.5.3"), (">=", "0.5.3")]
    env = marker_environment()
    assert req.applies("cuda12", env) and not req.applies("", env)
    pinned = _MiniRequirement("torch==2.8.0+cu126")
    assert pinned.specs[0].contains("2.8.0+cu126")
    assert not pinned.specs[0].contains("2.8.0+cu128")
    assert _MiniRequirement("torch==2.8.0").specs[0].contains("2.8.0+cu126")
    assert _MiniRequirement("numpy").applies("", env)


VARIABLES = ["python_version", "python_full_version", "sys_platform", "platform_system",
             "platform_machine", "os_name", "implementation_name", "extra"]
VALUES = ["3.8", "3.11", "3.12.1", "linux", "Linux", "win32", "x86_64", "aarch64", "posix",
          "cpython", "cuda12", "with-cuda", "4"]


@st.composite
def markers(draw: st.DrawFn, depth: int = 0) -> str:
    if depth < 2 and draw(st.integers(0, 3)) == 0:
        left = draw(markers(depth + 1))
        right = draw(markers(depth + 1))
        joined = f"{left} {draw(st.sampled_from(['and', 'or']))} {right}"
        return f"({joined})" if draw(st.booleans()) else joined
    variable = draw(st.sampled_from(VARIABLES))
    operator = draw(st.sampled_from(["==", "!=", "<", ">=", "in", "not in"]))
    value = draw(st.sampled_from(VALUES))
    if operator in ("<", ">=") and variable not in ("python_version", "python_full_version"):
        operator = "=="
    if operator in ("<", ">="):
        value = draw(st.sampled_from(["3.8", "3.11", "3.12.1", "4"]))
    quote = draw(st.sampled_from(["'", '"']))
    if draw(st.booleans()):
        return f"{variable} {operator} {quote}{value}{quote}"
    if operator in ("in", "not in") or variable == "extra":
        return f"{quote}{value}{quote} {operator} {variable}"
    return f"{quote}{value}{quote} {'==' if operator == '==' else '!='} {variable}"


@settings(max_examples=500, deadline=None)
@given(markers(), st.sampled_from(["", "cuda12", "with_cuda"]))
def test_markers_match_packaging(text: str, extra: str) -> None:
    from packaging.markers import Marker

    environment = {**marker_environment(), "extra": extra}
    assert _Marker(text).evaluate(environment) == Marker(text).evaluate({"extra": extra})


def test_marker_environment_matches_packaging() -> None:
    from packaging.markers import default_environment

    ours = marker_environment()
    theirs = default_environment()
    for key, value in ours.items():
        assert theirs[key] == value, key  # type: ignore[literal-required]

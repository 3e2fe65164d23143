"""colabenv._util.reader.Reader: one typed reader, the same messages and key paths for every format."""

from __future__ import annotations

import json
import re
from collections.abc import Sequence
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from colabenv._util.reader import MAX_PROBLEMS, Problems, Reader, quoted, shown
from colabenv.errors import ColabenvError


class Refused(ColabenvError):
    def __init__(self, key: str | None, problem: str) -> None:
        self.key = key
        self.problem = problem
        super().__init__(f"{key}: {problem}")


DOTTED = re.compile(r"[0-9]+\.[0-9]+")


def reader(data: dict[str, Any], prefix: str = "") -> Reader:
    return Reader(data, Refused, prefix)


def refusal(call: Any) -> Refused:
    with pytest.raises(Refused) as info:
        call()
    return info.value


def test_a_matching_list_is_its_strings_in_order_and_empty_when_absent() -> None:
    assert reader({"a": ["3.12", "3.10"]}).matching_list("a", DOTTED, "expected X.Y") == ["3.12", "3.10"]
    assert reader({}).matching_list("a", DOTTED, "expected X.Y") == []


def test_an_unknown_key_names_the_one_it_misspells_else_all_of_them() -> None:
    table = reader({"verison": 1}, "frameworks.torch")
    error = refusal(lambda: table.allow("version", "variant"))
    assert error.key == "frameworks.torch.verison"
    assert error.problem == "unknown key (did you mean 'version'?)"
    error = refusal(lambda: reader({"zzzq": 1}).allow("name", "schema"))
    assert (error.key, error.problem) == ("zzzq", "unknown key (expected one of: name, schema)")
    error = refusal(lambda: reader({"Torch_": 1}).allow("torch", "jax", what="framework"))
    assert error.problem == "unknown framework (did you mean 'torch'?)"


@pytest.mark.parametrize(
    ("key", "path"),
    [
        ("plain_key-1", "env.plain_key-1"),
        ("A B", 'env."A B"'),
        ("", 'env.""'),
        ("X\x1b[31m", 'env."X\\u001b[31m"'),
        ("a.b", 'env."a.b"'),
        ("\u00e9", 'env."\\u00e9"'),
    ],
)
def test_odd_keys_are_quoted_and_escaped_in_key_paths(key: str, path: str) -> None:
    error = refusal(lambda: reader({key: 1}, "env").allow("PATH"))
    assert error.key == path


@given(st.text())
def test_a_quoted_key_is_one_short_printable_line_that_reads_back(key: str) -> None:
    segment = quoted(key)
    assert segment.isprintable() and segment.isascii() and len(segment) <= 80
    if not segment.endswith("..."):
        assert segment == key or json.loads(segment) == key


def test_a_long_key_is_cut_short() -> None:
    assert quoted("k" * 500) == "k" * 77 + "..."
    assert quoted(" " * 500) == '"' + " " * 76 + "..."


def test_json_documents_are_described_in_json_words() -> None:
    document = Reader({"gpus": {}, "target": [], "n": {}}, Refused, json_words=True)
    assert refusal(lambda: document.tables("gpus")).problem == ("expected an array of objects, got an object")
    assert refusal(lambda: document.sub("target")).problem == "expected an object, got an array"
    assert refusal(lambda: document.sub("absent", required=True)).problem == "missing"
    assert refusal(lambda: document.items("n")).problem == "expected an array, got an object"
    assert Reader({}, Refused).child({}, "x").json_words is False
    assert document.child({}, "x").json_words is True


@pytest.mark.parametrize(
    ("data", "read", "key", "problem"),
    [
        ({"a": 3}, lambda r: r.text("a"), "t.a", "expected a non-empty string, got an integer"),
        ({"a": ""}, lambda r: r.text("a"), "t.a", "expected a non-empty string"),
        ({}, lambda r: r.text("a"), "t.a", "missing"),
        ({"a": []}, lambda r: r.text("a", empty=True), "t.a", "expected a string, got an array"),
        ({"a": "x"}, lambda r: r.flag("a", False), "t.a", "expected true or false, got a string"),
        ({"a": 1.5}, lambda r: r.integer("a"), "t.a", "expected a whole number, got a number"),
        ({"a": True}, lambda r: r.integer("a"), "t.a", "expected a whole number, got a boolean"),
        ({"a": 9}, lambda r: r.integer("a", low=0, high=5), "t.a", "expected a whole number from 0 to 5"),
        ({"a": "x"}, lambda r: r.table("a"), "t.a", "expected a table, got a string"),
        ({"a": "x"}, lambda r: r.text_list("a"), "t.a", "expected an array of strings, got a string"),
        ({"a": ["x", 2]}, lambda r: r.text_list("a"), "t.a[1]", "expected a string, got an integer"),
        (
            {"a": ["3.12", "3"]},
            lambda r: r.matching_list("a", DOTTED, "expected X.Y"),
            "t.a[1]",
            "expected X.Y",
        ),
        (
            {"a": [3]},
            lambda r: r.matching_list("a", DOTTED, "expected X.Y"),
            "t.a[0]",
            "expected a string, got an integer",
        ),
        ({}, lambda r: r.matching_list("a", DOTTED, "expected X.Y", required=True), "t.a", "missing"),
        ({"a": {}}, lambda r: r.tables("a"), "t.a", "expected an array of tables, got a table"),
        ({"a": [{}, 1]}, lambda r: r.tables("a"), "t.a[1]", "expected a table, got an integer"),
        ({"a": "1.x"}, lambda r: r.version("a"), "t.a", "'1.x' is not a version"),
        ({"a": "=>1"}, lambda r: r.specifier("a"), "t.a", "'=>1' is not a version specifier"),
    ],
)
def test_each_accessor_says_what_it_expected_and_what_it_got(
    data: dict[str, Any], read: Any, key: str, problem: str
) -> None:
    error = refusal(lambda: read(reader(data, "t")))
    assert (error.key, error.problem) == (key, problem)


@pytest.mark.parametrize(
    ("value", "problem"),
    [
        ("5", "expected a number, got a string"),
        (False, "expected a number, got a boolean"),
        (float("nan"), "expected a finite number"),
        (float("-inf"), "expected a finite number"),
        (0, "must be more than 0"),
        (-1.5, "must be more than 0"),
        (1e12, "1e+12 is too large (at most 86400 s)"),
        (10**400, "number too large (at most 86400 s)"),
    ],
)
def test_numbers_are_finite_and_within_their_bounds(value: object, problem: str) -> None:
    table = reader({"timeout_s": value}, "verify")
    error = refusal(lambda: table.number("timeout_s", low=0, high=86400, above_low=True, unit=" s"))
    assert (error.key, error.problem) == ("verify.timeout_s", problem)


def test_numbers_at_their_bounds_pass() -> None:
    table = reader({"a": 0, "b": 4096, "c": 0.5})
    assert table.number("a", low=0, high=4096) == 0.0
    assert table.number("b", low=0, high=4096) == 4096.0
    assert table.number("c", low=0, high=1, above_low=True) == 0.5
    assert refusal(lambda: table.number("a", low=1, high=2)).problem == "must be 1 or more"
    assert table.number("absent", low=0, high=9, default=3) == 3.0


def test_items_of_arrays_of_tables_carry_their_index_in_the_path() -> None:
    document = reader({"release": [{"variant": [{"name": "x"}, {"nme": "y"}]}]})
    (release,) = document.tables("release")
    variants = release.tables("variant")
    assert variants[1].prefix == "release[0].variant[1]"
    error = refusal(lambda: variants[1].allow("name"))
    assert error.key == "release[0].variant[1].nme"
    assert release.fail(None, "bad").key == "release[0]"  # type: ignore[attr-defined]


@pytest.mark.parametrize(
    ("value", "text"),
    [
        ("a\nb", '"a\\nb"'),
        ("x" * 200, '"' + "x" * 76 + "..."),
        (True, "true"),
        (2.5, "2.5"),
        (10**400, "a very large integer"),
        ([1], "an array"),
        ("\u202e", '"\\u202e"'),
    ],
)
def test_values_are_shown_escaped_and_short(value: object, text: str) -> None:
    assert shown(value) == text


# ---------------------------------------------------------------------------------------------
# The formats read through the reader


@pytest.mark.parametrize(
    ("old", "new", "message"),
    [
        ("tool.colabenv", "tool.other", "pylock.toml: tool.colabenv: missing"),
        (
            'extra-index-urls = ["https://mirror.example/whl/cu124"]',
            "extra-index-urls = [1]",
            "pylock.toml: tool.colabenv.extra-index-urls[0]: expected a string, got an integer",
        ),
        (
            '"nvidia-cudnn-cu12<9.11"',
            '"nvidia-cudnn-cu12<<9"',
            "pylock.toml: tool.colabenv.constraints[0]: 'nvidia-cudnn-cu12<<9' is not a",
        ),
        (
            'python = "3.12"',
            "python = []",
            "pylock.toml: tool.colabenv.target.python: expected a string, got an array",
        ),
        ('profile = "', 'profil = "', "pylock.toml: tool.colabenv.profile: missing"),
    ],
)
def test_a_pylock_header_is_read_with_key_paths(old: str, new: str, message: str) -> None:
    from pathlib import Path

    from colabenv.errors import LockError
    from colabenv.lock.file import parse_lock, render_lock
    from tests.lock.test_file import _lock

    text = render_lock(_lock(files=True, constraints=("nvidia-cudnn-cu12<9.11",)), pylock=True)
    assert old in text, old
    with pytest.raises(LockError) as info:
        parse_lock(text.replace(old, new), Path("pylock.toml"))
    assert str(info.value).startswith(message)


# ---------------------------------------------------------------------------------------------
# Problems: every mistake of one read


class Several(Refused):
    def __init__(self, errors: Sequence[Refused], more: int) -> None:
        super().__init__(None, "; ".join(e.message for e in errors) + (f"; +{more}" if more else ""))
        self.errors = list(errors)
        self.more = more


def gathering(data: dict[str, Any], limit: int = MAX_PROBLEMS) -> tuple[Reader, Problems[Refused]]:
    problems = Problems(Refused, Several, limit)
    return Reader(data, Refused, problems=problems), problems


def test_a_gathering_reader_reports_every_unknown_key_and_every_failed_check() -> None:
    table, problems = gathering({"a": 1, "nmae": "x", "zz": 2, "sub": {"verison": 3, "n": "one"}})
    table.allow("a", "name", "sub")
    sub = table.sub("sub")
    sub.allow("version", "n")
    assert sub.attempt(lambda: sub.integer("n"), 7) == 7
    assert table.attempt(lambda: table.integer("a"), 0) == 1
    error = refusal(problems.raise_found)
    assert isinstance(error, Several) and error.more == 0
    assert [(e.key, e.problem) for e in error.errors] == [
        ("nmae", "unknown key (did you mean 'name'?)"),
        ("zz", "unknown key (expected one of: a, name, sub)"),
        ("sub.verison", "unknown key (did you mean 'version'?)"),
        ("sub.n", "expected a whole number, got a string"),
    ]


def test_one_problem_is_raised_as_itself_and_none_raises_nothing() -> None:
    table, problems = gathering({"n": "one"})
    problems.raise_found()
    table.attempt(lambda: table.integer("n"), 0)
    table.attempt(lambda: table.integer("n"), 0)  # the same message: recorded once
    error = refusal(problems.raise_found)
    assert type(error) is Refused and str(error) == "n: expected a whole number, got a string"


def test_past_the_limit_problems_are_counted_not_kept() -> None:
    table, problems = gathering({f"k{n}": n for n in range(7)}, limit=3)
    table.allow()
    error = refusal(problems.raise_found)
    assert isinstance(error, Several)
    assert [e.key for e in error.errors] == ["k0", "k1", "k2"] and error.more == 4
    assert problems.count == 7 and MAX_PROBLEMS == 20


def test_an_error_of_another_kind_is_not_gathered() -> None:
    class Other(ColabenvError):
        pass

    table, problems = gathering({})

    def other() -> int:
        raise Other("not a refusal of this document")

    with pytest.raises(Other):
        table.attempt(other, 0)
    with pytest.raises(Other):
        problems.report(Other("neither"))
    assert problems.count == 0

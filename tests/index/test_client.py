"""`colabenv lock` against hostile and broken indexes (issue 12), and the index client's parts:
a deadline per request, bounded and checked project pages, ``${VAR}`` expansion that encodes
each value for its place in the URL, and redaction of what was expanded."""

from __future__ import annotations

import base64
import hashlib
import json
import time
from collections.abc import Sequence
from datetime import datetime, timezone
from html.parser import HTMLParser
from pathlib import Path
from urllib.parse import quote, unquote, urlsplit

import pytest

from colabenv.errors import IndexUnavailableError, UsageError
from colabenv.index.client import IndexFile, ProjectPageError, SimpleClient, parse_project_page
from colabenv.index.urls import Redactor, expand_url
from tests.support.fixtures import *  # noqa: F403
from tests.support.index import JSON_TYPE, LocalIndex
from tests.support.isolation import clean_env
from tests.support.locking import T4, colabenv, write_profile

NOT_A_PAGE = "answered something that is not a PEP 691 project page"


def test_dripping_index_ends_at_the_deadline(
    tmp_path: Path, default_index: LocalIndex, pytorch_index: LocalIndex
) -> None:
    profile = write_profile(tmp_path, default_index, pytorch_index)
    pytorch_index.fail_after(0, mode="drip")
    started = time.monotonic()
    result = colabenv(
        "lock",
        profile,
        "-o",
        tmp_path / "team.lock",
        *T4,
        timeout=60,
        env=clean_env(COLABENV_HTTP_DEADLINE="2"),
    )
    elapsed = time.monotonic() - started
    assert result.returncode == 4, result.stderr
    assert elapsed < 20
    assert result.stdout == ""
    assert result.stderr.count("\n") == 1, result.stderr
    assert f"{pytorch_index.sub_url('cu124')}torch/" in result.stderr
    assert "within 2 s" in result.stderr
    assert not (tmp_path / "team.lock").exists()


def test_deadline_flag_wins_and_is_validated(
    tmp_path: Path, default_index: LocalIndex, pytorch_index: LocalIndex
) -> None:
    profile = write_profile(tmp_path, default_index, pytorch_index)
    pytorch_index.fail_after(0, mode="drip")
    result = colabenv(
        "lock",
        profile,
        *T4,
        "--http-deadline",
        "1.5",
        timeout=60,
        env=clean_env(COLABENV_HTTP_DEADLINE="500"),
    )
    assert result.returncode == 4 and "within 1.5 s" in result.stderr
    for bad in ("0", "-1", "nan", "inf", "1e300", "9" * 5000, "soon"):
        flag = colabenv("lock", profile, *T4, "--http-deadline", bad)
        assert flag.returncode == 2, (bad, flag.stderr)
        assert "--http-deadline" in flag.stderr and "Traceback" not in flag.stderr
        variable = colabenv("lock", profile, *T4, env=clean_env(COLABENV_HTTP_DEADLINE=bad))
        assert variable.returncode == 2, (bad, variable.stderr)
        assert "COLABENV_HTTP_DEADLINE" in variable.stderr


DEEP = b"[" * 200_000 + b"]" * 200_000
HOSTILE_PAGES = {
    "not-json": b"<html>not json",
    "a-list": b"[]",
    "files-nan": b'{"meta": {"api-version": "1.1"}, "name": "torch", "files": NaN}',
    "hashes-list": json.dumps(
        {"files": [{"filename": "torch-2.6.0+cu124-py3-none-any.whl", "url": "x.whl", "hashes": ["sha256"]}]}
    ).encode(),
    "file-a-string": b'{"files": ["torch-2.6.0.whl"]}',
    "filename-a-number": b'{"files": [{"filename": 7, "url": "x", "hashes": {}}]}',
    "deep": DEEP,
    "bad-utf8": b'{"files": [{"filename": "\xff\xfe"}]}',
    "bad-url": b'{"files": [{"filename": "t.whl", "url": "http://[::1", "hashes": {}}]}',
    "size-negative": b'{"files": [{"filename": "t.whl", "url": "t.whl", "hashes": {}, "size": -1}]}',
    "upload-time-unparsable": (
        b'{"files": [{"filename": "t.whl", "url": "t.whl", "hashes": {}, "upload-time": "yesterday"}]}'
    ),
}


@pytest.mark.parametrize("name", sorted(HOSTILE_PAGES))
def test_project_page_of_the_wrong_shape_is_exit_4(
    tmp_path: Path, default_index: LocalIndex, pytorch_index: LocalIndex, name: str
) -> None:
    profile = write_profile(tmp_path, default_index, pytorch_index)
    pytorch_index.answer_with(HOSTILE_PAGES[name])
    result = colabenv("lock", profile, *T4, timeout=60)
    assert result.returncode == 4, result.stderr
    assert "Traceback" not in result.stderr
    assert result.stdout == ""
    assert result.stderr.count("\n") == 1, result.stderr
    assert NOT_A_PAGE in result.stderr
    assert f"{pytorch_index.sub_url('cu124')}torch/" in result.stderr


def test_huge_project_page_is_cut_off(
    tmp_path: Path, default_index: LocalIndex, pytorch_index: LocalIndex
) -> None:
    profile = write_profile(tmp_path, default_index, pytorch_index)
    pytorch_index.fail_after(0, mode="huge")
    result = colabenv("lock", profile, *T4, timeout=60)
    assert result.returncode == 4, result.stderr
    assert "more than 64 MiB" in result.stderr
    assert result.stderr.count("\n") == 1, result.stderr


def test_names_from_an_index_are_shown_escaped(
    tmp_path: Path, default_index: LocalIndex, pytorch_index: LocalIndex
) -> None:
    """The file names an index lists reach the message with control characters escaped."""
    body = json.dumps(
        {
            "files": [
                {
                    "filename": "torch-2.6.0+cu124-cp39-cp39-linux\x1b[2J[red]x[/red].whl",
                    "url": "t.whl",
                    "hashes": {"sha256": "0" * 64},
                }
            ]
        }
    ).encode()
    profile = write_profile(tmp_path, default_index, pytorch_index)
    pytorch_index.answer_with(body)
    result = colabenv("lock", profile, *T4)
    assert result.returncode == 4, result.stderr
    assert "\x1b" not in result.stderr
    assert result.stderr.count("\n") == 1, result.stderr
    assert "linux\\x1b[2J[red]x[/red].whl" in result.stderr


TOKEN = "p@ss/w#rd%25:x y"
USER = "robot@team"


def _basic(user: str, password: str) -> str:
    return "Basic " + base64.b64encode(f"{user}:{password}".encode()).decode()


@pytest.mark.parametrize("resolver", ["uv", "pip-tools"])
def test_tokens_with_special_characters_reach_the_index_intact(
    tmp_path: Path, default_index: LocalIndex, pytorch_index: LocalIndex, resolver: str
) -> None:
    profile = write_profile(tmp_path, default_index, pytorch_index)
    secret_url = default_index.url.replace("http://", "http://${LOCK_USER}:${LOCK_TOKEN}@")
    profile.write_text(profile.read_text().replace(f'"{default_index.url}"', f'"{secret_url}"'))
    out = tmp_path / "team.lock"
    env = clean_env(LOCK_USER="robot@team", LOCK_TOKEN=TOKEN, UV_HTTP_RETRIES="0")
    result = colabenv("lock", profile, "-o", out, "--resolver", resolver, *T4, env=env)
    assert result.returncode == 0, result.stderr
    sent = {a for a in default_index.authorizations if a}
    assert sent == {_basic("robot@team", TOKEN)}, sent
    text = out.read_text()
    assert f"--index-url {secret_url}" in text
    assert "p@ss" not in text and "robot" not in text


# ---------------------------------------------------------------------------------------------
# The parts, in process


def _sha(text: str) -> str:
    return hashlib.sha256(text.encode()).hexdigest()


def test_project_page_parsing_html_and_json() -> None:
    digest = _sha("w")
    html = (
        f'<html><body><a href="../../files/torch-2.6.0%2Bcu124-cp312-cp312-linux_x86_64.whl'
        f'#sha256={digest}" data-requires-python="&gt;=3.9">torch-2.6.0+cu124-cp312-cp312-'
        f'linux_x86_64.whl</a><br/><a href="torch-2.6.0.tar.gz">torch-2.6.0.tar.gz</a>'
        f"</body></html>"
    ).encode()
    files = parse_project_page(html, "text/html", "https://i.example/whl/cu124/torch/")
    assert files[0].filename == "torch-2.6.0+cu124-cp312-cp312-linux_x86_64.whl"
    assert files[0].sha256 == digest
    assert files[0].url == ("https://i.example/whl/files/torch-2.6.0%2Bcu124-cp312-cp312-linux_x86_64.whl")
    assert files[1].filename == "torch-2.6.0.tar.gz" and files[1].sha256 is None
    body = json.dumps(
        {
            "meta": {"api-version": "1.1"},
            "name": "jax",
            "files": [
                {
                    "filename": "jax-0.5.3-py3-none-any.whl",
                    "url": "/files/jax-0.5.3-py3-none-any.whl",
                    "hashes": {"sha256": digest.upper()},
                }
            ],
        }
    ).encode()
    files = parse_project_page(body, "application/vnd.pypi.simple.v1+json", "https://i.example/simple/jax/")
    assert files[0].url == "https://i.example/files/jax-0.5.3-py3-none-any.whl"
    assert files[0].sha256 == digest


def test_a_json_page_gives_each_file_its_size_and_upload_time() -> None:
    entry = {"filename": "a-1-py3-none-any.whl", "url": "a.whl", "hashes": {}}
    page = {
        "files": [
            {**entry, "size": 977, "upload-time": "2024-06-25T18:36:07.123456Z"},
            {**entry, "size": 0, "upload-time": "2024-06-25T18:36:07+02:00"},
            entry,
        ]
    }
    files = parse_project_page(json.dumps(page).encode(), JSON_TYPE, "https://i.example/simple/a/")
    assert files[0].size == 977
    assert files[0].upload_time == datetime(2024, 6, 25, 18, 36, 7, 123456, tzinfo=timezone.utc)
    assert files[1].size == 0
    assert files[1].upload_time == datetime(2024, 6, 25, 16, 36, 7, tzinfo=timezone.utc)
    assert (files[2].size, files[2].upload_time) == (None, None)


@pytest.mark.parametrize(
    ("key", "value"),
    [
        ("size", -1),
        ("size", True),
        ("size", "977"),
        ("size", 1.5),
        ("size", 2**41),
        ("upload-time", "yesterday"),
        ("upload-time", "2024-13-25T18:36:07Z"),
        ("upload-time", "2024-06-25T18:36:07"),
        ("upload-time", "2024-06-25 18:36:07Z"),
        ("upload-time", "2024-06-25T18:36:07+25:00"),
        ("upload-time", 1719340567),
        ("upload-time", "2024-06-25T18:36:07Z" + " " * 100),
    ],
)
def test_a_malformed_size_or_upload_time_is_a_page_error_naming_the_file(key: str, value: object) -> None:
    entry = {"filename": "a-1-py3-none-any.whl", "url": "a.whl", "hashes": {}, key: value}
    with pytest.raises(ProjectPageError) as caught:
        parse_project_page(json.dumps({"files": [entry]}).encode(), JSON_TYPE, "https://i.example/simple/a/")
    assert f"files[0] (a-1-py3-none-any.whl).{key}: expected" in str(caught.value)
    assert "\n" not in str(caught.value)


@pytest.mark.parametrize("name", sorted(HOSTILE_PAGES))
def test_hostile_json_pages_raise_one_error(name: str) -> None:
    with pytest.raises(ProjectPageError):
        parse_project_page(
            HOSTILE_PAGES[name], "application/vnd.pypi.simple.v1+json", "https://i.example/simple/torch/"
        )


@pytest.mark.parametrize(
    "body",
    [
        b"<a href='http://[::1'>x</a>",
        b"<a href='http://h:99999/x.whl'>x</a>",
    ],
)
def test_hostile_html_pages_raise_one_error(body: bytes) -> None:
    with pytest.raises(ProjectPageError, match="not a URL"):
        parse_project_page(body, "text/html", "https://i.example/simple/torch/")


def test_odd_html_is_read_without_a_crash() -> None:
    body = b"<a>no href</a><a href='x.whl'>x</a><!doctype <a href=y.whl \xff\xfe</a>"
    files = parse_project_page(body * 1000, "text/html", "https://i.example/simple/x/")
    assert files and all(f.url.startswith("https://i.example/simple/x/") for f in files)


def _stdlib_refuses(text: str) -> bool:
    parser = HTMLParser()
    try:
        parser.feed(text)
        parser.close()
    except AssertionError:
        return True
    return False


@pytest.mark.parametrize("text", ["<![bogus[ x", "<![ "])
def test_html_the_parser_refuses_is_a_project_page_error(text: str) -> None:
    """Python's parser up to 3.13.0 (the ones CI runs) raises on these; patched newer ones read
    them as comments. Either way the page is refused or read, never a crash, never swallowed."""
    page, url = f"<a href='x.whl'>x</a>{text}".encode(), "https://i.example/simple/x/"
    if _stdlib_refuses(text):
        with pytest.raises(ProjectPageError, match="HTML that cannot be read"):
            parse_project_page(page, "text/html", url)
    else:
        assert [f.filename for f in parse_project_page(page, "text/html", url)] == ["x.whl"]


@pytest.mark.parametrize("error", [ValueError, AssertionError, RecursionError])
def test_a_parser_failure_is_a_project_page_error_on_every_python(
    monkeypatch: pytest.MonkeyPatch, error: type[Exception]
) -> None:
    """The stdlib parser's own failure, made to happen on every Python (a patched newer one
    raises on none of the inputs above)."""

    def refuse(self: HTMLParser) -> None:
        raise error("the parser gives up")

    monkeypatch.setattr(HTMLParser, "close", refuse)
    with pytest.raises(ProjectPageError, match="HTML that cannot be read"):
        parse_project_page(b"<a href='x.whl'>x</a>", "text/html", "https://i.example/simple/x/")


@pytest.mark.parametrize(
    ("url", "expected"),
    [
        (
            "https://${U}:${T}@h.example/simple/",
            f"https://{quote(USER, safe='')}:{quote(TOKEN, safe='')}@h.example/simple/",
        ),
        (
            "https://h.example/${T}/simple/?k=${T}#${T}",
            f"https://h.example/{quote(TOKEN, safe='/')}/simple/?k={quote(TOKEN, safe='')}"
            f"#{quote(TOKEN, safe='')}",
        ),
        ("https://${HOST}/simple/", "https://mirror.example:8443/simple/"),
        ("https://h.example/simple/", "https://h.example/simple/"),
    ],
)
def test_expansion_encodes_each_value_for_its_place(url: str, expected: str) -> None:
    environ = {"U": USER, "T": TOKEN, "HOST": "mirror.example:8443"}
    expanded = expand_url(url, environ)
    assert expanded == expected
    parts = urlsplit(expanded)
    assert parts.hostname in ("h.example", "mirror.example")
    if "@" in url:
        assert unquote(parts.username or "") == USER
        assert unquote(parts.password or "") == TOKEN


def test_unset_variable_is_a_usage_error_naming_it() -> None:
    with pytest.raises(UsageError, match=r"\$\{TOKEN\} is not set"):
        expand_url("https://${USER}:${TOKEN}@pypi.example/simple", {"USER": "me"})


def test_redactor_hides_raw_and_encoded_values() -> None:
    environ = {"T": TOKEN, "U": "me"}
    url = "https://${U}:${T}@pypi.example/simple"
    redact = Redactor.for_urls([url], environ)
    expanded = expand_url(url, environ)
    message = f"Failed to fetch: `{expanded}numpy/` {TOKEN} {quote(TOKEN, safe='')}"
    shown = redact(message)
    assert "p@ss" not in shown and "w%23rd" not in shown
    assert shown.count("${T}") == 3 and url in shown


def test_client_deadline_bounds_the_whole_request(default_index: LocalIndex) -> None:
    default_index.fail_after(0, mode="drip")
    client = SimpleClient({}, str, deadline_s=1.0)
    started = time.monotonic()
    with pytest.raises(IndexUnavailableError, match="within 1 s"):
        client.project_files(default_index.url, "numpy")
    assert time.monotonic() - started < 5
    default_index.heal()
    with pytest.raises(IndexUnavailableError, match="did not finish"):
        client.project_files(default_index.url, "numpy")
    fresh = SimpleClient({}, str, deadline_s=5.0)
    files = fresh.project_files(default_index.url, "numpy")
    assert files and all(f.sha256 for f in files)
    assert fresh.project_files(default_index.url, "no-such-project") is None


@pytest.mark.slow
@pytest.mark.parametrize("kind", ["html", "json"])
def test_a_page_of_too_many_links_is_refused(kind: str) -> None:
    """A million links fit in the size bound (about 40 MB of HTML); the count bound refuses a
    page past 200,000, and HTML parsing stops there rather than building every file."""
    count = 200_001
    if kind == "html":
        body = b"".join(b'<a href="/f/x-0.%d.tar.gz">x</a>\n' % n for n in range(count))
        content_type = "text/html"
    else:
        entry = '{"filename": "x-0.1.tar.gz", "url": "/f/x-0.1.tar.gz", "hashes": {}}'
        body = ('{"files": [' + ", ".join([entry] * count) + "]}").encode()
        content_type = "application/vnd.pypi.simple.v1+json"
    with pytest.raises(ProjectPageError, match="more than 200000"):
        parse_project_page(body, content_type, "https://i.example/simple/x/")


@pytest.mark.parametrize(
    ("mode", "unreachable"),
    [("slow", True), ("stall", False), ("malformed", False), ("nan", False)],
)
def test_only_an_index_that_gives_no_answer_is_unreachable(mode: str, unreachable: bool) -> None:
    """The index check remembers an unreachable host by this type, never by the message text."""
    from colabenv.errors import IndexUnreachableError
    from tests.support.hostile_index import HostileIndex

    with HostileIndex(mode) as index:
        client = SimpleClient(clean_env(), str, deadline_s=0.5)
        with pytest.raises(IndexUnavailableError) as caught:
            client.project_files(index.url, "torch")
    assert isinstance(caught.value, IndexUnreachableError) is unreachable, caught.value


def test_a_closed_port_is_unreachable(tmp_path: Path) -> None:
    from colabenv.errors import IndexUnreachableError

    closed = LocalIndex(tmp_path)
    closed.start()
    url = f"{closed.base_url}/simple/"
    closed.stop()
    with pytest.raises(IndexUnreachableError, match=r"unreachable \(connection refused\)"):
        SimpleClient(clean_env(), str, deadline_s=2).project_files(url, "torch")


# ---------------------------------------------------------------------------------------------
# Yanked files (PEP 592)

LONG_REASON = "broken \x1b[2J on TPU; " + "x" * 400


def _yanking_index(tmp_path: Path) -> LocalIndex:
    """Three wheels of one release: one yanked with a reason (control characters, 420
    characters), one yanked with none, one not."""
    from tests.support.wheels import build_wheel

    for tag in ("cp312-cp312-manylinux_2_28_x86_64", "cp313-cp313-manylinux_2_28_x86_64", "py3-none-any"):
        build_wheel(tmp_path / "root", "yankme", "1.0.0", tag=tag)
    index = LocalIndex(tmp_path / "root").start()
    index.yank("yankme-1.0.0-cp312-cp312-manylinux_2_28_x86_64.whl", LONG_REASON)
    index.yank("yankme-1.0.0-cp313-cp313-manylinux_2_28_x86_64.whl")
    return index


def _yanked_of(files: Sequence[IndexFile]) -> dict[str, str | None]:
    return {f.filename.split("-")[2]: f.yanked for f in files}


@pytest.mark.parametrize("form", ["json", "html"])
def test_a_yanked_file_is_read_with_its_reason_from_either_page_form(tmp_path: Path, form: str) -> None:
    """The flag as the package index writes it: ``"yanked": true`` (jaxlib 0.4.32's files,
    read 2026-11-29), a reason string (jax 0.4.15's sdist: "accidentally required
    JAX_RELEASE=1"), ``"yanked": false`` on every other file; ``data-yanked`` on HTML, with the
    reason or empty. The reason is kept to 300 characters, raw."""
    import requests

    index = _yanking_index(tmp_path)
    try:
        if form == "json":
            files = SimpleClient(clean_env(), str).project_files(index.url, "yankme")
            assert files is not None
        else:
            page = requests.get(f"{index.url}yankme/", headers={"Accept": "text/html"}, timeout=30)
            assert page.headers["Content-Type"] == "text/html"
            files = parse_project_page(page.content, "text/html", page.url)
    finally:
        index.stop()
    assert _yanked_of(files) == {"cp312": LONG_REASON[:300], "cp313": "", "py3": None}
    assert len(LONG_REASON) > 300


@pytest.mark.parametrize("value", [7, 0, [], {}, 1.5])
def test_a_malformed_yanked_flag_is_a_page_error_naming_the_file(value: object) -> None:
    entry = {"filename": "a-1-py3-none-any.whl", "url": "a.whl", "hashes": {}, "yanked": value}
    with pytest.raises(ProjectPageError) as caught:
        parse_project_page(json.dumps({"files": [entry]}).encode(), JSON_TYPE, "https://i.example/simple/a/")
    assert "files[0] (a-1-py3-none-any.whl).yanked: expected true, false or a reason" in str(caught.value)


@pytest.mark.parametrize(("value", "read"), [(None, None), (False, None), (True, ""), ("", ""), ("r", "r")])
def test_the_yanked_flag_values_a_json_page_may_give(value: object, read: str | None) -> None:
    """null is read as absent, as size and upload-time are; "" as yanked with no reason (uv
    reads it so; PEP 691 asks for a reason that is not empty)."""
    entry = {"filename": "a-1-py3-none-any.whl", "url": "a.whl", "hashes": {}, "yanked": value}
    files = parse_project_page(json.dumps({"files": [entry]}).encode(), JSON_TYPE, "https://i.example/s/a/")
    assert files[0].yanked == read


def test_a_bare_data_yanked_attribute_is_yanked_with_no_reason() -> None:
    body = b'<a href="a-1-py3-none-any.whl" data-yanked>a</a><a href="b-1-py3-none-any.whl">b</a>'
    files = parse_project_page(body, "text/html", "https://i.example/simple/a/")
    assert [f.yanked for f in files] == ["", None]

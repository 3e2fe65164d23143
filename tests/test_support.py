"""The shared test infrastructure works: wheels install from the local index, faults happen."""

from __future__ import annotations

import base64
import hashlib
import json
import subprocess
import urllib.error
import urllib.request
import zipfile
from collections.abc import Callable
from pathlib import Path

import pytest

from tests.support.fixtures import *  # noqa: F403
from tests.support.fixtures import copy_venv
from tests.support.index import JSON_TYPE, LocalIndex
from tests.support.isolation import clean_env, uv_bin
from tests.support.wheels import Standins, build_wheel, wheel_filename


def _get(url: str, accept: str | None = None) -> tuple[int, str, bytes]:
    request = urllib.request.Request(url, headers={"Accept": accept} if accept else {})
    try:
        with urllib.request.urlopen(request, timeout=5) as response:
            return response.status, response.headers.get("Content-Type", ""), response.read()
    except urllib.error.HTTPError as error:
        return error.code, "", b""


def _installed(python: Path) -> dict[str, str]:
    out = subprocess.run(
        [uv_bin(), "pip", "list", "--python", str(python), "--format", "json"],
        check=True,
        capture_output=True,
        text=True,
        env=clean_env(),
    ).stdout
    return {item["name"]: item["version"] for item in json.loads(out)}


def test_wheel_is_valid_and_deterministic(tmp_path: Path) -> None:
    first = build_wheel(
        tmp_path / "a",
        "Torch",
        "2.6.0+cu124",
        requires=["nvidia-cudnn-cu12==9.1.0.70"],
        extras={"opt": ["numpy>=2 ; python_version >= '3.10'"]},
        requires_python=">=3.9",
        payload_bytes=5000,
    )
    second = build_wheel(
        tmp_path / "b",
        "Torch",
        "2.6.0+cu124",
        requires=["nvidia-cudnn-cu12==9.1.0.70"],
        extras={"opt": ["numpy>=2 ; python_version >= '3.10'"]},
        requires_python=">=3.9",
        payload_bytes=5000,
    )
    assert first.name == "torch-2.6.0+cu124-py3-none-any.whl"
    assert first.read_bytes() == second.read_bytes()
    assert first.stat().st_size > 5000
    with zipfile.ZipFile(first) as archive:
        names = archive.namelist()
        metadata = archive.read("torch-2.6.0+cu124.dist-info/METADATA").decode()
        record = archive.read("torch-2.6.0+cu124.dist-info/RECORD").decode()
        for line in record.splitlines():
            path, digest, size = line.rsplit(",", 2)
            if not digest:
                continue
            data = archive.read(path)
            expected = base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=")
            assert digest == "sha256=" + expected.decode()
            assert int(size) == len(data)
    assert "torch/__init__.py" in names
    assert "Version: 2.6.0+cu124" in metadata
    assert "Requires-Python: >=3.9" in metadata
    assert "Provides-Extra: opt" in metadata
    assert "Requires-Dist: numpy>=2 ; (python_version >= '3.10') and extra == \"opt\"" in metadata
    expected_name = "jax_cuda12_plugin-0.5.3-py3-none-any.whl"
    assert wheel_filename("jax-cuda12-plugin", "0.5.3") == expected_name


def test_standins_layout(standin_wheels: Standins) -> None:
    cu124 = {p.name for p in (standin_wheels.pytorch / "cu124").iterdir()}
    assert "torch-2.6.0+cu124-py3-none-any.whl" in cu124
    assert "torchvision-0.21.0+cu124-py3-none-any.whl" in cu124
    default = {p.name for p in standin_wheels.default.iterdir()}
    assert "nvidia_cudnn_cu12-9.1.0.70-py3-none-any.whl" in default
    assert "tensorflow-2.18.0-py3-none-any.whl" in default
    assert not any(name.startswith("torch-2.6.0+") for name in default)
    torch_wheel = standin_wheels.pytorch / "cu124" / "torch-2.6.0+cu124-py3-none-any.whl"
    with zipfile.ZipFile(torch_wheel) as z:
        metadata = z.read("torch-2.6.0+cu124.dist-info/METADATA").decode()
    assert "Requires-Dist: nvidia-cudnn-cu12==9.1.0.70 ;" in metadata
    with zipfile.ZipFile(standin_wheels.default / "tensorflow-2.18.0-py3-none-any.whl") as z:
        metadata = z.read("tensorflow-2.18.0.dist-info/METADATA").decode()
    assert "Provides-Extra: and-cuda" in metadata
    assert 'nvidia-cudnn-cu12==9.3.0.75 ; (platform_system == "Linux"' in metadata


def test_index_pages_html_and_json(default_index: LocalIndex, pytorch_index: LocalIndex) -> None:
    status, ctype, body = _get(default_index.url)
    assert status == 200 and "text/html" in ctype
    assert b'href="nvidia-cudnn-cu12/"' in body
    status, _, body = _get(default_index.url + "jax/")
    assert status == 200
    assert b"jax-0.5.3-py3-none-any.whl#sha256=" in body
    assert b'data-requires-python="&gt;=3.10"' in body
    status, ctype, body = _get(default_index.url + "jax/", JSON_TYPE)
    assert status == 200 and ctype == JSON_TYPE
    files = json.loads(body)["files"]
    assert [f["filename"] for f in files] == ["jax-0.5.2-py3-none-any.whl", "jax-0.5.3-py3-none-any.whl"]
    assert files[0]["requires-python"] == ">=3.10"
    status, _, wheel = _get(files[0]["url"])
    assert hashlib.sha256(wheel).hexdigest() == files[0]["hashes"]["sha256"]
    status, _, metadata = _get(files[0]["url"] + ".metadata")
    assert status == 200 and b"Name: jax" in metadata
    # pip's Accept header prefers JSON; a browser's gets HTML
    pip_accept = f"{JSON_TYPE}, application/vnd.pypi.simple.v1+html; q=0.1, text/html; q=0.01"
    assert _get(default_index.url + "jax/", pip_accept)[1] == JSON_TYPE
    assert _get(default_index.url + "jax/", "text/html")[1] == "text/html"
    assert _get(default_index.url + "no-such-project/")[0] == 404
    status, _, body = _get(pytorch_index.sub_url("cu124") + "torch/")
    assert status == 200 and b"torch-2.6.0+cu124" in body and b"+cu128" not in body
    assert default_index.project_requests("jax")


def test_range_requests_and_no_metadata(standin_wheels: Standins) -> None:
    with LocalIndex(standin_wheels.default, metadata=False) as index:
        _, _, page = _get(index.url + "jax/")
        assert b"data-core-metadata" not in page
        files = json.loads(_get(index.url + "jax/", JSON_TYPE)[2])["files"]
        assert "core-metadata" not in files[0]
        assert _get(files[0]["url"] + ".metadata")[0] == 404
        whole = _get(files[0]["url"])[2]
        request = urllib.request.Request(files[0]["url"], headers={"Range": "bytes=-22"})
        with urllib.request.urlopen(request, timeout=5) as response:
            assert response.status == 206
            assert (
                response.headers["Content-Range"] == f"bytes {len(whole) - 22}-{len(whole) - 1}/{len(whole)}"
            )
            assert response.read() == whole[-22:]
        request = urllib.request.Request(files[0]["url"], headers={"Range": "bytes=0-3"})
        with urllib.request.urlopen(request, timeout=5) as response:
            assert response.read() == b"PK\x03\x04"


def test_fail_after_and_restart_on_same_port(default_index: LocalIndex) -> None:
    assert _get(default_index.url)[0] == 200
    default_index.fail_after(2)
    assert _get(default_index.url)[0] == 200
    assert _get(default_index.url)[0] == 200
    assert _get(default_index.url)[0] == 503
    assert _get(default_index.url + "jax/")[0] == 503
    default_index.heal()
    assert _get(default_index.url)[0] == 200
    default_index.fail_after(0, mode="close")
    with pytest.raises((urllib.error.URLError, ConnectionError)):
        _get(default_index.url)
    default_index.heal()
    url = default_index.url
    default_index.stop()
    with pytest.raises((urllib.error.URLError, ConnectionError)):
        _get(url)
    default_index.start()
    assert default_index.url == url
    assert _get(url)[0] == 200


def test_uv_installs_from_local_indexes(
    default_index: LocalIndex, pytorch_index: LocalIndex, fresh_venv: Callable[..., Path]
) -> None:
    python = fresh_venv()
    subprocess.run(
        [
            uv_bin(),
            "pip",
            "install",
            "--python",
            str(python),
            "--index-url",
            default_index.url,
            "--extra-index-url",
            pytorch_index.sub_url("cu124"),
            "--index-strategy",
            "unsafe-best-match",
            "torch==2.6.0+cu124",
            "torchvision==0.21.0+cu124",
            "requests",
        ],
        check=True,
        capture_output=True,
        text=True,
        env=clean_env(),
    )
    installed = _installed(python)
    assert installed["torch"] == "2.6.0+cu124"
    assert installed["torchvision"] == "0.21.0+cu124"
    assert installed["nvidia-cudnn-cu12"] == "9.1.0.70"
    assert installed["nvidia-cuda-runtime-cu12"] == "12.4.127"
    assert installed["urllib3"] == "2.5.0"
    version = subprocess.run(
        [str(python), "-c", "import torch; print(torch.__version__)"],
        check=True,
        capture_output=True,
        text=True,
    ).stdout.strip()
    assert version == "2.6.0+cu124"


def test_install_fails_when_index_fails(default_index: LocalIndex, fresh_venv: Callable[..., Path]) -> None:
    python = fresh_venv()
    default_index.fail_after(0)
    result = subprocess.run(
        [uv_bin(), "pip", "install", "--python", str(python), "--index-url", default_index.url, "requests"],
        capture_output=True,
        text=True,
        env=clean_env(UV_HTTP_RETRIES="0"),
    )
    assert result.returncode != 0
    assert "requests" not in _installed(python)


@pytest.mark.slow
def test_pip_installs_from_local_index(default_index: LocalIndex, fresh_venv: Callable[..., Path]) -> None:
    python = fresh_venv(with_pip=True)
    subprocess.run(
        [
            str(python),
            "-m",
            "pip",
            "install",
            "--no-cache-dir",
            "--index-url",
            default_index.url,
            "jax[cuda12]==0.5.3",
        ],
        check=True,
        capture_output=True,
        text=True,
        env=clean_env(),
    )
    installed = _installed(python)
    assert installed["jax"] == "0.5.3"
    assert installed["jax-cuda12-plugin"] == "0.5.3"
    assert installed["jax-cuda12-pjrt"] == "0.5.3"
    assert installed["nvidia-cudnn-cu12"] == "9.28.0.42"  # the newest stand-in: no bound


def test_a_copied_venv_is_its_own(pip_venv_template: Path, tmp_path: Path, default_index: LocalIndex) -> None:
    """``copy_venv``: the copy's Python has the copy as its prefix, its pip and scripts are the
    copy's, and what is installed into it leaves the template as it was."""
    template_python = pip_venv_template / "bin" / "python"
    before = _installed(template_python)
    copy = tmp_path / "copy"
    python = copy_venv(pip_venv_template, copy)
    shown = subprocess.run(
        [str(python), "-c", "import sys, pip; print(sys.prefix); print(pip.__file__)"],
        check=True,
        capture_output=True,
        text=True,
        env=clean_env(),
    ).stdout.split()
    assert shown[0] == str(copy)
    assert shown[1].startswith(f"{copy}/lib/")
    assert (copy / "bin" / "pip").read_text().startswith(f"#!{copy}/bin/python")
    for name in ("pyvenv.cfg", "bin/pip", "bin/activate"):
        assert str(pip_venv_template) not in (copy / name).read_text(), name
    subprocess.run(
        [str(python), "-m", "pip", "install", "--no-cache-dir", "--index-url", default_index.url, "six"],
        check=True,
        capture_output=True,
        env=clean_env(),
    )
    assert "six" in _installed(python)
    assert _installed(template_python) == before
    assert "six" not in before


def test_expect_compares_a_verify_report_and_names_every_difference() -> None:
    """``expect`` reads the JSON report and a VerifyReport alike, and one failure names each
    check that differs: expected, got and its detail."""
    from colabenv.verification.report import Check, Status, VerifyReport
    from tests.support.checks import ANY, expect

    rows = [
        ("marker", "PASS", "written by profile 'a'"),
        ("smoke:torch", "FAIL", "crashed with SIGSEGV"),
        ("io:/x", "FAIL", "/x: read 12 MiB/s is below 200"),
    ]
    data = {"ok": False, "checks": [{"name": n, "status": s, "detail": d} for n, s, d in rows]}
    report = VerifyReport(tuple(Check(n, Status(s), d) for n, s, d in rows))
    for shown in (data, report):
        expect(shown, marker="PASS", **{"smoke:torch": Status.FAIL})
        expect(shown, {"io:/x": ("FAIL", "below 200", "/x: read"), "vram": None, "marker": ANY})
        expect(shown, {"marker": {"PASS", "WARN"}, "smoke:torch": "FAIL", "io:/x": "FAIL"}, only=True)
        with pytest.raises(AssertionError) as failed:
            expect(
                shown,
                {"smoke:torch": "PASS", "io:/x": ("FAIL", "below 100"), "vram": "SKIP", "marker": None},
            )
        message = str(failed.value)
        assert message.startswith("4 check(s) of the verify report differ"), message
        assert "  smoke:torch: expected PASS, got FAIL: crashed with SIGSEGV\n" in message
        assert "  io:/x: expected FAIL with 'below 100' in its detail, got FAIL: /x: read 12 MiB/s" in message
        assert "  vram: expected SKIP, got no such check\n" in message
        assert "  marker: expected no such check, got PASS: written by profile 'a'\n" in message
        with pytest.raises(AssertionError, match=r"(?s)1 check\(s\).*io:/x: expected no such check"):
            expect(shown, {"marker": "PASS", "smoke:torch": "FAIL"}, only=True)
        with pytest.raises(ValueError):
            expect(shown, marker="OK")

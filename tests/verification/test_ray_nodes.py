"""What ``verify_ray_nodes`` makes of one node's answer and of Ray's errors (issue 37); the
cluster itself is in tests/engines/test_ray_cluster.py."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from colabenv.errors import UsageError
from colabenv.verification.ray_nodes import NodeFinding, NodeReport, error_line, findings_of, verify_ray_nodes


def test_a_node_report_names_node_check_and_message_per_failure() -> None:
    report = {
        "ok": False,
        "checks": [
            {"name": "versions", "status": "FAIL", "detail": "rayprobe-beta 9.9 installed, 2.0 locked"},
            {"name": "duplicates", "status": "PASS", "detail": ""},
            {"name": "env", "status": "FAIL", "detail": "HF_HOME unset"},
        ],
    }
    findings = findings_of({"returncode": 1, "stdout": json.dumps(report), "stderr": ""})
    assert findings == (
        NodeFinding("versions", "rayprobe-beta 9.9 installed, 2.0 locked"),
        NodeFinding("env", "HF_HOME unset"),
    )
    lines = NodeReport("abc", "10.0.0.2", findings).lines
    assert lines == (
        "node abc (10.0.0.2): versions: rayprobe-beta 9.9 installed, 2.0 locked",
        "node abc (10.0.0.2): env: HF_HOME unset",
    )
    assert NodeReport("abc", "10.0.0.2", ()).lines == ("node abc (10.0.0.2): PASS",)


def test_a_node_whose_verify_gave_no_report_is_named_with_its_exit_and_first_line() -> None:
    found = findings_of({"returncode": 2, "stdout": "", "stderr": "\ncolabenv: x.lock: not a lock\nmore"})
    assert found == (NodeFinding("verify", "exit 2: colabenv: x.lock: not a lock"),)


def test_a_ray_setup_error_is_its_last_line_naming_an_error() -> None:
    text = (
        "Failed to set up runtime environment.\n[Node 10.0.0.2] Traceback (most recent call last):\n"
        '  File "pip.py", line 1\n'
        "ray._private.runtime_env.utils.SubprocessCalledProcessError: Run cmd[3] failed\n"
        "\x1b[33m(raylet)\x1b[0m     ERROR: No matching distribution found for rayprobe-alpha==1.0\n"
    )
    assert error_line(text) == "ERROR: No matching distribution found for rayprobe-alpha==1.0"
    assert error_line("Failed to set up runtime environment.\n") == "Failed to set up runtime environment."


def test_without_ray_it_says_what_to_install() -> None:
    pytest.importorskip("colabenv")
    try:
        import ray  # noqa: F401
    except ImportError:
        with pytest.raises(UsageError, match="needs ray"):
            verify_ray_nodes({}, "x.lock")
    else:
        pytest.skip("ray is installed here")


def test_a_file_that_is_not_a_lock_is_refused_before_any_node_is_asked(tmp_path: Path) -> None:
    from colabenv.errors import LockError
    from colabenv.verification.ray_nodes import read_lock_text

    bad = tmp_path / "team.lock"
    bad.write_text("not a lock\n")
    with pytest.raises(LockError):
        read_lock_text(bad)

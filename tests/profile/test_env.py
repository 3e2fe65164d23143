"""colabenv.profile.env: the [env] table, bounded by what a process's environment can hold."""

from __future__ import annotations

import errno
import os
import subprocess
import sys
from pathlib import Path

import pytest

from colabenv.errors import ProfileError
from colabenv.profile.env import MAX_TOTAL_BYTES, MAX_VARIABLE_BYTES
from colabenv.profile.load import load_profile
from colabenv.seeding import XLA_DETERMINISM_FLAG
from tests.support.fixtures import Runner


def _profile(directory: Path, env: dict[str, str]) -> Path:
    path = directory / "p.toml"
    lines = [f'{name} = "{value}"' for name, value in env.items()]
    path.write_text('name = "big-env"\n[env]\n' + "\n".join(lines) + "\n", encoding="utf-8")
    return path


def _value(name: str, environment_bytes: int, unit: str = "x") -> str:
    """A value whose ``NAME=value`` and NUL take ``environment_bytes`` (``unit`` repeated)."""
    room = environment_bytes - len(name) - 2
    count, rest = divmod(room, len(unit.encode("utf-8")))
    return unit * count + "x" * rest


def test_one_variable_past_max_arg_strlen_is_refused(tmp_path: Path) -> None:
    assert MAX_VARIABLE_BYTES == 131072
    with pytest.raises(ProfileError) as info:
        load_profile(_profile(tmp_path, {"BIG": _value("BIG", MAX_VARIABLE_BYTES + 1)}))
    assert info.value.key == "env.BIG"
    assert str(info.value) == (
        "p.toml: env.BIG: BIG=... takes 131073 bytes in the environment (NAME=value and its NUL);"
        " Linux allows one variable at most 131072 (MAX_ARG_STRLEN), and no process could be"
        ' started with it ("Argument list too long")'
    )


def test_the_limit_counts_utf8_bytes_not_characters(tmp_path: Path) -> None:
    value = _value("WIDE", MAX_VARIABLE_BYTES + 1, unit="\u00e9")
    assert len(value) < MAX_VARIABLE_BYTES // 2 + 10
    with pytest.raises(ProfileError) as info:
        load_profile(_profile(tmp_path, {"WIDE": value}))
    assert info.value.key == "env.WIDE" and "takes 131073 bytes" in str(info.value)
    fits = _value("WIDE", MAX_VARIABLE_BYTES, unit="\u00e9")
    assert dict(load_profile(_profile(tmp_path, {"WIDE": fits})).env) == {"WIDE": fits}


def test_all_variables_together_are_bounded(tmp_path: Path) -> None:
    half = MAX_TOTAL_BYTES // 2
    fits = {"A": _value("A", half), "B": _value("B", half)}
    assert dict(load_profile(_profile(tmp_path, fits)).env) == fits
    over = {**fits, "C": ""}
    with pytest.raises(ProfileError) as info:
        load_profile(_profile(tmp_path, over))
    assert info.value.key == "env"
    assert str(info.value) == (
        "p.toml: env: the variables take 131075 bytes together (NAME=value and a NUL each);"
        " at most 131072 (128 KiB): they are set in every process started from this environment"
    )


def test_a_parent_and_a_child_are_bounded_together(tmp_path: Path) -> None:
    half = MAX_TOTAL_BYTES // 2 + 8
    (tmp_path / "base.toml").write_text(f'name = "base"\n[env]\nA = "{_value("A", half)}"\n')
    child = tmp_path / "child.toml"
    child.write_text(f'name = "c"\nextends = "base.toml"\n[env]\nB = "{_value("B", half)}"\n')
    with pytest.raises(ProfileError) as info:
        load_profile(child)
    assert info.value.key == "env" and str(info.value).startswith("child.toml: env: the variables take")


def test_render_refuses_it_with_exit_2_and_writes_nothing(tmp_path: Path, runner: Runner) -> None:
    profile = _profile(tmp_path, {"BIG": _value("BIG", MAX_VARIABLE_BYTES + 1)})
    script = tmp_path / "setup.sh"
    done = runner("render", profile, "--cpu", "--python", "3.12", "-o", script)
    assert done.returncode == 2
    assert done.stdout == ""
    assert done.stderr.splitlines() == [
        "colabenv: p.toml: env.BIG: BIG=... takes 131073 bytes in the environment (NAME=value and"
        " its NUL); Linux allows one variable at most 131072 (MAX_ARG_STRLEN), and no process"
        ' could be started with it ("Argument list too long")'
    ]
    assert not script.exists()


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="MAX_ARG_STRLEN is Linux's")
def test_a_value_at_the_limit_renders_and_a_process_starts_with_it(tmp_path: Path, runner: Runner) -> None:
    """The bound is the kernel's: the largest value accepted is one a real process can be
    started with, and one byte more is one it cannot."""
    value = _value("BIG", MAX_VARIABLE_BYTES)
    script = tmp_path / "setup.sh"
    done = runner("render", _profile(tmp_path, {"BIG": value}), "--cpu", "--python", "3.12", "-o", script)
    assert done.returncode == 0, done.stderr
    assert value in script.read_text(encoding="utf-8")
    environ = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "BIG": value}
    child = subprocess.run(
        ["sh", "-c", 'printf %s "$BIG" | wc -c'], env=environ, capture_output=True, text=True, timeout=30
    )
    assert child.returncode == 0 and int(child.stdout) == len(value)
    with pytest.raises(OSError) as info:
        subprocess.run(["sh", "-c", "true"], env={**environ, "BIG": value + "x"}, timeout=30)
    assert info.value.errno == errno.E2BIG


def test_a_variable_the_hook_adds_a_flag_to_leaves_room_for_it(tmp_path: Path) -> None:
    """With ``deterministic``, the hook puts XLA's determinism flag into ``XLA_FLAGS`` after
    [env] is set: the flag, after a space, must fit too."""
    flag = XLA_DETERMINISM_FLAG
    room = len(flag) + 1
    path = tmp_path / "p.toml"
    for size, deterministic, accepted in (
        (MAX_VARIABLE_BYTES, "false", True),
        (MAX_VARIABLE_BYTES - room, "true", True),
        (MAX_VARIABLE_BYTES - room + 1, "true", False),
    ):
        value = _value("XLA_FLAGS", size)
        path.write_text(
            f'name = "x"\n[env]\nXLA_FLAGS = "{value}"\n[reproducibility]\ndeterministic = {deterministic}\n'
        )
        if accepted:
            assert dict(load_profile(path).env)["XLA_FLAGS"] == value
            continue
        with pytest.raises(ProfileError) as info:
            load_profile(path)
        assert str(info.value) == (
            f"p.toml: env.XLA_FLAGS: XLA_FLAGS=... takes 131073 bytes in the environment with the {flag}"
            " that [reproducibility] deterministic adds; Linux allows one variable at most 131072"
            " (MAX_ARG_STRLEN)"
        )


# ---------------------------------------------------------------------------------------------
# ${VAR} references, and secrets never literal (issue 34)

SECRET = "hf_literal-secret-value-0123"


def test_references_are_kept_as_written(tmp_path: Path) -> None:
    env = {
        "HF_TOKEN": "${HF_TOKEN}",
        "AUTH_HEADER": "Bearer ${API_T}",
        "HF_HOME": "${DATA_ROOT}/hf",
        "TOKENIZERS_PARALLELISM": "false",
        "HF_TOKEN_PATH": "/content/token",
        "WANDB_API_KEY": "",
        "PLAIN": "$HOME stays $x{y}",
    }
    assert dict(load_profile(_profile(tmp_path, env)).env) == env


@pytest.mark.parametrize(
    "name",
    [
        "HF_TOKEN",
        "WANDB_API_KEY",
        "KAGGLE_KEY",
        "AWS_SECRET_ACCESS_KEY",
        "DB_PASSWORD",
        "GH_TOKENS",
        "hf_token",
    ],
)
def test_a_literal_secret_is_refused_with_the_remedy_and_never_echoed(
    tmp_path: Path, runner: Runner, name: str
) -> None:
    profile = _profile(tmp_path, {name: SECRET})
    script = tmp_path / "setup.sh"
    for argv in (
        ("profiles", "check", profile),
        ("render", profile, "--cpu", "--python", "3.12", "-o", script),
    ):
        done = runner(*argv)
        assert done.returncode == 2, done.stderr
        assert done.stdout == ""
        assert done.stderr.splitlines() == [
            f"colabenv: p.toml: env.{name}: refused: a literal value for a secret would be written in"
            " clear into the script, the restart marker and the .pth hook: use"
            f' "${{{name}}}" and set {name} in the environment or Colab\'s secrets'
        ]
        assert SECRET not in done.stderr
    assert not script.exists()


def test_a_value_with_a_reference_is_accepted_for_a_secret_name(tmp_path: Path) -> None:
    env = {"HF_TOKEN": "${COLAB_HF}", "NPM_AUTH": "prefix-${A}-${B}-suffix"}
    assert dict(load_profile(_profile(tmp_path, env)).env) == env


@pytest.mark.parametrize("value", ["${HOME", "${1X}", "a${}b", "${A-B}", "${A}${"])
def test_a_dollar_brace_that_is_no_reference_is_refused(tmp_path: Path, value: str) -> None:
    with pytest.raises(ProfileError) as info:
        load_profile(_profile(tmp_path, {"X": value}))
    assert info.value.key == "env.X" and "is not a ${VAR} reference" in str(info.value)


def test_the_secret_names_are_whole_words() -> None:
    from colabenv.profile.env import is_secret_name

    secret = ["HF_TOKEN", "MY_SECRET", "PASSWD", "OPENAI_API_KEY", "MY_APIKEY", "AWS_ACCESS_KEY_ID"]
    secret += ["SSH_PRIVATE_KEY", "GOOGLE_APPLICATION_CREDENTIALS", "NCCL_AUTH", "token"]
    plain = ["TOKENIZERS_PARALLELISM", "AUTHOR", "KEYBOARD", "HF_TOKEN_PATH", "SECRETS_DIR", "MONKEY"]
    assert [n for n in secret if not is_secret_name(n)] == []
    assert [n for n in plain if is_secret_name(n)] == []

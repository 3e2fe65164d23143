"""The profile's ``[job]`` table, and the value rules its keys share with the job flags."""

from __future__ import annotations

from pathlib import Path

import pytest

from colabenv.errors import ProfileError
from colabenv.models import JobSettings
from colabenv.profile.job import parse_memory, parse_name, parse_time
from colabenv.profile.load import load_profile


def _load(tmp_path: Path, table: str) -> JobSettings:
    path = tmp_path / "team.toml"
    path.write_text(f'name = "team"\n[job]\n{table}\n', encoding="utf-8")
    return load_profile(path).job


def test_nothing_is_asked_when_absent(tmp_path: Path) -> None:
    assert _load(tmp_path, "") == JobSettings()


def test_values_are_read(tmp_path: Path) -> None:
    found = _load(
        tmp_path,
        'gpus = 2\ngpu_type = "a100"\ntime = "1-12:00:00"\nmemory = "64G"\ncpus = 16\npartition = "gpu"',
    )
    assert found == JobSettings(
        gpus=2, gpu_type="a100", time_s=36 * 3600, memory_mib=65536, cpus=16, partition="gpu"
    )


def test_a_child_profile_keeps_what_its_parent_asked(tmp_path: Path) -> None:
    (tmp_path / "base.toml").write_text('name = "base"\n[job]\ngpus = 1\ntime = "30"\n', encoding="utf-8")
    child = tmp_path / "child.toml"
    child.write_text('name = "child"\nextends = "./base.toml"\n[job]\ngpus = 4\n', encoding="utf-8")
    assert load_profile(child).job == JobSettings(gpus=4, time_s=1800)


def test_flags_over_the_profile_keep_what_they_leave_out() -> None:
    base = JobSettings(gpus=1, time_s=60, partition="gpu")
    assert JobSettings(gpus=8, memory_mib=10).over(base) == JobSettings(
        gpus=8, time_s=60, memory_mib=10, partition="gpu"
    )


@pytest.mark.parametrize(
    ("table", "message"),
    [
        ("gpus = 0", "team.toml: job.gpus: expected a whole number from 1 to 64"),
        ('gpus = "2"', "team.toml: job.gpus: expected a whole number, got a string"),
        ('time = "2:61:00"', "team.toml: job.time: minutes and seconds go up to 59"),
        ('time = "soon"', "team.toml: job.time: expected minutes, MM:SS, HH:MM:SS"),
        ('memory = "32 GB"', "team.toml: job.memory: expected a size such as 32G"),
        ('gpu_type = "a100; rm -rf /"', "team.toml: job.gpu_type: expected a GPU type"),
        ('partition = "-gpu"', "team.toml: job.partition: expected a partition"),
        ("walltime = 5", "team.toml: job.walltime: unknown key (did you mean 'time'?)"),
    ],
)
def test_bad_values_are_refused_with_the_key_path(tmp_path: Path, table: str, message: str) -> None:
    with pytest.raises(ProfileError) as caught:
        _load(tmp_path, table)
    assert message in str(caught.value)
    assert "\n" not in str(caught.value)


@pytest.mark.parametrize(
    ("text", "seconds"),
    [
        ("90", 5400),
        ("5:30", 330),
        ("1:30:00", 5400),
        ("2-0", 172800),
        ("2-01:30", 2 * 86400 + 3600 + 1800),
        ("0-00:00:01", 1),
    ],
)
def test_slurm_time_forms(text: str, seconds: int) -> None:
    assert parse_time(text) == seconds


@pytest.mark.parametrize("text", ["0", "1-24:00:00", "367-00", "1:2:3:4", "-5", "1.5", ""])
def test_times_outside_slurm_forms_are_refused(text: str) -> None:
    with pytest.raises(ValueError, match="expected"):
        parse_time(text)


@pytest.mark.parametrize(
    ("text", "mib"), [("512", 512), ("512M", 512), ("1g", 1024), ("1T", 1 << 20), ("1K", 1)]
)
def test_memory_sizes_in_mib_rounded_up(text: str, mib: int) -> None:
    assert parse_memory(text) == mib


@pytest.mark.parametrize("text", ["0", "0G", "1P", "65T", "1.5G", "G"])
def test_memory_outside_the_forms_is_refused(text: str) -> None:
    with pytest.raises(ValueError, match="expected"):
        parse_memory(text)


def test_names_refuse_shell_and_newlines() -> None:
    assert parse_name("H100-80GB_sxm.5", "a GPU type") == "H100-80GB_sxm.5"
    for bad in ("a b", "a\nb", "$(x)", "", "a" * 65):
        with pytest.raises(ValueError):
            parse_name(bad, "a GPU type")


def test_the_job_table_is_left_out_of_the_profile_hash(tmp_path: Path) -> None:
    """A new time limit or GPU count leaves the profile's lock fresh; any other key does not."""
    hashes = []
    for table in ("", '[job]\ngpus = 4\ntime = "2:00:00"\n', "[verify]\nrequire_gpu = true\n"):
        path = tmp_path / "team.toml"
        path.write_text(f'name = "team"\n{table}', encoding="utf-8")
        hashes.append(load_profile(path).content_hash)
    assert hashes[0] == hashes[1] != hashes[2]

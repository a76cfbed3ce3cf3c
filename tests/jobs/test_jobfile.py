"""TOML job files: every documented key, and mistakes named with file, line and valid keys."""

from __future__ import annotations

from pathlib import Path

import pytest

from dolmen.errors import ConfigError, UsageError
from dolmen.jobs.jobfile import KEYS, load_jobfile, merge, parse_jobfile

FULL = """\
name = "llama-ft"
command = ["python", "train.py", "--epochs", "3"]
backend = "slurm"
nodes = 2
gpus_per_node = 8
procs_per_node = 8
image = "nvcr.io/nvidia/pytorch:24.05-py3"
checkpoint_dir = "/shared/ckpt/llama-ft"
max_restarts = 3
time_limit = "12h"
account = "research"
partition = "gpu"
workdir = "/shared/src"
elastic = false
min_nodes = 1
exclude_nodes = ["gpu-07"]

[env]
NCCL_DEBUG = "WARN"
"""


def test_every_key_of_the_documented_example() -> None:
    jf = parse_jobfile(FULL)
    assert jf.backend == "slurm"
    spec = merge(jf, {})
    assert spec.name == "llama-ft" and spec.command == ("python", "train.py", "--epochs", "3")
    assert (spec.nodes, spec.gpus_per_node, spec.procs_per_node) == (2, 8, 8)
    assert spec.time_limit_s == 12 * 3600 and spec.max_restarts == 3
    assert spec.exclude_nodes == ("gpu-07",) and spec.env == {"NCCL_DEBUG": "WARN"}
    assert set(KEYS) == {line.split(" = ")[0] for line in FULL.splitlines() if " = " in line} - {
        "NCCL_DEBUG"
    } | {"env"}


def test_the_command_line_wins_over_the_file() -> None:
    spec = merge(parse_jobfile(FULL), {"nodes": 4, "max_restarts": None})
    assert spec.nodes == 4 and spec.max_restarts == 3


def test_docs_show_the_same_example() -> None:
    docs = Path(__file__).resolve().parents[2] / "docs" / "jobs.md"
    assert FULL.strip() in docs.read_text()


@pytest.mark.parametrize(
    ("text", "line", "words"),
    [
        ('name = "x"\ngpus = 4\n', 2, "unknown key 'gpus'; valid keys: account, backend"),
        ('nodes = "two"\n', 1, "nodes must be int, not str"),
        ("elastic = 1\n", 1, "elastic must be bool"),
        ("nodes = true\n", 1, "nodes must be int, not bool"),
        ('command = ["a", 1]\n', 1, "command must be a list of strings"),
        ("[env]\nA = 1\n", 1, "[env] values must be strings"),
        ('time_limit = "soon"\n', 1, "is not a duration"),
        ('name = "x"\nnodes = [\n', None, "not valid TOML"),
    ],
)
def test_mistakes_name_file_and_line(text: str, line: int | None, words: str) -> None:
    with pytest.raises(ConfigError) as err:
        parse_jobfile(text, "job.toml")
    assert words in str(err.value)
    if line is not None:
        assert str(err.value).startswith(f"job.toml:{line}: ")


def test_unreadable_files(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="no such job file"):
        load_jobfile(tmp_path / "absent.toml")
    junk = tmp_path / "junk.toml"
    junk.write_bytes(b"\xff\xfe\x00binary")
    with pytest.raises(ConfigError, match=r"cannot read|not valid TOML"):
        load_jobfile(junk)


def test_a_job_needs_a_command() -> None:
    with pytest.raises(UsageError, match="no command"):
        merge(parse_jobfile("nodes = 2\n"), {})


def test_the_default_name_is_the_programs() -> None:
    assert merge(None, {"command": ("/usr/bin/python3.11", "t.py")}).name == "python3.11"

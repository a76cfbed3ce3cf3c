"""The lock file: written and read back equal; malformed, truncated and hostile locks are
one InputError naming the file (and the line where TOML says)."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from dolmen.errors import InputError
from dolmen.stack.lockfile import dumps, load, loads
from dolmen.stack.model import Component, FileHash, Lock, Package

LOCK = Lock(
    'node "01"\n',  # quotes and a newline survive
    "ubuntu",
    "22.04",
    "x86_64",
    "apt",
    (
        Component(
            "driver",
            "driver",
            "550.127.05",
            "proc/driver/nvidia/version",
            details={"branch": "550", "flavour": "open"},
            packages=(Package("nvidia-driver-550-open", "550.127.05-0ubuntu1", "apt"),),
            files=(FileHash("/lib/x86_64-linux-gnu/libcuda.so.1", "a" * 64),),
        ),
        Component(
            "cuda:/usr/local/cuda-12.4", "cuda", "12.4.1", "/usr/local/cuda-12.4/version.json"
        ),
        Component("tensorrt", "tensorrt", None, reason="missing: no header or library found"),
        Component(
            "vbios:0000:9b:00.0",
            "vbios",
            "96.00.99.00.01",
            "nvml",
            details={"model": "NVIDIA H100"},
        ),
    ),
    ("Hopper",),
    ("a note",),
)


def test_round_trip() -> None:
    assert loads(dumps(LOCK)) == LOCK


def test_load_a_file_and_its_refusals(tmp_path: Path) -> None:
    good = tmp_path / "stack.toml"
    good.write_text(dumps(LOCK))
    assert load(good) == LOCK
    with pytest.raises(InputError, match="no such stack lock"):
        load(tmp_path / "absent.toml")
    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)
    with pytest.raises(InputError, match="not a regular file"):
        load(fifo)
    with pytest.raises(InputError, match="cannot read"):
        load(tmp_path)


@pytest.mark.parametrize(
    ("text", "match"),
    [
        (dumps(LOCK)[:200], "not valid TOML"),  # cut inside a table
        ("schema = 'dolmen.stack.lock/9'\n", "schema is"),
        ("", "schema is None"),
        ('schema = "dolmen.stack.lock/1"\n[components.x]\nkind = "bogus"\n', "kind 'bogus'"),
        (
            'schema = "dolmen.stack.lock/1"\n[components.x]\nkind = "nccl"\nstate = "known"\n',
            "known component",
        ),
        (
            'schema = "dolmen.stack.lock/1"\n[components.x]\nkind = "nccl"\nversion = 3\n',
            "must be a string",
        ),
        ('schema = "dolmen.stack.lock/1"\ncomponents = 5\n', "components must be a table"),
        (
            'schema = "dolmen.stack.lock/1"\n[components.x]\nkind = "nccl"\nversion = "1"\npackages = [1]\n',
            "list of tables",
        ),
        (
            'schema = "dolmen.stack.lock/1"\n[components.x]\nkind = "nccl"\nversion = "1"\nfiles = [{path = "/x"}]\n',
            "string sha256",
        ),
    ],
)
def test_malformed_and_hostile(text: str, match: str) -> None:
    with pytest.raises(InputError, match=match) as e:
        loads(text, "stack.toml")
    assert e.value.message.startswith("stack.toml")


def test_toml_error_names_the_line() -> None:
    with pytest.raises(InputError) as e:
        loads('schema = "dolmen.stack.lock/1"\nhost = \n', "stack.toml")
    assert e.value.line == 2

"""setup/writes.py: dolmen's block in a site's slurm.conf or gres.conf, a backup, audit."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from dolmen.errors import InputError, UsageError
from dolmen.setup.writes import merge, write_with_backup
from tests.setup.conftest import audit_events

LINE = "NodeName=n1 CPUs=8 Sockets=1 CoresPerSocket=4 ThreadsPerCore=2 RealMemory=7000\n"
BLOCK = f"# BEGIN dolmen setup n1\n{LINE}# END dolmen setup n1\n"


@pytest.mark.parametrize(
    ("existing", "expected"),
    [
        ("", BLOCK),
        ("ClusterName=c\n", "ClusterName=c\n\n" + BLOCK),
        ("ClusterName=c", "ClusterName=c\n\n" + BLOCK),  # no final newline
        # a block from an earlier run is replaced where it stands; the rest is kept
        (
            "A=1\n# BEGIN dolmen setup n1\nNodeName=n1 CPUs=2\n# END dolmen setup n1\nB=2\n",
            "A=1\n" + BLOCK + "B=2\n",
        ),
        # another node's block is not touched
        (
            "# BEGIN dolmen setup n2\nNodeName=n2 CPUs=2\n# END dolmen setup n2\n",
            "# BEGIN dolmen setup n2\nNodeName=n2 CPUs=2\n# END dolmen setup n2\n\n" + BLOCK,
        ),
        ("NodeName=n10 CPUs=2\n", "NodeName=n10 CPUs=2\n\n" + BLOCK),  # n10 is not n1
    ],
)
def test_merge_table(existing: str, expected: str) -> None:
    assert merge(existing, "n1", LINE) == expected


@pytest.mark.parametrize(
    ("existing", "message"),
    [
        ("NodeName=n1 CPUs=4\n", "declared already outside"),
        ("  nodename=N1 CPUs=4\n", "declared already outside"),
        ("# BEGIN dolmen setup n1\nNodeName=n1 CPUs=2\n", "has no '# END dolmen setup n1'"),
    ],
)
def test_merge_refuses(existing: str, message: str) -> None:
    with pytest.raises(InputError, match=message):
        merge(existing, "n1", LINE)


def test_write_keeps_a_backup_and_records_intent_then_result(
    tmp_path: Path, dolmen_dirs: Path
) -> None:
    conf = tmp_path / "slurm.conf"
    conf.write_text("ClusterName=c\n")
    lines = write_with_backup(conf, "n1", LINE, "slurm.conf")
    assert conf.read_text() == "ClusterName=c\n\n" + BLOCK
    assert (tmp_path / "slurm.conf.dolmen-backup").read_text() == "ClusterName=c\n"
    assert lines == [f"wrote {conf} (the previous file is {conf}.dolmen-backup)"]
    events = audit_events(dolmen_dirs, "setup.write")
    assert [(o, d["phase"]) for o, d in events] == [("unknown", "intent"), ("success", "result")]
    assert events[0][1]["backup"] == f"{conf}.dolmen-backup"
    # the same text again: nothing written, no event
    assert write_with_backup(conf, "n1", LINE, "slurm.conf")[0].endswith("(unchanged)")
    assert len(audit_events(dolmen_dirs, "setup.write")) == 2


def test_a_fifo_a_folder_and_a_missing_folder_are_refused(tmp_path: Path) -> None:
    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)
    with pytest.raises(UsageError, match="is a FIFO, not a regular file"):
        write_with_backup(fifo, "n1", LINE, "slurm.conf")
    with pytest.raises(UsageError, match="is a folder"):
        write_with_backup(tmp_path, "n1", LINE, "slurm.conf")
    with pytest.raises(UsageError, match="does not exist"):
        write_with_backup(tmp_path / "no" / "slurm.conf", "n1", LINE, "slurm.conf")


def test_a_binary_file_is_refused_and_left_alone(tmp_path: Path) -> None:
    conf = tmp_path / "gres.conf"
    conf.write_bytes(b"\xff\xfe\x00junk")
    with pytest.raises(InputError, match="not text"):
        write_with_backup(conf, "n1", LINE, "gres.conf")
    assert conf.read_bytes() == b"\xff\xfe\x00junk"

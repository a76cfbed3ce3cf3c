"""Issue 9 case 9: a host tree's FIFO, device or huge file is unreadable, never a hang or
an unbounded read; an archive's members are bounded before anything is extracted."""

from __future__ import annotations

import os
import socket
import tarfile
import threading
from collections.abc import Callable
from pathlib import Path
from typing import TypeVar

import pytest

from dolmen.errors import InputError
from dolmen.fsutil import NotRegularFile, TooLarge, read_regular
from dolmen.host import RunStatus, open_host
from dolmen.host.base import MAX_READ
from dolmen.host.tree import TreeHost
from tests.conftest import make_tree

T = TypeVar("T")
NVSMI = "nvidia-smi%20-q%20-x"


def _in_thread(fn: Callable[[], T], seconds: float = 10.0) -> T:
    """Run ``fn`` with a deadline: a read that blocks on a FIFO fails the test, not CI."""
    box: dict[str, object] = {}

    def go() -> None:
        try:
            box["value"] = fn()
        except BaseException as e:
            box["error"] = e

    t = threading.Thread(target=go, daemon=True)
    t.start()
    t.join(seconds)
    assert not t.is_alive(), "the read blocked (a FIFO read with no writer)"
    if "error" in box:
        raise box["error"]  # type: ignore[misc]
    return box["value"]  # type: ignore[return-value]


def test_a_fifo_file_is_unreadable_not_a_hang(tmp_path: Path) -> None:
    tree = make_tree(tmp_path / "h", files={"proc/loadavg": "0.1 0.2 0.3"})
    os.mkfifo(tree / "proc/meminfo")
    host = TreeHost(tree)
    with pytest.raises(NotRegularFile, match=r"not a regular file \(FIFO\)"):
        _in_thread(lambda: host.read("proc/meminfo"))
    assert host.read_opt("proc/meminfo") is None
    assert host.read("proc/loadavg").startswith("0.1")


def test_a_fifo_as_the_gpu_inventory_is_unreadable(tmp_path: Path) -> None:
    tree = make_tree(tmp_path / "h", files={"etc/hostname": "gpu01\n"})
    (tree / "commands").mkdir()
    os.mkfifo(tree / "commands" / NVSMI)
    host = TreeHost(tree)
    inv = _in_thread(lambda: host.gpus)
    assert inv.error is not None and "unreadable" in inv.error and "FIFO" in inv.error
    r = host.run(("nvidia-smi", "-q", "-x"))
    assert r.status is RunStatus.FAILED and "not a regular file (FIFO)" in r.failure()


def test_a_fifo_as_the_snapshot_metadata_is_an_input_error(tmp_path: Path) -> None:
    tree = make_tree(tmp_path / "h", files={"etc/hostname": "gpu01\n"})
    os.mkfifo(tree / "dolmen-snapshot.json")
    with pytest.raises(InputError, match="not a regular file"):
        _in_thread(lambda: open_host(tree).hostname)


def test_a_fifo_rc_file_is_not_success(tmp_path: Path) -> None:
    tree = make_tree(tmp_path / "h", commands={"ibstat": "CA 'mlx5_0'\n"})
    os.mkfifo(tree / "commands" / "ibstat.rc")
    r = _in_thread(lambda: TreeHost(tree).run(("ibstat",)))
    assert r.status is RunStatus.FAILED


def test_a_char_device_is_refused_before_it_is_read(tmp_path: Path) -> None:
    tree = make_tree(tmp_path / "h", files={})
    (tree / "proc").mkdir()
    os.symlink("/dev/zero", tree / "proc" / "meminfo")  # re-rooted: absent in the tree
    assert TreeHost(tree).read_opt("proc/meminfo") is None
    with pytest.raises(NotRegularFile, match="character device"):
        read_regular(Path("/dev/zero"), 1 << 20)


def test_a_socket_is_refused(tmp_path: Path) -> None:
    tree = make_tree(tmp_path / "h", files={})
    (tree / "proc").mkdir()
    with socket.socket(socket.AF_UNIX) as s:
        s.bind(str(tree / "proc" / "meminfo"))
        with pytest.raises(NotRegularFile, match="socket"):
            TreeHost(tree).read("proc/meminfo")


def test_a_huge_sparse_file_is_refused_by_size(tmp_path: Path) -> None:
    tree = make_tree(tmp_path / "h", files={})
    (tree / "proc").mkdir()
    with open(tree / "proc" / "meminfo", "wb") as f:
        f.truncate(1 << 30)  # a 1 GB hole: 0 bytes on disk, 2 GB of memory once decoded
    with pytest.raises(TooLarge, match="larger than 64 MiB"):
        TreeHost(tree).read("proc/meminfo")


def test_read_regular_reads_up_to_the_limit(tmp_path: Path) -> None:
    p = tmp_path / "f"
    p.write_bytes(b"x" * 100)
    assert read_regular(p, 100) == b"x" * 100
    with pytest.raises(TooLarge, match="larger than 99 bytes"):
        read_regular(p, 99)
    with pytest.raises(IsADirectoryError):
        read_regular(tmp_path, 100)
    assert MAX_READ == 64 << 20


def _tar_with(path: Path, infos: list[tarfile.TarInfo]) -> Path:
    with tarfile.open(path, "w:gz") as tar:
        for info in infos:
            tar.addfile(info, _Zeros(info.size))
    return path


class _Zeros:
    """A file object of ``n`` zero bytes that holds none of them."""

    def __init__(self, n: int) -> None:
        self.left = n

    def read(self, size: int = -1) -> bytes:
        n = self.left if size < 0 else min(size, self.left)
        self.left -= n
        return b"\0" * n


def test_a_huge_member_is_refused_before_extraction(tmp_path: Path) -> None:
    meta = tarfile.TarInfo("h/dolmen-snapshot.json")
    meta.size = 2
    big = tarfile.TarInfo("h/proc/meminfo")
    big.size = (64 << 20) + 1
    archive = _tar_with(tmp_path / "bomb.tar.gz", [meta, big])
    before = set(Path(os.environ.get("TMPDIR", "/tmp")).glob("dolmen-snapshot-*"))
    with pytest.raises(InputError, match="over 64 MiB"):
        open_host(archive)
    assert set(Path(os.environ.get("TMPDIR", "/tmp")).glob("dolmen-snapshot-*")) == before


def test_too_many_members_are_refused(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import dolmen.host.archive as archive_mod

    monkeypatch.setattr(archive_mod, "MAX_MEMBERS", 3)
    infos = [tarfile.TarInfo(f"h/f{i}") for i in range(5)]
    with pytest.raises(InputError, match="more than 3 members"):
        open_host(_tar_with(tmp_path / "many.tar.gz", infos))


def test_a_fifo_given_as_from_is_refused(tmp_path: Path) -> None:
    os.mkfifo(tmp_path / "snap.tar.gz")
    with pytest.raises(InputError, match="a FIFO, not a host tree"):
        _in_thread(lambda: open_host(tmp_path / "snap.tar.gz"))


# The same rule for the files users name: configurations, profiles, job files, baselines.


def test_a_fifo_config_is_refused_in_one_line(tmp_path: Path) -> None:
    from dolmen.config import load_config
    from dolmen.errors import ConfigError

    os.mkfifo(tmp_path / "dolmen.toml")
    with pytest.raises(ConfigError, match=r"cannot read the configuration file: not a regular"):
        _in_thread(lambda: load_config(tmp_path / "dolmen.toml"))


def test_dev_zero_as_a_profile_is_refused(tmp_path: Path) -> None:
    from dolmen.config import read_text
    from dolmen.errors import ConfigError

    with pytest.raises(ConfigError, match="character device"):
        _in_thread(lambda: read_text(Path("/dev/zero"), "profile"))
    big = tmp_path / "big.toml"
    big.write_bytes(b"#" * ((1 << 20) + 1))
    with pytest.raises(ConfigError, match="larger than 1 MiB"):
        read_text(big, "job file")


def test_a_fifo_baseline_is_refused(tmp_path: Path) -> None:
    from dolmen.baseline import load_baseline

    os.mkfifo(tmp_path / "baseline.json")
    with pytest.raises(InputError, match=r"not a readable baseline \(not a regular file \(FIFO\)"):
        _in_thread(lambda: load_baseline(tmp_path / "baseline.json"))

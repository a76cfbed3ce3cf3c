"""Host.writable asks the kernel (access(2)); Host.remove_dir removes only empty folders."""

from __future__ import annotations

import os
from pathlib import Path

from dolmen.host.live import LiveHost
from dolmen.host.tree import TreeHost
from tests.conftest import make_tree


def test_tree_files_follow_the_filesystem(tmp_path: Path) -> None:
    root = make_tree(tmp_path, files={"etc/x": "1"})
    host = TreeHost(root)
    assert host.writable("etc/x")
    assert not host.writable("etc/absent")
    if os.geteuid() != 0:  # root bypasses mode bits on ordinary files
        (root / "etc/x").chmod(0o444)
        assert not host.writable("etc/x")


def test_live_kernel_files_report_read_only_sysctls() -> None:
    host = LiveHost()
    # kernel.ostype is 0444 in the kernel's table: read-only even for root.
    assert not host.writable("proc/sys/kernel/ostype")
    if os.geteuid() == 0:
        assert host.writable("proc/sys/vm/swappiness")


def test_remove_dir_only_removes_empty_folders(tmp_path: Path) -> None:
    root = make_tree(tmp_path, files={"etc/a/b/f": "1"})
    host = TreeHost(root)
    assert not host.remove_dir("etc/a/b")  # not empty
    host.remove("etc/a/b/f")
    assert host.remove_dir("etc/a/b") and not host.exists("etc/a/b")
    assert not host.remove_dir("etc/a/b")  # absent
    assert host.exists("etc/a")

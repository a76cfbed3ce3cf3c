"""Host.make_dir and Host.remove_tree: the folders of tune's [caches] (a sticky root that
apply makes and rollback takes back with what users put in it)."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from dolmen.host.tree import TreeHost


def test_make_dir_sets_the_exact_mode_whatever_the_umask(tmp_path: Path) -> None:
    host = TreeHost(tmp_path)
    old = os.umask(0o077)
    try:
        host.make_dir("raid/dolmen-cache", 0o1777)
    finally:
        os.umask(old)
    made = tmp_path / "raid/dolmen-cache"
    assert made.stat().st_mode & 0o7777 == 0o1777
    assert (tmp_path / "raid").stat().st_mode & 0o777 == 0o755
    host.make_dir("raid/dolmen-cache", 0o755)  # an existing folder only gets the mode
    assert made.stat().st_mode & 0o7777 == 0o755


def test_make_dir_refuses_a_file_a_fifo_or_a_link(tmp_path: Path) -> None:
    host = TreeHost(tmp_path)
    (tmp_path / "file").write_text("x")
    os.mkfifo(tmp_path / "fifo")
    (tmp_path / "real").mkdir()
    os.symlink("real", tmp_path / "link")
    for name in ("file", "fifo", "link"):
        with pytest.raises(FileExistsError):
            host.make_dir(name, 0o1777)
    assert (tmp_path / "real").stat().st_mode & 0o7777 != 0o1777


def test_remove_tree_takes_contents_without_following_links(tmp_path: Path) -> None:
    host = TreeHost(tmp_path)
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "keep").write_text("mine")
    cache = tmp_path / "c/1000/inductor"
    cache.mkdir(parents=True)
    (cache / "k.so").write_text("x")
    os.symlink(outside, tmp_path / "c/1000/planted")
    host.remove_tree("c")
    assert not (tmp_path / "c").exists() and (outside / "keep").read_text() == "mine"
    host.remove_tree("c")  # absent is fine
    (tmp_path / "f").write_text("x")
    with pytest.raises(NotADirectoryError):
        host.remove_tree("f")

"""security.rdma.netns_exclusive on host trees and on this machine (no RDMA here)."""

from __future__ import annotations

from pathlib import Path

import pytest

from dolmen.checks import load_registry
from dolmen.checks.context import Context
from dolmen.checks.model import Status
from dolmen.checks.runner import run_one
from dolmen.host.live import LiveHost
from dolmen.host.tree import TreeHost
from tests.conftest import make_tree

CHECK = load_registry()["security.rdma.netns_exclusive"]


@pytest.mark.parametrize(
    ("command", "status"),
    [
        ("netns exclusive copy-on-fork on\n", Status.PASS),
        ("netns shared privileged-qkey off copy-on-fork on\n", Status.WARN),
        (("", 1, "Failed to open NETLINK_RDMA socket\n"), Status.UNKNOWN),
        ("netns\n", Status.UNKNOWN),
    ],
)
def test_tree(tmp_path: Path, command: object, status: Status) -> None:
    root = make_tree(tmp_path, commands={"rdma system show": command})  # type: ignore[dict-item]
    [f] = run_one(Context(TreeHost(root)), CHECK)
    assert f.status is status and f.subject == "host" and not f.gating
    if status is Status.UNKNOWN:
        assert f.evidence["reason"]


def test_bundle_without_it(tmp_path: Path) -> None:
    [f] = run_one(Context(TreeHost(make_tree(tmp_path))), CHECK)
    assert f.status is Status.UNKNOWN and "not in this bundle" in f.summary


def test_this_machine() -> None:
    [f] = run_one(Context(LiveHost()), CHECK)
    assert f.status in (Status.PASS, Status.WARN, Status.UNKNOWN)
    if f.status is Status.UNKNOWN:
        assert "RDMA" in f.summary or "rdma" in f.summary

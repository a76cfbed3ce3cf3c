"""tuning.irq.balance and tuning.numa_balancing on a bundle without sys/devices/system/node:
how many NUMA nodes the host has is not in it, so neither says "one node"."""

from __future__ import annotations

from pathlib import Path

import pytest

from dolmen.checks.model import Status
from tests.checks.helpers import run_check
from tests.conftest import make_tree, recording

CHECKS = ("tuning.irq.balance", "tuning.numa_balancing")


@pytest.mark.parametrize("check", CHECKS)
def test_nodes_not_in_the_bundle(tmp_path: Path, check: str) -> None:
    """The lspci -vvv of an 8x H100 node, alone: its GPUs are seen, its NUMA nodes are not."""
    lspci = recording("lspci/gpud__lspci-vvv").read_text()
    root = make_tree(tmp_path / "t", commands={"lspci -vvv": lspci})
    [f] = run_check(root, check)
    want = "NUMA nodes: not in this bundle: sys/devices/system/node"
    assert (f.status, f.summary) == (Status.SKIP, want)


@pytest.mark.parametrize("check", CHECKS)
def test_one_node_is_moot(tmp_path: Path, check: str) -> None:
    lspci = recording("lspci/gpud__lspci-vvv").read_text()
    node = {"sys/devices/system/node/node0/cpulist": "0-7\n"}
    root = make_tree(tmp_path / "t", files=node, commands={"lspci -vvv": lspci})
    [f] = run_check(root, check)
    assert f.status is Status.SKIP and f.summary.startswith("1 NUMA node(s): ")

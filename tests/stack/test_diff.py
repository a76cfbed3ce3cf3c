"""``diff``: same, changed, missing, unknown-here and extra, and the exit codes; the fleet's
one node whose NCCL differs."""

from __future__ import annotations

from pathlib import Path

from dolmen.host.tree import TreeHost
from dolmen.stack.diff import diff
from dolmen.stack.model import Component, Lock
from dolmen.stack.observe import observe
from tests.hosts.scenarios import build
from tests.report.contract import assert_valid
from tests.stack.nodes import PACKAGES, node


def test_the_same_node_has_no_drift(tmp_path: Path) -> None:
    tree = node(tmp_path / "a")
    result = diff(observe(TreeHost(tree)), observe(TreeHost(tree)))
    assert result.exit_code == 0 and not result.drifted
    assert assert_valid(result.to_json())["counts"]["same"] == len(result.entries)


def test_the_node_whose_nccl_differs(tmp_path: Path) -> None:
    lock = observe(TreeHost(node(tmp_path / "ref")))
    other = node(tmp_path / "odd", {**PACKAGES, "libnccl2": "2.26.2-1+cuda12.8"})
    result = diff(lock, observe(TreeHost(other)))
    assert [(e.id, e.status) for e in result.drifted] == [("nccl", "changed")]
    assert result.drifted[0].differences == (
        "package libnccl2 2.27.7-1+cuda13.0 -> 2.26.2-1+cuda12.8",
    )
    assert result.exit_code == 1


def test_missing_where_the_host_vouches_unknown_where_it_does_not(tmp_path: Path) -> None:
    lock = observe(TreeHost(node(tmp_path / "ref")))
    no_fm = {k: v for k, v in PACKAGES.items() if "fabricmanager" not in k}
    result = diff(lock, observe(TreeHost(node(tmp_path / "b", no_fm))))
    fm = next(e for e in result.entries if e.id == "fabric-manager")
    assert fm.status == "missing" and fm.reason.startswith("missing")
    bare = diff(lock, observe(TreeHost(build("h100-hgx-healthy", tmp_path / "c"))))
    fm = next(e for e in bare.entries if e.id == "fabric-manager")
    assert fm.status == "unknown-here" and "not in this bundle" in fm.reason
    assert {e.status for e in bare.drifted} == {"unknown-here"} and bare.exit_code == 2
    assert any("package versions not compared" in n for n in bare.notes)


def test_extra_components() -> None:
    lock = Lock(
        "a", None, None, None, None, (Component("nccl", "nccl", None, reason="missing: none"),)
    )
    here = Lock(
        "b",
        None,
        None,
        None,
        None,
        (Component("nccl", "nccl", "2.21.5", "x"), Component("dcgm", "dcgm", "3.3.5", "y")),
    )
    result = diff(lock, here)
    assert [(e.id, e.status) for e in result.entries] == [("nccl", "extra"), ("dcgm", "extra")]
    assert result.exit_code == 1

"""The gpu checks on the committed scenarios (tests/hosts): the healthy H100 node passes or
skips every gpu check, and each broken scenario fails the gpu checks its [expect] names."""

from __future__ import annotations

from pathlib import Path

import pytest

from dolmen.checks.context import Context
from dolmen.checks.model import Finding, Status
from dolmen.checks.runner import run_one
from dolmen.host.tree import TreeHost
from tests.checks.gpu.trees import REGISTRY
from tests.hosts import scenarios


def _gpu_findings(name: str, tmp_path: Path) -> dict[str, list[Finding]]:
    root = scenarios.build(name, tmp_path / name)
    ctx = Context(TreeHost(root))
    return {cid: run_one(ctx, spec) for cid, spec in REGISTRY.items() if cid.startswith("gpu.")}


def test_healthy_node_passes_or_skips(tmp_path: Path) -> None:
    found = _gpu_findings("h100-hgx-healthy", tmp_path)
    for cid, findings in found.items():
        for f in findings:
            assert f.status in (Status.PASS, Status.SKIP), (cid, f.subject, f.summary)
    assert {f.status for f in found["gpu.xid"]} == {Status.PASS}
    assert len(found["gpu.pcie.link"]) == 8


def _broken() -> list[str]:
    return [
        n
        for n in scenarios.names()
        if any(c.startswith("gpu.") for c in scenarios.spec(n).get("expect", {}).get("fail", []))
    ]


@pytest.mark.parametrize("name", _broken())
def test_broken_scenarios_fail_where_expected(name: str, tmp_path: Path) -> None:
    expect = scenarios.spec(name)["expect"]
    found = _gpu_findings(name, tmp_path)
    for cid in expect["fail"]:
        if cid.startswith("gpu."):
            assert Status.FAIL in {f.status for f in found[cid]}, (cid, found[cid])
    for findings in found.values():
        assert all(f.status is not Status.ERROR for f in findings)

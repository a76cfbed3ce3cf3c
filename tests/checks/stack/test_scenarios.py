"""The stack and security checks on the committed scenarios (tests/hosts): the healthy H100
node passes (or skips what it does not have), missing-driver and cuda-newer-than-driver fail
where their [expect] tables say."""

from __future__ import annotations

from pathlib import Path

from dolmen.checks.context import Context
from dolmen.checks.model import Finding, Level, Status
from dolmen.checks.runner import run_one
from dolmen.checks.suite import validate
from dolmen.checks.verdict import Health, judge
from dolmen.host.tree import TreeHost
from tests.checks.stack.hosts import REGISTRY
from tests.hosts import scenarios

MINE = ("stack.", "security.")


def _build(name: str, tmp_path: Path) -> Path:
    return scenarios.build(name, tmp_path / name)


def _mine(root: Path) -> dict[str, list[Finding]]:
    ctx = Context(TreeHost(root))
    return {cid: run_one(ctx, spec) for cid, spec in REGISTRY.items() if cid.startswith(MINE)}


def _statuses(found: dict[str, list[Finding]], cid: str) -> set[Status]:
    return {f.status for f in found[cid]}


def test_healthy_node(tmp_path: Path) -> None:
    """Every stack check passes or skips; the advisory security checks never fail (their
    result follows how much posture the scenario's tree records)."""
    found = _mine(_build("h100-hgx-healthy", tmp_path))
    for cid, findings in found.items():
        for f in findings:
            if cid.startswith("security."):
                assert not f.gating and f.status not in (Status.FAIL, Status.ERROR)
            else:
                assert f.status in (Status.PASS, Status.SKIP), (cid, f.subject, f.summary)
    assert _statuses(found, "stack.driver.loaded") == {Status.PASS}
    assert _statuses(found, "stack.cuda.driver_compat") == {Status.PASS}
    stack = [f for cid, fs in found.items() if cid.startswith("stack.") for f in fs]
    assert judge(stack) is Health.HEALTHY


def test_missing_driver(tmp_path: Path) -> None:
    root = _build("missing-driver", tmp_path)
    found = _mine(root)
    [loaded] = found["stack.driver.loaded"]
    assert loaded.status is Status.FAIL and "8 NVIDIA GPU(s)" in loaded.summary
    assert "couldn't communicate with the NVIDIA driver" in loaded.evidence["nvidia_smi"]
    assert loaded.evidence["userspace_driver"] == "580.105.08"  # installed, not loaded
    assert loaded.remedy is not None and "dkms autoinstall" in loaded.remedy
    assert "nvidia-driver-580-server-open" in loaded.remedy  # Ubuntu, the installed branch
    assert _statuses(found, "stack.driver.userspace_match") == {Status.SKIP}
    assert _statuses(found, "stack.modules") == {Status.SKIP}
    _expectations_hold("missing-driver", root)


def test_cuda_newer_than_driver(tmp_path: Path) -> None:
    root = _build("cuda-newer-than-driver", tmp_path)
    found = _mine(root)
    [compat] = found["stack.cuda.driver_compat"]
    assert compat.status is Status.FAIL and compat.subject == "cuda:/usr/local/cuda-13.0"
    assert compat.evidence["driver"] == "535.183.01" and compat.evidence["driver_cuda"] == "12.2"
    assert compat.remedy is not None and "nvidia-driver-580-server-open" in compat.remedy
    # The rest of the stack is consistent: one driver, loaded, matching its libraries.
    assert _statuses(found, "stack.driver.loaded") == {Status.PASS}
    [match] = found["stack.driver.userspace_match"]
    assert match.status is Status.PASS and match.evidence["userspace"] == {
        "libcuda.so.1": "535.183.01",
        "libnvidia-ml.so.1": "535.183.01",
        "nvidia-smi driver_version": "535.183.01",
    }
    _expectations_hold("cuda-newer-than-driver", root)


def _expectations_hold(name: str, root: Path) -> None:
    """The scenario's [expect] table for the stack and security checks: listed checks have
    a finding of that status; the verdict is the one stated."""
    expect = scenarios.spec(name)["expect"]
    verdict = validate(TreeHost(root), level=Level.FULL)
    statuses: dict[str, set[Status]] = {}
    for f in verdict.findings:
        statuses.setdefault(f.check, set()).add(f.status)
    for key in ("fail", "warn", "unknown"):
        for cid in expect.get(key, []):
            if cid.startswith(MINE):
                assert Status(key) in statuses[cid], (name, cid, statuses[cid])
    assert verdict.health.value == expect["status"]

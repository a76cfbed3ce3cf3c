"""``tuning.*`` checks on host trees: the recorded tune test host, the H100 scenario, and
small trees for the cases the recordings do not hold."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from dolmen.checks import load_registry
from dolmen.checks.context import Context
from dolmen.checks.model import Finding, Status
from dolmen.checks.runner import run_one
from dolmen.host.tree import TreeHost
from dolmen.tune.engine import apply_plan
from dolmen.tune.journal import Journal, tune_dir
from dolmen.tune.planner import plan_profile
from dolmen.tune.profile import load_profile
from tests.conftest import recording
from tests.hosts.scenarios import build
from tests.tune.trees import build_host

REGISTRY = load_registry()
GPU = "sys/bus/pci/devices/0000:9b:00.0"


@pytest.fixture(autouse=True)
def dirs(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("DOLMEN_STATE_DIR", str(tmp_path / "state"))
    monkeypatch.setenv("DOLMEN_CONFIG_DIR", str(tmp_path / "config"))


def check(root: Path, check_id: str) -> list[Finding]:
    return run_one(Context(TreeHost(root)), REGISTRY[check_id])


def statuses(root: Path, check_id: str) -> list[Status]:
    return [f.status for f in check(root, check_id)]


@pytest.fixture
def gpu_host(tmp_path: Path) -> Path:
    """The tune test host (recorded proc and sys), with an NVIDIA 3D controller on its bus
    and a recorded nvidia-smi -q -x of an A10G whose persistence mode is off."""
    root = build_host(tmp_path / "host")
    for name, text in (("vendor", "0x10de\n"), ("class", "0x030200\n"), ("device", "0x2237\n")):
        p = root / GPU / name
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_text(text)
    xml = recording("nvidia-smi-xml/telegraf__a10g.xml")
    (root / "commands").mkdir()
    shutil.copy(xml, root / "commands/nvidia-smi%20-q%20-x")
    return root


def test_posture_of_the_recorded_host(gpu_host: Path) -> None:
    gov = check(gpu_host, "tuning.cpu.governor")
    assert gov[0].status is Status.WARN and "4 powersave of 4" in gov[0].summary
    assert statuses(gpu_host, "tuning.thp") == [Status.PASS]
    # 3 recorded NUMA nodes, numa_balancing on
    assert statuses(gpu_host, "tuning.numa_balancing") == [Status.WARN]
    assert statuses(gpu_host, "tuning.gpu.persistence") == [Status.WARN]
    assert statuses(gpu_host, "tuning.hugepages") == [Status.PASS]
    assert statuses(gpu_host, "tuning.cmdline.pending") == [Status.PASS]
    (drift,) = check(gpu_host, "tuning.drift")
    # A tree never holds the host's own tune journal: the skip does not speak for the host.
    assert drift.status is Status.SKIP and "not in this bundle" in drift.summary
    assert "on this host" not in drift.summary
    for spec in REGISTRY.values():
        if spec.category == "tuning":
            assert not spec.gating


def test_thp_modes(gpu_host: Path) -> None:
    thp = gpu_host / "sys/kernel/mm/transparent_hugepage/enabled"
    thp.write_text("[always] madvise never\n")
    assert statuses(gpu_host, "tuning.thp") == [Status.WARN]
    thp.unlink()
    assert statuses(gpu_host, "tuning.thp") == [Status.UNKNOWN]


def test_memlock_from_recorded_process_limits(gpu_host: Path, tmp_path: Path) -> None:
    from tests.facts.trees import extract_ttar

    pf = extract_ttar(
        recording("procfs/procfs__fixtures.ttar"),
        tmp_path / "pf",
        strip="fixtures/",
        only=("proc/2623",),
    )
    self_limits = gpu_host / "proc/self/limits"
    self_limits.parent.mkdir(parents=True, exist_ok=True)
    shutil.copy(pf / "proc/26232/limits", self_limits)  # memlock 65536 bytes
    got = check(gpu_host, "tuning.limits.memlock")
    assert got[0].status is Status.WARN and "64 KiB" in got[0].summary
    shutil.copy(pf / "proc/26231/limits", self_limits)  # 18446744073708503040 bytes
    got = check(gpu_host, "tuning.limits.memlock")
    assert got[0].status is Status.PASS and "effectively unlimited" in got[0].summary
    text = self_limits.read_text().replace("18446744073708503040 ", "unlimited ")
    self_limits.write_text(text)
    assert check(gpu_host, "tuning.limits.memlock")[0].summary == "memlock is unlimited"


def test_irqbalance_running_on_a_multi_node_host(gpu_host: Path) -> None:
    (gpu_host / "proc/1234").mkdir()
    (gpu_host / "proc/1234/comm").write_text("irqbalance\n")
    assert statuses(gpu_host, "tuning.irq.balance") == [Status.WARN]
    (gpu_host / "proc/1234/comm").write_text("sshd\n")
    assert statuses(gpu_host, "tuning.irq.balance") == [Status.PASS]


def test_huge_pages_that_starve_the_host(gpu_host: Path) -> None:
    pool = gpu_host / "sys/kernel/mm/hugepages/hugepages-2048kB"
    pool.mkdir(parents=True)
    (pool / "nr_hugepages").write_text("7000\n")  # 13.7 GiB of the recorded 14.9 GiB
    (pool / "free_hugepages").write_text("7000\n")
    got = check(gpu_host, "tuning.hugepages")
    assert got[0].status is Status.WARN and got[0].evidence["pools"] == {"2048kB": 7000}
    (pool / "nr_hugepages").write_text("512\n")
    assert statuses(gpu_host, "tuning.hugepages") == [Status.PASS]


def test_kernel_parameters_waiting_for_a_reboot(gpu_host: Path) -> None:
    dropin = gpu_host / "etc/default/grub.d/90-dolmen-iommu.cfg"
    dropin.parent.mkdir(parents=True)
    dropin.write_text('GRUB_CMDLINE_LINUX_DEFAULT="$GRUB_CMDLINE_LINUX_DEFAULT iommu=pt"\n')
    got = check(gpu_host, "tuning.cmdline.pending")
    assert got[0].status is Status.WARN and got[0].evidence["pending"] == ["iommu=pt"]
    cmdline = gpu_host / "proc/cmdline"
    cmdline.write_text(cmdline.read_text().strip() + " iommu=pt\n")
    assert statuses(gpu_host, "tuning.cmdline.pending") == [Status.PASS]


def test_drift_follows_the_active_profile(gpu_host: Path) -> None:
    host = TreeHost(gpu_host)
    assert apply_plan(host, plan_profile(host, load_profile("workstation")), tune_dir(host)).ok
    got = check(gpu_host, "tuning.drift")
    assert got[0].status is Status.PASS and got[0].summary.startswith("workstation holds")
    (gpu_host / "proc/sys/vm/swappiness").write_text("60\n")
    got = check(gpu_host, "tuning.drift")
    assert got[0].status is Status.WARN and got[0].evidence["drifted"] == ["vm.swappiness"]


def test_drift_reports_an_interrupted_apply(gpu_host: Path) -> None:
    Journal.create(
        tune_dir(TreeHost(gpu_host)), {"profile": "ai-training", "changes": [], "steps": []}
    )
    got = check(gpu_host, "tuning.drift")
    assert got[0].status is Status.WARN and "interrupted" in got[0].summary
    assert "dolmen tune recover" in (got[0].remedy or "")


def test_the_h100_scenario(tmp_path: Path) -> None:
    root = build("h100-hgx-healthy", tmp_path / "h100")
    assert statuses(root, "tuning.gpu.persistence") == [Status.PASS] * 8
    assert statuses(root, "tuning.cpu.governor") == [Status.PASS]
    assert statuses(root, "tuning.numa_balancing") == [Status.PASS]

"""gpu.pcie.link (the idle-downtraining trap, width, slot, KB generation) and gpu.pcie.aer."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.checks.gpu.trees import H100_BDFS, by_subject, edit_gpu, run, statuses, tree, xml

GEN4 = "16.0 GT/s PCIe"
GPU0 = "gpu:00000000:53:00.0"
RTX3090 = "nvidia-smi-xml/telegraf__3090-v13.xml"
DUAL_2070 = "nvidia-smi-xml/telegraf__dual_2070-v13.xml"
T4_VM = "nvidia-smi-xml/telegraf__tesla-t4.xml"
GT730 = "nvidia-smi-xml/openpai__nvidia_smi_outdated_gpu.xml"


# The capture comes from a pass-through VM; these tests want the same GPUs on bare metal.
BARE = "<virtualization_mode>None<"


def bare(text: str) -> str:
    return edit_gpu(text, 0, r"<virtualization_mode>Pass-Through<", BARE)


def pci(**first: object) -> dict[str, dict[str, object]]:
    """The eight H100 functions, the first one with ``first`` overrides."""
    return {bdf: (dict(first) if i == 0 else {}) for i, bdf in enumerate(H100_BDFS)}


def link(tmp_path: Path, nvsmi: str | None = None, **first: object) -> object:
    text = bare(nvsmi if nvsmi is not None else xml())
    found = by_subject(run(tree(tmp_path, nvsmi=text, pci=pci(**first)), "gpu.pcie.link"))
    return found[GPU0]


def test_full_link_passes_from_sysfs(tmp_path: Path) -> None:
    found = run(tree(tmp_path, nvsmi=bare(xml())), "gpu.pcie.link")
    assert statuses(found) == {"pass"}
    f = by_subject(found)[GPU0]
    assert (f.evidence["gen"], f.evidence["width"], f.evidence["source"]) == (5, 16, "sysfs")
    assert f.evidence["slot"] == "0000:52:00.0" and f.evidence["kb_pcie_gen"] == 5


def test_missing_lanes_fail_at_any_load(tmp_path: Path) -> None:
    f = link(tmp_path, cur=("32.0 GT/s PCIe", 8))
    assert f.status.value == "fail" and "x8 of x16" in f.summary  # type: ignore[attr-defined]


def test_lower_generation_under_load_fails(tmp_path: Path) -> None:
    # The capture's GPUs sit in P0: a Gen4 link there is a fault.
    f = link(tmp_path, cur=(GEN4, 16))
    assert f.status.value == "fail" and "Gen4 of Gen5 under load (P0)" in f.summary  # type: ignore[attr-defined]


def test_lower_generation_at_idle_is_normal(tmp_path: Path) -> None:
    idle = edit_gpu(xml(), 0, r"<performance_state>P0<", "<performance_state>P8<")
    f = link(tmp_path, nvsmi=idle, cur=(GEN4, 16))
    assert f.status.value == "pass"  # type: ignore[attr-defined]
    assert "downtrained at idle (P8): normal" in f.summary  # type: ignore[attr-defined]


def test_real_idle_rtx3090_at_gen1_passes(tmp_path: Path) -> None:
    # The real RTX 3090 capture: P8, Gen1 of Gen4, x16.
    [f] = run(tree(tmp_path, nvsmi=xml(RTX3090), pci={}), "gpu.pcie.link")
    assert f.status.value == "pass" and "downtrained at idle (P8)" in f.summary
    assert f.evidence["source"] == "nvidia-smi"


def test_busy_utilization_counts_as_load(tmp_path: Path) -> None:
    busy = edit_gpu(xml(RTX3090), 0, r"<gpu_util>0 %<", "<gpu_util>97 %<")
    [f] = run(tree(tmp_path, nvsmi=busy, pci={}), "gpu.pcie.link")
    assert f.status.value == "fail" and "97% busy" in f.summary


def test_unreadable_load_with_a_slow_link_is_unknown(tmp_path: Path) -> None:
    text = edit_gpu(xml(), 0, r"<performance_state>P0<", "<performance_state>Unknown Error<")
    text = edit_gpu(text, 0, r"<gpu_util>0 %<", "<gpu_util>Unknown Error<")
    f = link(tmp_path, nvsmi=text, cur=(GEN4, 16))
    assert f.status.value == "unknown"  # type: ignore[attr-defined]


def test_a_narrower_slot_is_not_a_fault(tmp_path: Path) -> None:
    # A x8 slot (bifurcated riser): the GPU trains x8 of its x16, as the slot allows.
    f = link(tmp_path, cur=("32.0 GT/s PCIe", 8), slot=("32.0 GT/s PCIe", 8))
    assert f.status.value == "pass" and f.evidence["width_max"] == 8  # type: ignore[attr-defined]


def test_a_gen4_platform_warns_against_the_kb(tmp_path: Path) -> None:
    f = link(tmp_path, cur=(GEN4, 16), slot=(GEN4, 16))
    assert f.status.value == "warn" and "limits the link to Gen4" in f.summary  # type: ignore[attr-defined]


def test_datacenter_gpu_without_sysfs_uses_nvidia_smi(tmp_path: Path) -> None:
    narrow = edit_gpu(bare(xml()), 0, r"<current_link_width>16x<", "<current_link_width>8x<")
    f = by_subject(run(tree(tmp_path, nvsmi=narrow, pci={}), "gpu.pcie.link"))[GPU0]
    assert f.status.value == "fail" and f.evidence["source"] == "nvidia-smi"


def test_missing_lanes_in_a_vm_warn(tmp_path: Path) -> None:
    # The capture as it is (a pass-through VM): the emulated upstream port is ignored.
    root = tree(tmp_path, pci=pci(cur=("32.0 GT/s PCIe", 8), slot=(GEN4, 4)))
    f = by_subject(run(root, "gpu.pcie.link"))[GPU0]
    assert f.status.value == "warn" and "VM" in f.summary and f.evidence["slot"] is None


@pytest.mark.parametrize(("rel", "why"), [(DUAL_2070, "slot is narrower"), (T4_VM, "VM")])
def test_narrow_desktop_or_vm_links_warn(tmp_path: Path, rel: str, why: str) -> None:
    # Real captures: two RTX 2070s at x8 of x16 (a desktop board), a T4 in a g4dn VM at x8.
    found = run(tree(tmp_path, nvsmi=xml(rel), pci={}), "gpu.pcie.link")
    assert all(f.status.value == "warn" and why in f.summary for f in found)


def test_link_not_reported_skips(tmp_path: Path) -> None:
    [f] = run(tree(tmp_path, nvsmi=xml(GT730), pci={}), "gpu.pcie.link")
    assert f.status.value == "skip"


# --- AER and replays -----------------------------------------------------------------------


def aer(tmp_path: Path, uptime_s: float = 86400.0, **first: object) -> object:
    root = tree(tmp_path, pci=pci(**first), uptime_s=uptime_s)
    return by_subject(run(root, "gpu.pcie.aer"))[GPU0]


def test_no_aer_errors_pass(tmp_path: Path) -> None:
    found = run(tree(tmp_path), "gpu.pcie.aer")
    assert statuses(found) == {"pass"} and found[0].evidence["replays"] == 150


@pytest.mark.parametrize(
    ("counts", "status"),
    [((0, 0, 1), "fail"), ((0, 2, 0), "fail"), ((101, 0, 0), "warn"), ((100, 0, 0), "pass")],
)
def test_aer_counters(tmp_path: Path, counts: tuple[int, int, int], status: str) -> None:
    f = aer(tmp_path, aer=counts)
    assert f.status.value == status  # type: ignore[attr-defined]


def test_replay_rate_warns(tmp_path: Path) -> None:
    # GPU 0 of the capture counted 150 replays: over one minute of uptime that is 150/min.
    f = aer(tmp_path, uptime_s=60.0)
    assert f.status.value == "warn" and f.evidence["replays_per_minute"] == 150  # type: ignore[attr-defined]


def test_device_without_aer_skips(tmp_path: Path) -> None:
    f = aer(tmp_path, aer=None)
    assert f.status.value == "skip" and "not supported" in f.summary  # type: ignore[attr-defined]


def test_gpu_missing_from_sysfs_is_unknown(tmp_path: Path) -> None:
    found = run(tree(tmp_path, pci={}), "gpu.pcie.aer")
    assert statuses(found) == {"unknown"}

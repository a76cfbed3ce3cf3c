"""gpu.ecc.*: faults made by editing the ECC counters of real captures (H100, K80, T4...)."""

from __future__ import annotations

from pathlib import Path

import pytest

from dolmen.checks.gpu.ecc import split
from dolmen.host.gpu.nvsmi import parse_nvsmi_xml
from tests.checks.gpu.trees import by_subject, edit_gpu, run, statuses, tree, xml

K80 = "nvidia-smi-xml/openpai__nvidia_smi_out_of_order.xml"
RTX3090 = "nvidia-smi-xml/telegraf__3090-v13.xml"
ADA = "nvidia-smi-xml/telegraf__rtx-4000-sff-ada-v13.xml"
INJECTED = "nvidia-smi-xml-mock/k8s-test-infra__qx-gb200-ecc-injected.xml"
GPU3 = "gpu:00000000:86:00.0"
CHECKS = (
    "gpu.ecc.volatile_uncorrectable",
    "gpu.ecc.aggregate_uncorrectable",
    "gpu.ecc.volatile_correctable",
    "gpu.ecc.mode",
    "gpu.ecc.sram_threshold",
)
_AGG_SRAM = (
    r"(<aggregate>\s*<sram_correctable>0</sram_correctable>\s*"
    r"<sram_uncorrectable_parity>0</sram_uncorrectable_parity>\s*<sram_uncorrectable_secded>)0"
)


@pytest.mark.parametrize("check", CHECKS)
def test_healthy_h100_passes(tmp_path: Path, check: str) -> None:
    found = run(tree(tmp_path, pci={}), check)
    assert statuses(found) == {"pass"} and len(found) == 8


def test_volatile_dbe_fails_that_gpu_only(tmp_path: Path) -> None:
    # The first dram_uncorrectable of a <gpu> block is the volatile one.
    bad = edit_gpu(xml(), 3, r"<dram_uncorrectable>0<", "<dram_uncorrectable>2<")
    found = by_subject(run(tree(tmp_path, nvsmi=bad, pci={}), "gpu.ecc.volatile_uncorrectable"))
    f = found[GPU3]
    assert f.status.value == "fail" and f.evidence["count"] == 2
    assert f.evidence["locations"] == {"dram_uncorrectable": 2}
    assert "nvidia-smi -r" in (f.remedy or "")
    assert {g.status.value for s, g in found.items() if s != GPU3} == {"pass"}


def test_injected_mock_fails_volatile_and_warns_aggregate(tmp_path: Path) -> None:
    root = tree(tmp_path, nvsmi=xml(INJECTED), pci={})
    vol = by_subject(run(root, "gpu.ecc.volatile_uncorrectable"))["gpu:00000000:0A:00.0"]
    assert vol.status.value == "fail" and vol.evidence["count"] == 5
    agg = by_subject(run(root, "gpu.ecc.aggregate_uncorrectable"))["gpu:00000000:0A:00.0"]
    assert agg.status.value == "warn" and agg.evidence["dram"] == 8


def test_aggregate_sram_uncorrectable_fails(tmp_path: Path) -> None:
    bad = edit_gpu(xml(), 1, _AGG_SRAM, r"\g<1>1")
    found = by_subject(run(tree(tmp_path, nvsmi=bad, pci={}), "gpu.ecc.aggregate_uncorrectable"))
    f = found["gpu:00000000:64:00.0"]
    assert f.status.value == "fail" and f.evidence["sram"] == 1 and "SRAM" in f.summary
    assert f.remedy is not None and "drain the node" in f.remedy


def test_aggregate_on_old_layout_counts_device_memory_as_dram(tmp_path: Path) -> None:
    # The real K80: 7 lifetime double-bit errors in device memory on its first GPU.
    found = by_subject(
        run(tree(tmp_path, nvsmi=xml(K80), pci={}), "gpu.ecc.aggregate_uncorrectable")
    )
    f = found["gpu:00001580:00:00.0"]
    assert f.status.value == "warn" and (f.evidence["sram"], f.evidence["dram"]) == (0, 7)
    # DRAM only, repaired by page retirement: the remedy is the repair's, not SRAM's drain.
    assert f.remedy is not None and "gpu.retired_pages" in f.remedy
    assert "SRAM" not in f.remedy and "drain" not in f.remedy


@pytest.mark.parametrize(
    ("tag", "value", "status"),
    [
        ("dram_correctable", 20_000_001, "fail"),
        ("dram_correctable", 20_000_000, "pass"),
        ("sram_correctable", 10_001, "fail"),
        ("sram_correctable", 9_999, "pass"),
    ],
)
def test_corrected_limits(tmp_path: Path, tag: str, value: int, status: str) -> None:
    bad = edit_gpu(xml(), 3, rf"<{tag}>0<", f"<{tag}>{value}<")
    found = by_subject(run(tree(tmp_path, nvsmi=bad, pci={}), "gpu.ecc.volatile_correctable"))
    assert found[GPU3].status.value == status
    assert found[GPU3].evidence["limits"]["max_sram"] == 10_000


def test_corrected_limit_from_site_config(tmp_path: Path) -> None:
    bad = edit_gpu(xml(), 3, r"<dram_correctable>0<", "<dram_correctable>500<")
    site = '[thresholds."gpu.ecc.volatile_correctable"]\nmax_dram = 100\n'
    found = by_subject(run(tree(tmp_path, nvsmi=bad, pci={}), "gpu.ecc.volatile_correctable", site))
    assert found[GPU3].status.value == "fail" and "DRAM 500 > 100" in found[GPU3].summary


def test_corrected_on_old_layout(tmp_path: Path) -> None:
    bad = edit_gpu(xml(K80), 0, r"<device_memory>0<", "<device_memory>25000000<")
    found = by_subject(run(tree(tmp_path, nvsmi=bad, pci={}), "gpu.ecc.volatile_correctable"))
    assert found["gpu:00001580:00:00.0"].status.value == "fail"
    assert found["gpu:00002DF7:00:00.0"].status.value == "pass"


def test_split_layouts() -> None:
    k80 = parse_nvsmi_xml(xml(K80)).gpus[0]
    assert split(k80.ecc.aggregate, "uncorrectable") == (0, 7)
    h100 = parse_nvsmi_xml(xml()).gpus[0]
    assert split(h100.ecc.volatile, "uncorrectable") == (0, 0)


@pytest.mark.parametrize("check", CHECKS)
def test_geforce_without_ecc_skips(tmp_path: Path, check: str) -> None:
    [f] = run(tree(tmp_path, nvsmi=xml(RTX3090), pci={}), check)
    assert f.status.value == "skip" and "not supported" in f.summary


def test_unreadable_counter_is_unknown(tmp_path: Path) -> None:
    bad = edit_gpu(xml(), 2, r"<dram_uncorrectable>0<", "<dram_uncorrectable>Unknown Error<")
    found = by_subject(run(tree(tmp_path, nvsmi=bad, pci={}), "gpu.ecc.volatile_uncorrectable"))
    f = found["gpu:00000000:75:00.0"]
    assert f.status.value == "unknown" and "unreadable" in f.summary


def test_ecc_disabled_on_datacenter_gpu_warns(tmp_path: Path) -> None:
    bad = edit_gpu(xml(), 0, r"<current_ecc>Enabled<", "<current_ecc>Disabled<")
    bad = edit_gpu(bad, 0, r"<pending_ecc>Enabled<", "<pending_ecc>Disabled<")
    found = by_subject(run(tree(tmp_path, nvsmi=bad, pci={}), "gpu.ecc.mode"))
    f = found["gpu:00000000:53:00.0"]
    assert f.status.value == "warn" and "disabled" in f.summary
    assert "nvidia-smi -e 1 -i 00000000:53:00.0" in (f.remedy or "")


def test_ecc_mode_change_pending_warns(tmp_path: Path) -> None:
    bad = edit_gpu(xml(), 5, r"<pending_ecc>Enabled<", "<pending_ecc>Disabled<")
    found = by_subject(run(tree(tmp_path, nvsmi=bad, pci={}), "gpu.ecc.mode"))
    f = found["gpu:00000000:A8:00.0"]
    assert f.status.value == "warn" and "next GPU reset" in f.summary
    assert (f.evidence["current"], f.evidence["pending"]) == (True, False)


def test_ecc_disabled_on_workstation_board_skips(tmp_path: Path) -> None:
    [f] = run(tree(tmp_path, nvsmi=xml(ADA), pci={}), "gpu.ecc.mode")
    assert f.status.value == "skip" and f.evidence["brand"] == "NVIDIA RTX"


def test_sram_threshold_exceeded_fails(tmp_path: Path) -> None:
    bad = edit_gpu(xml(), 7, r"<sram_threshold_exceeded>No<", "<sram_threshold_exceeded>Yes<")
    found = by_subject(run(tree(tmp_path, nvsmi=bad, pci={}), "gpu.ecc.sram_threshold"))
    assert found["gpu:00000000:CA:00.0"].status.value == "fail"
    assert found["gpu:00000000:53:00.0"].status.value == "pass"

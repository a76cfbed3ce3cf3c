"""gpu.fabric, gpu.reset_required, gpu.mig, gpu.consistency and gpu.memory.idle_usage."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.checks.gpu.trees import by_subject, edit_gpu, run, statuses, tree, xml
from tests.host.gpu.captures import capture_section

GB200 = "nvidia-smi-xml/k8s-test-infra__hardware__qx-gb200.xml"
DEGRADED = "nvidia-smi-xml-mock/k8s-test-infra__qx-gb200-fabric-degraded.xml"
A100_VM = "nvidia-smi-xml/k8s-test-infra__hardware__qx-a100.xml"
A100_MIG = "nvidia-smi-xml/telegraf__a100-sxm4-v12.xml"
K80 = "nvidia-smi-xml/openpai__nvidia_smi_out_of_order.xml"
RTX3090 = "nvidia-smi-xml/telegraf__3090-v13.xml"
RTX3060 = "nvidia-smi-xml/telegraf__rtx-3060-v12.xml"
V100 = "nvidia-smi-xml/datakit__gtx-1card.xml"
GPU1 = "gpu:00000000:64:00.0"
A100_SUBJECT = "gpu:00000000:01:00.0"


# --- fabric --------------------------------------------------------------------------------


@pytest.mark.parametrize("rel", ["nvidia-smi-xml/k8s-test-infra__hardware__qx-h100.xml", GB200])
def test_registered_fabric_passes(tmp_path: Path, rel: str) -> None:
    found = run(tree(tmp_path, nvsmi=xml(rel), pci={}), "gpu.fabric")
    assert statuses(found) == {"pass"}
    assert found[0].evidence["state"] == "Completed"


def test_unhealthy_route_fails(tmp_path: Path) -> None:
    found = by_subject(run(tree(tmp_path, nvsmi=xml(DEGRADED), pci={}), "gpu.fabric"))
    bad = found["gpu:00000000:0B:00.0"]
    assert bad.status.value == "fail" and "route_unhealthy" in bad.summary
    assert bad.evidence["health"]["summary"] == "Unhealthy"
    assert found["gpu:00000000:0A:00.0"].status.value == "pass"


@pytest.mark.parametrize(
    ("find", "value", "status"),
    [
        (r"<state>Completed<", "<state>In Progress<", "warn"),
        (r"<state>Completed<", "<state>Not Started<", "fail"),
        (r"<status>Success<", "<status>Failure<", "fail"),
        (r"<state>Completed<", "<state>Unknown Error<", "unknown"),
    ],
)
def test_fabric_states(tmp_path: Path, find: str, value: str, status: str) -> None:
    text = edit_gpu(xml(), 1, find, value)
    f = by_subject(run(tree(tmp_path, nvsmi=text, pci={}), "gpu.fabric"))[GPU1]
    assert f.status.value == status


def test_fabric_not_supported_skips(tmp_path: Path) -> None:
    [f] = run(tree(tmp_path, nvsmi=xml(A100_VM), pci={}), "gpu.fabric")
    assert f.status.value == "skip"


# --- reset / recovery ------------------------------------------------------------------------


def test_no_recovery_action_passes(tmp_path: Path) -> None:
    found = run(tree(tmp_path, pci={}), "gpu.reset_required")
    assert statuses(found) == {"pass"} and found[0].evidence["recovery_action"] == "None"


def test_recovery_action_fails_with_its_remedy(tmp_path: Path) -> None:
    text = edit_gpu(xml(), 1, r"<gpu_recovery_action>None<", "<gpu_recovery_action>Node Reboot<")
    f = by_subject(run(tree(tmp_path, nvsmi=text, pci={}), "gpu.reset_required"))[GPU1]
    assert f.status.value == "fail" and "Node Reboot" in f.summary
    assert "reboot it" in (f.remedy or "")


def test_pending_channel_repair_fails(tmp_path: Path) -> None:
    text = edit_gpu(xml(), 1, r"<channel_repair_pending>No<", "<channel_repair_pending>Yes<")
    f = by_subject(run(tree(tmp_path, nvsmi=text, pci={}), "gpu.reset_required"))[GPU1]
    assert f.status.value == "fail" and "channel repair pending" in f.summary


@pytest.mark.parametrize(
    ("tag", "words"),
    [("reset_required", "requires a reset"), ("drain_and_reset_recommended", "draining")],
)
def test_reset_status_of_older_drivers(tmp_path: Path, tag: str, words: str) -> None:
    ok = run(tree(tmp_path / "ok", nvsmi=xml(A100_MIG), pci={}), "gpu.reset_required")
    assert statuses(ok) == {"pass"}
    text = edit_gpu(xml(A100_MIG), 0, rf"<{tag}>No<", f"<{tag}>Yes<")
    [f] = run(tree(tmp_path / "bad", nvsmi=text, pci={}), "gpu.reset_required")
    assert f.status.value == "fail" and words in f.summary


def test_reset_status_absent_skips(tmp_path: Path) -> None:
    assert statuses(run(tree(tmp_path, nvsmi=xml(K80), pci={}), "gpu.reset_required")) == {"skip"}


# --- MIG -----------------------------------------------------------------------------------


def test_mig_with_instances_passes(tmp_path: Path) -> None:
    [f] = run(tree(tmp_path, nvsmi=xml(A100_MIG), pci={}), "gpu.mig")
    assert f.status.value == "pass" and f.evidence["devices"] == 4


def test_mig_pending_change_warns(tmp_path: Path) -> None:
    text = edit_gpu(xml(), 1, r"<pending_mig>Disabled<", "<pending_mig>Enabled<")
    f = by_subject(run(tree(tmp_path, nvsmi=text, pci={}), "gpu.mig"))[GPU1]
    assert f.status.value == "warn" and "next GPU reset" in f.summary


def test_mig_without_instances_warns(tmp_path: Path) -> None:
    text = edit_gpu(
        xml(A100_MIG), 0, r"(?s)<mig_devices>.*?</mig_devices>", "<mig_devices>None</mig_devices>"
    )
    [f] = run(tree(tmp_path, nvsmi=text, pci={}), "gpu.mig")
    assert f.status.value == "warn" and "no GPU instance" in f.summary


def test_mig_not_supported_skips(tmp_path: Path) -> None:
    [f] = run(tree(tmp_path, nvsmi=xml(RTX3090), pci={}), "gpu.mig")
    assert f.status.value == "skip"


# --- consistency ---------------------------------------------------------------------------


def test_alike_gpus_pass_and_board_parts_are_noted(tmp_path: Path) -> None:
    # The real HGX capture: one module carries another board part number, same VBIOS and GPU part.
    [f] = run(tree(tmp_path, pci={}), "gpu.consistency")
    assert (f.status.value, f.subject) == ("pass", "host")
    assert "2 board part numbers" in f.evidence["note"]


def test_dual_gpu_boards_compare_per_board(tmp_path: Path) -> None:
    # Real K80s: each board's two chips carry .05 and .06; both boards alike.
    [f] = run(tree(tmp_path, nvsmi=xml(K80), pci={}), "gpu.consistency")
    assert f.status.value == "pass"


@pytest.mark.parametrize(
    ("find", "value", "words"),
    [
        (r"<vbios_version>96.00.99.00.01<", "<vbios_version>96.00.99.00.02<", "2 VBIOSs"),
        (r"<gpu_part_number>2330-885-A1<", "<gpu_part_number>2330-885-A2<", "2 GPU part numbers"),
        (r"<product_name>NVIDIA H100 80GB HBM3<", "<product_name>NVIDIA H200<", "mixed GPU models"),
    ],
)
def test_odd_gpu_warns(tmp_path: Path, find: str, value: str, words: str) -> None:
    text = edit_gpu(xml(), 6, find, value)
    [f] = run(tree(tmp_path, nvsmi=text, pci={}), "gpu.consistency")
    assert f.status.value == "warn" and words in f.summary


def test_unreadable_vbios_is_unknown(tmp_path: Path) -> None:
    text = edit_gpu(xml(), 6, r"<vbios_version>96.00.99.00.01<", "<vbios_version>Unknown Error<")
    [f] = run(tree(tmp_path, nvsmi=text, pci={}), "gpu.consistency")
    assert f.status.value == "unknown"


def test_single_gpu_skips(tmp_path: Path) -> None:
    [f] = run(tree(tmp_path, nvsmi=xml(RTX3090), pci={}), "gpu.consistency")
    assert f.status.value == "skip"


# --- memory left on idle GPUs ----------------------------------------------------------------


def test_idle_gpus_hold_no_memory(tmp_path: Path) -> None:
    found = run(tree(tmp_path, pci={}), "gpu.memory.idle_usage")
    assert statuses(found) == {"pass"} and found[0].evidence["limit_mib"] == 15


def test_memory_left_behind_warns(tmp_path: Path) -> None:
    text = edit_gpu(xml(), 1, r"(?s)(<fb_memory_usage>.*?<used>)0 MiB<", r"\g<1>1024 MiB<")
    f = by_subject(run(tree(tmp_path, nvsmi=text, pci={}), "gpu.memory.idle_usage"))[GPU1]
    assert f.status.value == "warn" and f.evidence["used_mib"] == 1024


@pytest.mark.parametrize(("rel", "status"), [(RTX3060, "warn"), (A100_MIG, "skip"), (V100, "skip")])
def test_idle_usage_on_real_captures(tmp_path: Path, rel: str, status: str) -> None:
    # RTX 3060: 116 MiB, no process listed; A100: MIG mode; V100: four processes running.
    [f] = run(tree(tmp_path, nvsmi=xml(rel), pci={}), "gpu.memory.idle_usage")
    assert f.status.value == status


def _idle_edit(used: int, util: str) -> str:
    """The H100 capture with GPU 1 holding ``used`` MiB at ``util`` utilisation, no process."""
    text = edit_gpu(xml(), 1, r"(?s)(<fb_memory_usage>.*?<used>)0 MiB<", rf"\g<1>{used} MiB<")
    return edit_gpu(text, 1, r"<gpu_util>0 %<", f"<gpu_util>{util}<")


@pytest.mark.parametrize(
    ("used", "util", "status", "words"),
    [
        (1024, "0 %", "warn", "0% utilisation: a leaked or stuck context"),
        # A job whose processes nvidia-smi cannot see (another PID namespace): not a leak.
        (40000, "97 %", "skip", "a job is running"),
        (1024, "Unknown Error", "unknown", "cannot be told from a leftover context"),
        (1024, "N/A", "warn", "utilisation not reported by this board"),
        (10, "Unknown Error", "pass", "10 MiB used"),  # under the limit: nothing held
    ],
)
def test_idle_memory_is_judged_with_utilisation(
    tmp_path: Path, used: int, util: str, status: str, words: str
) -> None:
    f = by_subject(
        run(tree(tmp_path, nvsmi=_idle_edit(used, util), pci={}), "gpu.memory.idle_usage")
    )
    assert (f[GPU1].status.value, f[GPU1].evidence["used_mib"]) == (status, used)
    assert words in f[GPU1].summary


def test_busy_gpu_on_the_real_load_capture_is_not_a_leak(tmp_path: Path) -> None:
    # The H100 capture under load: 3 processes, 100% busy: skipped, never warned.
    text = capture_section(
        "nvidia_gpu_exporter__linux-x86_64__nvidia-h100-80gb-hbm3__590.48.01.txt",
        "load",
        "nvidia-smi",
    )
    [f] = run(
        tree(tmp_path, nvsmi="", pci={}, commands={"nvidia-smi": text}), "gpu.memory.idle_usage"
    )
    assert f.status.value == "skip" and f.evidence["utilization_pct"] == 100

"""gpu.clock_events, gpu.temperature and gpu.power on real captures and edited copies."""

from __future__ import annotations

from pathlib import Path

import pytest

from dolmen.checks.model import Status
from tests.checks.gpu.trees import by_subject, edit_gpu, run, statuses, tree, xml
from tests.conftest import make_tree, recording

A100 = "nvidia-smi-xml/k8s-test-infra__hardware__qx-a100.xml"
RTX3090 = "nvidia-smi-xml/telegraf__3090-v13.xml"
RTX3090_V12 = "nvidia-smi-xml/telegraf__rtx-3090-v12.xml"
K80 = "nvidia-smi-xml/openpai__nvidia_smi_out_of_order.xml"
P4_VGPU = "nvidia-smi-xml/telegraf__tesla_p4.xml"
GT730 = "nvidia-smi-xml/openpai__nvidia_smi_outdated_gpu.xml"
QUADRO = "nvidia-smi-xml/telegraf__quadro-p400.xml"
COUNTERS = "nvidia-smi-xml-mock/k8s-test-infra__qx-gb200-throttle-counters.xml"
GPU2 = "gpu:00000000:75:00.0"


# --- clock event reasons -------------------------------------------------------------------


def test_idle_h100_has_no_slowdown(tmp_path: Path) -> None:
    found = run(tree(tmp_path, pci={}), "gpu.clock_events")
    assert statuses(found) == {"pass"}
    assert found[0].evidence["active"] == ["gpu_idle"]
    assert found[0].evidence["counters_us"]["sw_power_cap"] == 7015662857


@pytest.mark.parametrize(
    ("reason", "status"),
    [
        ("hw_thermal_slowdown", "fail"),
        ("hw_power_brake_slowdown", "fail"),
        ("hw_slowdown", "warn"),
        ("sw_thermal_slowdown", "warn"),
        ("sw_power_cap", "pass"),
        ("sync_boost", "pass"),
    ],
)
def test_active_reasons(tmp_path: Path, reason: str, status: str) -> None:
    tag = f"clocks_event_reason_{reason}"
    bad = edit_gpu(xml(), 2, rf"<{tag}>Not Active<", f"<{tag}>Active<")
    f = by_subject(run(tree(tmp_path, nvsmi=bad, pci={}), "gpu.clock_events"))[GPU2]
    assert f.status.value == status and reason in f.evidence["active"]


def test_time_in_hw_slowdown_warns(tmp_path: Path) -> None:
    tag = "clocks_event_reasons_counters_hw_therm_slowdown"
    bad = edit_gpu(xml(), 2, rf"<{tag}>0 us<", f"<{tag}>5000000 us<")
    f = by_subject(run(tree(tmp_path, nvsmi=bad, pci={}), "gpu.clock_events"))[GPU2]
    assert f.status.value == "warn" and "hw_thermal_slowdown 5.0 s" in f.summary


def test_power_cap_counters_pass(tmp_path: Path) -> None:
    found = by_subject(run(tree(tmp_path, nvsmi=xml(COUNTERS), pci={}), "gpu.clock_events"))
    f = found["gpu:00000000:0A:00.0"]
    assert f.status.value == "pass" and f.evidence["counters_us"]["sw_power_cap"] == 39595


@pytest.mark.parametrize("rel", [RTX3090, K80])
def test_power_cap_and_application_clocks_pass(tmp_path: Path, rel: str) -> None:
    # The RTX 3090 at sw_power_cap (R535+ names); the K80 at applications clocks (throttle names).
    assert statuses(run(tree(tmp_path, nvsmi=xml(rel), pci={}), "gpu.clock_events")) == {"pass"}


def test_reasons_not_supported_skip(tmp_path: Path) -> None:
    [f] = run(tree(tmp_path, nvsmi=xml(P4_VGPU), pci={}), "gpu.clock_events")
    assert f.status.value == "skip"


def test_reasons_refused_are_unknown(tmp_path: Path) -> None:
    bad = edit_gpu(
        xml(),
        2,
        r"(?s)<clocks_event_reasons>.*?</clocks_event_reasons>",
        "<clocks_event_reasons>Insufficient Permissions</clocks_event_reasons>",
    )
    f = by_subject(run(tree(tmp_path, nvsmi=bad, pci={}), "gpu.clock_events"))[GPU2]
    assert f.status.value == "unknown" and "insufficient permissions" in f.summary


# --- temperature ---------------------------------------------------------------------------


def test_tlimit_margin(tmp_path: Path) -> None:
    ok = by_subject(run(tree(tmp_path / "ok", pci={}), "gpu.temperature"))[GPU2]
    # Margin to slowdown = T.Limit margin - slowdown offset (-2 C on the H100).
    assert ok.status.value == "pass"
    assert ok.evidence["margins_c"] == {"gpu": ok.evidence["tlimit_c"] + 2}
    warm = edit_gpu(xml(), 2, r"<gpu_temp_tlimit>\d+ C<", "<gpu_temp_tlimit>5 C<")
    f = by_subject(run(tree(tmp_path / "w", nvsmi=warm, pci={}), "gpu.temperature"))[GPU2]
    assert f.status.value == "warn" and f.evidence["margins_c"] == {"gpu": 7}
    hot = edit_gpu(xml(), 2, r"<gpu_temp_tlimit>\d+ C<", "<gpu_temp_tlimit>-2 C<")
    f = by_subject(run(tree(tmp_path / "h", nvsmi=hot, pci={}), "gpu.temperature"))[GPU2]
    assert f.status.value == "fail" and f.evidence["margins_c"] == {"gpu": 0}


@pytest.mark.parametrize(
    ("find", "value", "status"),
    [
        (r"<gpu_temp>33 C<", "<gpu_temp>84 C<", "warn"),
        (r"<gpu_temp>33 C<", "<gpu_temp>89 C<", "fail"),
        (r"<memory_temp>34 C<", "<memory_temp>93 C<", "warn"),
    ],
)
def test_absolute_thresholds(tmp_path: Path, find: str, value: str, status: str) -> None:
    text = edit_gpu(xml(A100), 0, find, value)
    [f] = run(tree(tmp_path, nvsmi=text, pci={}), "gpu.temperature")
    assert f.status.value == status and f.evidence["slowdown_c"] == 89


def test_site_absolute_limit(tmp_path: Path) -> None:
    site = '[thresholds."gpu.temperature"]\nmax_c = 29\n'
    f = by_subject(run(tree(tmp_path, pci={}), "gpu.temperature", site))["gpu:00000000:53:00.0"]
    assert f.status.value == "fail" and "site limit 29 C" in f.summary


@pytest.mark.parametrize("rel", [P4_VGPU, GT730])
def test_temperature_without_thresholds_skips(tmp_path: Path, rel: str) -> None:
    [f] = run(tree(tmp_path, nvsmi=xml(rel), pci={}), "gpu.temperature")
    assert f.status.value == "skip" and "not shown" not in f.summary  # the GPU's own words


def test_temperature_unreadable_is_unknown(tmp_path: Path) -> None:
    text = edit_gpu(xml(A100), 0, r"<gpu_temp>33 C<", "<gpu_temp>Unknown Error<")
    [f] = run(tree(tmp_path, nvsmi=text, pci={}), "gpu.temperature")
    assert f.status.value == "unknown"


# --- power ---------------------------------------------------------------------------------


def test_power_within_default_limit(tmp_path: Path) -> None:
    found = run(tree(tmp_path, pci={}), "gpu.power")
    assert statuses(found) == {"pass"}
    assert found[0].evidence["kb_tdp_w"] == 700 and found[0].evidence["kb_model"] == "h100-sxm"


def test_power_capped_by_the_administrator_warns(tmp_path: Path) -> None:
    # The real RTX 3090 capture: 200 W requested and enforced of a 350 W default.
    [f] = run(tree(tmp_path, nvsmi=xml(RTX3090_V12), pci={}), "gpu.power")
    assert f.status.value == "warn" and "set by the administrator" in f.summary
    assert "nvidia-smi -pl 350" in (f.remedy or "")


def test_power_cap_against_kb_tdp(tmp_path: Path) -> None:
    text = edit_gpu(xml(), 2, r"<current_power_limit>700.00 W<", "<current_power_limit>500.00 W<")
    text = edit_gpu(text, 2, r"<default_power_limit>700.00 W<", "<default_power_limit>N/A<")
    f = by_subject(run(tree(tmp_path, nvsmi=text, pci={}), "gpu.power"))[GPU2]
    assert f.status.value == "warn" and "500 W of 700 W" in f.summary
    assert f.evidence["default_limit_w"] is None and "driver or a power brake" in f.summary


def test_draw_above_limit_fails(tmp_path: Path) -> None:
    text = edit_gpu(xml(), 2, r"<instant_power_draw>[\d.]+ W<", "<instant_power_draw>800.00 W<")
    f = by_subject(run(tree(tmp_path, nvsmi=text, pci={}), "gpu.power"))[GPU2]
    assert f.status.value == "fail" and f.evidence["draw_w"] == 800.0


def test_power_not_supported_skips(tmp_path: Path) -> None:
    [f] = run(tree(tmp_path, nvsmi=xml(QUADRO), pci={}), "gpu.power")
    assert f.status.value == "skip"


def test_fan_err_in_the_table_is_a_warning(tmp_path: Path) -> None:
    """The default table's fan column reads ERR! where NVML failed on the fan."""
    table = recording("nvidia-smi-text/gpud__nvidia-smi.525.125.06.out.0.valid").read_text()
    root = make_tree(tmp_path, commands={"nvidia-smi": table})
    [f] = run(root, "gpu.temperature")
    assert f.status is Status.WARN and "the fan could not be read" in f.summary
    root = make_tree(tmp_path / "na", commands={"nvidia-smi": table.replace("|ERR!", "| N/A")})
    [f] = run(root, "gpu.temperature")
    assert f.status is Status.SKIP  # N/A: no fan to read (passively cooled), no threshold
    assert "the slowdown threshold is not shown" in f.summary  # the table's, not the GPU's

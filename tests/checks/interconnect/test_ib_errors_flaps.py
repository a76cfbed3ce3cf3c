"""interconnect.ib.errors and interconnect.ib.flaps: the real H100 port counters (a saturated
link_downed of 255 on mlx5_1), Azure's lost-carrier syslog lines, mlx5 link lines of a real
boot, node_exporter's counters without a PMA."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from dolmen.checks.model import Status
from tests.checks.helpers import by_subject, run_check
from tests.conftest import make_tree, recording
from tests.facts.trees import extract_ttar

COUNTERS = "sys/class/infiniband/{dev}/ports/1/counters/{name}"
DAY = 86400
# Azure/azurehpc-health-checks test/data/1dev_6flap_syslog (MIT): systemd-networkd on an ND VM.
LOST = "Aug 17 06:18:{s:02d} jplc7eb7-vm-0 systemd-networkd[5398]: ib6: lost carrier\n"
GAINED = "Aug 17 06:18:{s:02d} jplc7eb7-vm-0 systemd-networkd[5398]: ib6: Gained carrier\n"


def _clean() -> str:
    """Azure's syslog without flaps (its last line has no newline)."""
    return recording("kernel-logs/azurehpc__0flap_syslog").read_text() + "\n"


def _uptime(root: Path, seconds: float) -> None:
    make_tree(root, files={"proc/uptime": f"{seconds:.2f} {seconds * 100:.2f}\n"})


def _counter(root: Path, dev: str, name: str, value: int) -> None:
    (root / COUNTERS.format(dev=dev, name=name)).write_text(f"{value}\n")


@pytest.fixture
def h100(tmp_path: Path) -> Path:
    shutil.copytree(
        recording("sysfs/gpud__sys-class-infiniband-h100.0"), tmp_path / "sys/class/infiniband"
    )
    return make_tree(tmp_path, commands={"dmesg": _clean()})


def test_errors_within_limits_over_the_uptime(h100: Path) -> None:
    _uptime(h100, 38 * DAY)
    findings = run_check(h100, "interconnect.ib.errors")
    assert len(findings) == 9 and all(f.status is Status.PASS for f in findings)
    f = by_subject(findings)["ib:mlx5_0/1"]
    assert f.evidence["counters"]["port_rcv_errors"] == 14
    assert f.evidence["days_counted"] == 38


def test_errors_uptime_unknown_is_unknown_never_a_per_day_warning(h100: Path) -> None:
    findings = run_check(h100, "interconnect.ib.errors")
    f = by_subject(findings)["ib:mlx5_0/1"]
    assert f.status is Status.UNKNOWN and "uptime unknown" in f.summary
    assert "no rate to judge" in f.summary and "proc/uptime" in f.summary
    assert f.evidence["over"] == {"port_rcv_errors": 14, "excessive_buffer_overrun_errors": 15}
    assert not any(f.status is Status.WARN for f in findings)
    # Within the limits is within them per any day: a pass needs no uptime.
    for name in ("port_rcv_errors", "excessive_buffer_overrun_errors"):
        _counter(h100, "mlx5_0", name, 3)
    assert by_subject(run_check(h100, "interconnect.ib.errors"))["ib:mlx5_0/1"].status is (
        Status.PASS
    )


def test_errors_symbol_errors_over_a_day(h100: Path) -> None:
    _uptime(h100, 20 * 3600)
    _counter(h100, "mlx5_4", "symbol_error", 5000)
    _counter(h100, "mlx5_4", "port_rcv_errors", 0)
    _counter(h100, "mlx5_4", "excessive_buffer_overrun_errors", 0)
    by = by_subject(run_check(h100, "interconnect.ib.errors"))
    f = by["ib:mlx5_4/1"]
    assert f.status is Status.WARN and f.evidence["over"] == {"symbol_error": 5000}
    assert "symbol_error 5000 (> 10/day) over 1 day(s) up" in f.summary
    assert f.remedy and "mlxlink" in f.remedy
    # The others carry 14 receive errors in under a day: over the limit of 10 too.
    assert by["ib:mlx5_0/1"].status is Status.WARN


def test_errors_site_limits(h100: Path) -> None:
    _uptime(h100, 38 * DAY)
    by = by_subject(
        run_check(h100, "interconnect.ib.errors", per_day={"port_rcv_switch_relay_errors": 0})
    )
    assert by["ib:mlx5_1/1"].status is Status.WARN  # 2 relay errors, site allows none
    assert by["ib:mlx5_1/1"].evidence["over"] == {"port_rcv_switch_relay_errors": 2}


def test_errors_without_pma_and_from_ibstat(tmp_path: Path) -> None:
    ne = extract_ttar(
        recording("sysfs/node_exporter__sys.ttar"), tmp_path / "ne", only=("sys/class/infiniband",)
    )
    by = by_subject(run_check(ne, "interconnect.ib.errors"))
    assert by["ib:i40iw0/1"].status is Status.SKIP and "no PMA" in by["ib:i40iw0/1"].summary
    mlx4 = by["ib:mlx4_0/1"]  # port_xmit_wait 4294967295 counts congestion: not judged
    assert mlx4.status is Status.PASS and "port_xmit_wait" not in mlx4.evidence["counters"]
    text = recording("infiniband/gpud__ibstat.47.0.h100.all.active.2").read_text()
    root = make_tree(tmp_path / "ibstat", commands={"ibstat": text})
    findings = run_check(root, "interconnect.ib.errors")
    assert all(f.status is Status.UNKNOWN and "ibstat only" in f.summary for f in findings)


def test_flaps_saturated_counter_over_a_long_uptime(h100: Path) -> None:
    _uptime(h100, 38 * DAY)
    by = by_subject(run_check(h100, "interconnect.ib.flaps"))
    f = by["ib:mlx5_1/1"]
    assert f.status is Status.PASS and "saturated" in f.summary
    assert f.evidence["link_downed"] == 255 and f.evidence["proven_at"] == 3 * 304
    assert by["host"].status is Status.PASS and "no link loss" in by["host"].summary


def test_flaps_counter_proven_within_three_hours(h100: Path) -> None:
    _uptime(h100, 2 * 3600)
    _counter(h100, "mlx5_6", "link_downed", 3)
    by = by_subject(run_check(h100, "interconnect.ib.flaps"))
    assert by["ib:mlx5_1/1"].status is Status.FAIL
    assert by["ib:mlx5_6/1"].status is Status.FAIL
    assert "at least 3 link losses within 3 hours" in by["ib:mlx5_6/1"].summary
    assert by["ib:mlx5_0/1"].status is Status.PASS


def test_flaps_counter_uptime_unknown_is_unknown(h100: Path) -> None:
    by = by_subject(run_check(h100, "interconnect.ib.flaps"))
    f = by["ib:mlx5_1/1"]
    assert f.status is Status.UNKNOWN and "uptime unknown" in f.summary
    assert by["ib:mlx5_0/1"].status is Status.PASS


def test_flaps_azure_lost_carrier_lines(h100: Path) -> None:
    _uptime(h100, 38 * DAY)
    clean = _clean()
    six = "".join(LOST.format(s=1 + i) for i in range(6)) + GAINED.format(s=8)
    make_tree(h100, commands={"dmesg": clean + six})
    f = by_subject(run_check(h100, "interconnect.ib.flaps"))["nic:ib6"]
    assert f.status is Status.FAIL and f.summary == "6 link losses in the last 24 h (limit 5)"
    assert f.evidence["reference"] == "the last time stamp of the log"
    assert f.evidence["lines"][-1].endswith("ib6: lost carrier")
    two = LOST.format(s=1) + GAINED.format(s=2) + LOST.format(s=3)
    make_tree(h100, commands={"dmesg": clean + two})
    f = by_subject(run_check(h100, "interconnect.ib.flaps"))["nic:ib6"]
    assert f.status is Status.WARN and f.evidence["losses"] == 2


def test_flaps_older_than_the_window(h100: Path) -> None:
    _uptime(h100, 38 * DAY)
    old = "".join(LOST.format(s=i) for i in range(6)).replace("Aug 17", "Aug 15")
    clean = _clean()
    make_tree(h100, commands={"dmesg": old + clean})
    f = by_subject(run_check(h100, "interconnect.ib.flaps"))["host"]
    assert f.status is Status.PASS and f.evidence["older"] == {"ib6": 6}


def test_flaps_mlx5_link_down_at_boot_is_not_a_loss(h100: Path) -> None:
    """A real boot: mlx5 prints 'Link down' as it opens each port; later losses count."""
    _uptime(h100, 38 * DAY)
    boot = recording("kernel-logs/gpud__dmesg.decode.iso.log.1").read_text()
    make_tree(h100, commands={"dmesg": boot})
    assert by_subject(run_check(h100, "interconnect.ib.flaps"))["host"].status is Status.PASS
    later = (
        "kern  :info  : 2025-01-20T10:00:00,000000+00:00 mlx5_core 0000:1b:00.0 bootnet: "
        "Link down\n"
    )
    make_tree(h100, commands={"dmesg": boot + later})
    f = by_subject(run_check(h100, "interconnect.ib.flaps"))["nic:bootnet"]
    assert f.status is Status.WARN and f.evidence["losses"] == 1


def test_flaps_unreadable_kernel_log(h100: Path) -> None:
    make_tree(
        h100,
        commands={"dmesg": ("", 1, "dmesg: read kernel buffer failed: Operation not permitted")},
    )
    f = by_subject(run_check(h100, "interconnect.ib.flaps"))["host"]
    assert f.status is Status.UNKNOWN and "insufficient permissions" in f.summary


def test_flaps_count_only_the_hcas_interfaces(h100: Path) -> None:
    """A container's veth or the management NIC losing carrier is not an IB/RoCE flap (the
    kernel-log facts report any interface's carrier)."""
    _uptime(h100, 38 * DAY)
    other = "".join(
        LOST.format(s=1 + i).replace("ib6", name) for name in ("veth1a2b", "eth0") for i in range(6)
    )
    make_tree(h100, commands={"dmesg": _clean() + other})
    by = by_subject(run_check(h100, "interconnect.ib.flaps"))
    assert "nic:veth1a2b" not in by and "nic:eth0" not in by
    assert by["host"].status is Status.PASS


def test_errors_a_site_limit_on_a_counter_not_read_is_unknown_never_dropped(h100: Path) -> None:
    _uptime(h100, 38 * DAY)
    findings = run_check(h100, "interconnect.ib.errors", per_day={"port_xmit_wait": 10})
    assert [f.status for f in findings] == [Status.UNKNOWN]
    assert "port_xmit_wait: not read" in findings[0].summary
    assert findings[0].evidence["unjudged"] == ["port_xmit_wait"]

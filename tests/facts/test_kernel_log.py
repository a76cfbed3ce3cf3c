"""kernel_log facts: every line format of the real recordings, the events they hold, malformed
input, and collect() through host trees (commands/dmesg) and this live host."""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Mapping, Sequence
from datetime import datetime, timedelta, timezone
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from dolmen.compat import UTC
from dolmen.facts.kernel_log import ATTEMPTS, KernelLogFacts, collect, scan_kernel_log
from dolmen.facts.kernel_log.events import extract_event
from dolmen.facts.kernel_log.lines import iter_records, parse_record
from dolmen.facts.kernel_log.model import KernelEvent
from dolmen.host import CommandResult, RunStatus
from dolmen.host.base import DEFAULT_TIMEOUT
from dolmen.host.live import LiveHost
from dolmen.host.tree import TreeHost
from dolmen.values.busid import BusId
from tests.conftest import make_tree, recording, recordings_in

NOW = datetime(2025, 9, 1, 12, 0, 0)


def text_of(rel: str) -> str:
    return recording(rel).read_text(encoding="utf-8", errors="replace")


def line_with(rel: str, needle: str) -> tuple[int, str]:
    """The first line of a recording containing ``needle`` (1-based number, text)."""
    for i, line in enumerate(text_of(rel).splitlines(), 1):
        if needle in line:
            return i, line
    raise AssertionError(f"{needle!r} not in {rel}")


def scan(rel: str) -> KernelLogFacts:
    return scan_kernel_log(text_of(rel), source=rel, now=NOW)


def xid_counts(facts: KernelLogFacts) -> Counter[int]:
    return Counter(e.xid for e in facts.events or () if e.kind == "xid" and e.xid is not None)


def kinds(facts: KernelLogFacts) -> Counter[str]:
    return Counter(e.kind for e in facts.events or ())


def fenced(rel: str) -> str:
    """Only the code blocks of a markdown recording (its prose quotes words like 'fallen')."""
    return "\n".join(re.findall(r"```\n(.*?)```", text_of(rel), flags=re.S))


UTC0 = UTC
PLUS8 = timezone(timedelta(hours=8))

# (recording, a word of the line, format, time, boot seconds, facility, level, program, message)
LINES = [
    ("kernel-logs/gpud__dmesg.decode.iso.log.0", "Xid", "dmesg-iso-decode",
     datetime(2025, 1, 21, 2, 21, 33, 498559, UTC0), None, "kern", "warn", None,
     "NVRM: Xid (PCI:0000:38:00): 13, pid='<unknown>', name=<unknown>, Graphics SM Warp"),
    ("kernel-logs/gpud__dmesg.decode.iso.log.1", "daemon:info", "dmesg-iso-decode",
     datetime(2025, 1, 17, 15, 37, 17, 129413, UTC0), None, "daemon", "info", None, "systemd"),
    ("kernel-logs/gpud__dmesg.decode.iso.log.1", "user  :notice", "dmesg-iso-decode",
     datetime(2025, 1, 17, 15, 37, 49, 375854, UTC0), None, "user", "notice", None,
     "Started bpfilter"),
    ("kernel-logs/gpud__dmesg.decode.iso.log.1", "kern  :err", "dmesg-iso-decode",
     datetime(2025, 1, 17, 15, 37, 19, 4806, UTC0), None, "kern", "err", None,
     "ACPI Error: No handler for Region [SYSI]"),
    ("kernel-logs/gpud__dmesg-time-format-iso.log", "): 48,", "dmesg-iso",
     datetime(2024, 11, 15, 12, 2, 3, 470068, UTC0), None, None, None, None,
     "NVRM: Xid (PCI:0000:19:00): 48, pid='<unknown>'"),
    ("kernel-logs/gpud__dmesg-time-format-short-iso.log", "vetha17b2cc) entered disabled",
     "journal-iso", datetime(2025, 1, 2, 15, 20, 12, 0, PLUS8), None, None, None, "kernel",
     "docker0: port 1(vetha17b2cc) entered disabled state"),
    ("kernel-logs/gpud__journalctl-time-format-short-iso-2.log", "peermem", "journal-iso",
     datetime(2025, 1, 17, 17, 39, 30, 0, UTC0), None, None, None, "kernel",
     "nvidia-peermem nv_get_p2p_free_callback:127 ERROR"),
    ("kernel-logs/gpud__kmsg.1.log", "nvidia-nvswitch2: open", "kmsg", None, 206.764307,
     "kern", "info", None, "nvidia-nvswitch2: open (major=510)"),
    ("kernel-logs/gpud__kmsg.2.peermem.log", "peermem", "kmsg", None, 227.996636, "kern", "info",
     None, "nvidia-peermem nv_get_p2p_free_callback:127 ERROR detected invalid context"),
    ("kernel-logs/gpud__pstore_dmesg-erst.txt", "Trigger a crash", "dmesg", None, 201.650687,
     "kern", "info", None, "sysrq: SysRq : Trigger a crash"),
    ("kernel-logs/gpud__pstore_dmesg-erst.txt", "BUG: unable", "dmesg", None, 201.654822,
     "kern", "alert", None, "BUG: unable to handle kernel NULL pointer dereference"),
    ("kernel-logs/gpud__pstore_7530486857247_dmesg.txt", "dmesg-erst-", "raw", None, None, None,
     None, None, "dmesg-erst-7530486857247752194:"),
    ("kernel-logs/azurehpc__0flap_syslog", "logrotate", "syslog",
     datetime(2025, 8, 17, 0, 0, 24), None, None, None, "systemd",
     "logrotate.service: Deactivated successfully."),
    ("kernel-logs/issues__xid-excerpts.md", "[Fri Aug 30 11:11:22 2024]", "dmesg-ctime",
     datetime(2024, 8, 30, 11, 11, 22), None, None, None, None, "nvidia-peermem"),
    ("kernel-logs/issues__xid-excerpts.md", "[Mon Aug  5 03:54:13 2024] NVRM: Xid", "dmesg-ctime",
     datetime(2024, 8, 5, 3, 54, 13), None, None, None, None, "NVRM: Xid (PCI:0000:00:07): 31"),
    ("kernel-logs/issues__xid-excerpts.md", "[   38.175561]", "dmesg", None, 38.175561, None,
     None, None, "nvidia-nvswitch3: SXid (PCI:0000:04:00.0): 22013"),
    ("kernel-logs/issues__xid-excerpts.md", "kernel: NVRM: Xid (PCI:0000:dc:00): 45", "raw",
     None, None, None, None, "kernel", "NVRM: Xid (PCI:0000:dc:00): 45, pid=1818990"),
    ("fabric-manager/gpud__fabricmanager.log", "non-fatal error 12028", "fabricmanager",
     datetime(2025, 2, 27, 15, 10, 2), None, None, "error", "nv-fabricmanager",
     "detected NVSwitch non-fatal error 12028"),
]  # fmt: skip


@pytest.mark.parametrize("row", LINES, ids=lambda r: f"{Path(r[0]).name}:{r[1][:20]}")
def test_real_line_formats(row: Sequence[object]) -> None:
    rel, needle, fmt, time, boot, facility, level, program, message = row
    line_no, line = line_with(str(rel), str(needle))
    rec = parse_record([line], line_no, now=NOW)
    assert rec.fmt == fmt
    assert rec.time == time
    assert rec.boot_seconds == boot
    assert (rec.facility, rec.level, rec.program) == (facility, level, program)
    assert rec.message.startswith(str(message))
    assert rec.raw == line and rec.line_no == line_no
    expected_clock = (
        "boot"
        if time is None and boot is not None
        else "none"
        if time is None
        else "absolute"
        if isinstance(time, datetime) and time.tzinfo
        else "local"
    )
    assert rec.clock == expected_clock


def test_syslog_year_comes_from_now_or_stays_unknown() -> None:
    _, line = line_with("kernel-logs/azurehpc__0flap_syslog", "logrotate")
    assert parse_record([line]).time is None
    assert parse_record([line]).clock == "yearless"
    # A December line read in January belongs to the previous year.
    dec = line.replace("Aug 17", "Dec 31")
    assert parse_record([dec], now=datetime(2026, 1, 2)).time == datetime(2025, 12, 31, 0, 0, 24)


def test_syslog_kernel_line_keeps_the_boot_stamp() -> None:
    # Quoted from a pastebin kernel log (docs corpus): rsyslog keeps dmesg's "[secs]".
    line = (
        "May  6 00:38:27 alex kernel: [ 4909.922970] NVRM: Xid (0000:01:00): 13, "
        "0005 00000000 0000502d 00000104 00000000 00000100"
    )
    rec = parse_record([line], now=NOW)
    assert rec.fmt == "syslog" and rec.program == "kernel"
    assert rec.time == datetime(2025, 5, 6, 0, 38, 27) and rec.boot_seconds == 4909.92297
    assert rec.message.startswith("NVRM: Xid (0000:01:00): 13,")
    ev = extract_event(rec)
    assert ev is not None and (ev.kind, ev.xid, ev.bus_id) == ("xid", 13, "0000:01:00.0")


@pytest.mark.parametrize(
    "path", recordings_in("kernel-logs") + recordings_in("fabric-manager"), ids=lambda p: p.name
)
def test_every_recording_parses(path: Path) -> None:
    text = path.read_text(encoding="utf-8", errors="replace")
    lines = text.splitlines()
    records = iter_records(text, now=NOW)
    blank = sum(1 for ln in lines if not ln.strip())
    continued = sum(r.raw.count("\n") for r in records)
    assert len(records) + blank + continued == len(lines)
    facts = scan_kernel_log(text, now=NOW)
    assert facts.lines == len(lines) and facts.events is not None and facts.format
    for ev in facts.events:
        assert 1 <= ev.line_no <= len(lines)
        assert ev.raw.splitlines()[0] == lines[ev.line_no - 1]
        assert ev.bus_id is None or getattr(BusId.parse(ev.bus_id), "sysfs", None) == ev.bus_id
    # The prefilter must not lose events a full parse finds.
    full = [e for e in (extract_event(r) for r in records) if e is not None]
    assert [(e.line_no, e.kind, e.xid) for e in full] == [
        (e.line_no, e.kind, e.xid) for e in facts.events
    ]


def test_xid_counts_of_the_decode_iso_log() -> None:
    facts = scan("kernel-logs/gpud__dmesg.decode.iso.log.0")
    # Counted with: grep -c 'Xid (PCI:0000:38:00): 13,' (629) and ...: 43, (7).
    assert xid_counts(facts) == {13: 629, 43: 7}
    assert {e.bus_id for e in facts.events or ()} == {"0000:38:00.0"}
    assert facts.format == "dmesg-iso-decode" and facts.lines == 636
    assert facts.first_time == datetime(2025, 1, 21, 2, 21, 33, 498559, UTC)
    assert facts.last_time == datetime(2025, 1, 21, 4, 41, 44, 287197, UTC)
    last = (facts.events or ())[-1]
    assert (last.xid, last.pid, last.process, last.detail) == (
        43,
        2924364,
        "pt_main_thread",
        "Ch 00000008",
    )


def test_memory_component_log() -> None:
    # grep -c ': 13,' -> 16, ': 43,' -> 1
    assert xid_counts(scan("kernel-logs/gpud__memory_dmesg.decode.iso.log")) == {13: 16, 43: 1}


def test_dbe_then_row_remap_then_contained_errors() -> None:
    facts = scan("kernel-logs/gpud__dmesg-time-format-iso.log")
    xids = [e for e in facts.events or () if e.kind == "xid"]
    assert [e.xid for e in xids] == [48, 63] + [94] * 9
    assert {e.bus_id for e in xids} == {"0000:19:00.0"}
    assert xids[0].pid is None and xids[0].process is None
    assert xids[1].detail is not None and "Row Remapper" in xids[1].detail
    assert (xids[3].pid, xids[3].process, xids[3].detail) == (1248209, "python3.10", "Ch 00000008")
    assert kinds(facts)["peermem"] == 30  # grep -c peermem


def test_kmsg_records_are_boot_relative() -> None:
    facts = scan("kernel-logs/gpud__kmsg.1.log")
    assert facts.format == "kmsg" and facts.first_time is None and facts.last_time is None
    assert facts.first_boot_seconds == 206.764307 and facts.last_boot_seconds == 57631.398464
    # This recording holds NVSwitch opens and netdev lines, no Xid: the opens show the
    # switches exist (its "link becomes ready" lines are no flap).
    assert {(e.kind, e.device) for e in facts.events or ()} == {
        ("nvswitch", f"nvidia-nvswitch{i}") for i in range(4)
    }


@pytest.mark.parametrize(
    ("rel", "count"),
    [
        ("kernel-logs/gpud__dmesg.peermem.log.0", 7),
        ("kernel-logs/gpud__kmsg.2.peermem.log", 7),
        ("kernel-logs/gpud__journalctl-time-format-short-iso-2.log", 14),
    ],
)
def test_peermem_errors(rel: str, count: int) -> None:
    facts = scan(rel)
    assert kinds(facts) == {"peermem": count}  # the final "test" line is not one


def test_mlx5_link_downs_in_the_boot_log() -> None:
    events = scan("kernel-logs/gpud__dmesg.decode.iso.log.1").events or ()
    flaps = [e for e in events if e.kind not in ("driver_loaded", "nvswitch")]
    assert [(e.interface, e.detail, e.bus_id) for e in flaps] == [
        ("enp157s0f1np1", "down", "0000:9d:00.1"),
        ("enp157s0f0np0", "down", "0000:9d:00.0"),
        ("enp27s0f1np1", "down", "0000:1b:00.1"),
        ("bootnet", "up", "0000:1b:00.0"),
    ]
    assert all(e.kind == "ib_flap" for e in flaps)


def test_the_boot_log_shows_the_module_loading() -> None:
    """NVRM's "loading NVIDIA UNIX x86_64 Kernel Module  550.90.07": the version, at its time."""
    events = scan("kernel-logs/gpud__dmesg.decode.iso.log.1").events or ()
    [load] = [e for e in events if e.kind == "driver_loaded"]
    assert (load.detail, load.device) == ("550.90.07", "proprietary")
    assert load.time is not None and load.time.isoformat().startswith("2025-01-17T15:36:55")


def test_no_flap_syslog_has_no_events() -> None:
    assert scan("kernel-logs/azurehpc__0flap_syslog").events == ()


# Azure/azurehpc-health-checks test/data/1dev_6flap_syslog (MIT), the lines around the flaps;
# the file itself is not among ../shared/recordings.
FLAP_SYSLOG = """\
Aug 17 06:10:03 jplc7eb7-vm-0 systemd[1]: Finished system activity accounting tool.
Aug 17 06:18:01 jplc7eb7-vm-0 systemd-networkd[5398]: ib6: lost carrier
Aug 17 06:18:06 jplc7eb7-vm-0 systemd-networkd[5398]: ib6: lost carrier
Aug 17 06:18:06 jplc7eb7-vm-0 systemd-networkd[5398]: ib6: lost carrier
Aug 17 06:18:06 jplc7eb7-vm-0 systemd-networkd[5398]: ib6: lost carrier
Aug 17 06:18:06 jplc7eb7-vm-0 systemd-networkd[5398]: ib6: lost carrier
Aug 17 06:18:06 jplc7eb7-vm-0 systemd-networkd[5398]: ib6: lost carrier
Aug 17 06:18:06 jplc7eb7-vm-0 systemd-networkd[5398]: ib6: Gained carrier
Aug 17 06:18:06 jplc7eb7-vm-0 systemd-networkd[5398]: ib6: Gained carrier
Aug 17 06:18:06 jplc7eb7-vm-0 systemd-networkd[5398]: ib6: Gained carrier
Aug 17 06:18:06 jplc7eb7-vm-0 systemd-networkd[5398]: ib6: Gained carrier
Aug 17 06:18:06 jplc7eb7-vm-0 systemd-networkd[5398]: ib6: Gained carrier
Aug 17 06:18:06 jplc7eb7-vm-0 systemd-networkd[5398]: ib6: Gained carrier
"""


def test_six_ib_flaps_on_one_interface() -> None:
    facts = scan_kernel_log(FLAP_SYSLOG, now=NOW)
    flaps = facts.events or ()
    assert Counter((e.kind, e.interface, e.detail) for e in flaps) == {
        ("ib_flap", "ib6", "down"): 6,
        ("ib_flap", "ib6", "up"): 6,
    }
    assert flaps[0].time == datetime(2025, 8, 17, 6, 18, 1) and flaps[0].clock == "local"


def test_issue_quotes() -> None:
    facts = scan_kernel_log(fenced("kernel-logs/issues__xid-excerpts.md"), now=NOW)
    assert xid_counts(facts) == {
        45: 8, 149: 4, 145: 1, 144: 1, 94: 2, 13: 3, 109: 1, 43: 2, 31: 1, 79: 1,
    }  # fmt: skip
    by = Counter((e.kind, e.xid) for e in facts.events or ())
    assert by[("sxid", 22013)] == 9 and by[("fell_off_bus", None)] == 3
    assert by[("peermem", None)] == 1
    events = facts.events or ()
    off = [e for e in events if e.kind == "fell_off_bus"]
    # The multi-line probe message (continuation lines joined) and the old driver's wording.
    assert [e.bus_id for e in off] == ["0000:b3:00.0", "0000:01:00.0", "0000:01:00.0"]
    assert off[0].boot_seconds == 1843.308145 and off[0].raw.count("\n") == 2
    nvlink = {e.bus_id: e for e in events if e.xid in (145, 149)}
    assert nvlink["0019:01:00.0"].fatal is True and nvlink["0018:01:00.0"].fatal is False
    sx = [e for e in events if e.kind == "sxid"]
    assert {(e.device, e.bus_id) for e in sx} == {("nvidia-nvswitch3", "0000:04:00.0")}
    assert [e.fatal for e in sx[:3]] == [None, False, None]
    (ctx,) = [e for e in events if e.xid == 109]
    assert (ctx.pid, ctx.process, ctx.bus_id) == (1797828, "pt_main_thread", "0000:cb:00.0")
    assert ctx.time == datetime(2024, 8, 30, 11, 43, 14) and ctx.clock == "local"


def test_fabric_manager_reports_sxids() -> None:
    facts = scan("fabric-manager/gpud__fabric-manager.0.log")
    sx = [e for e in facts.events or () if e.kind == "sxid"]
    assert len(sx) == 18 and {e.xid for e in sx} == {12028}  # grep -c 'error 12028'
    assert all(e.fatal is False and e.device == "nv-fabricmanager" for e in sx)
    assert {e.bus_id for e in sx} == {
        "0000:83:00.0",
        "0000:84:00.0",
        "0000:85:00.0",
        "0000:86:00.0",
    }


# Lines the recordings lack, quoted from public issues and driver output (see each comment).
QUOTED: Mapping[str, tuple[str, Mapping[str, object]]] = {
    # OpenShift GPU runbook quote (dmesg | grep 119), 8x H100 node.
    "xid119": (
        "[ 3947.590120] NVRM: Xid (PCI:0000:61:00): 119, pid=123417, name=nv-hostengine, "
        "Timeout after 6s of waiting for RPC response from GPU0 GSP! Expected function 10 "
        "(FREE) (0xc0000005 0x0).",
        {"kind": "xid", "xid": 119, "bus_id": "0000:61:00.0", "pid": 123417,
         "process": "nv-hostengine", "boot_seconds": 3947.59012},
    ),
    # NVSentinel e2e test input: a process name with brackets.
    "xid119-brackets": (
        "kernel: [16450076.435595] NVRM: Xid (PCI:0002:00:00): 119, pid=1582259, "
        "name=nvc:[driver], Timeout after 6s of waiting for RPC response from GPU1 GSP!",
        {"xid": 119, "bus_id": "0002:00:00.0", "process": "nvc:[driver]"},
    ),
    # GB200 journal line (Blackwell PCI domain 0018) with the new recovery action.
    "xid154": (
        "Sep 19 10:30:06 cn02 kernel: NVRM: Xid (PCI:0018:01:00): 154, GPU recovery action "
        "changed from 0x0 (None) to 0x4 (Drain and Reset)",
        {"xid": 154, "bus_id": "0018:01:00.0", "recovery": 4},
    ),
    "xid79": (
        "May 18 19:02:39 host kernel: NVRM: Xid (PCI:0000:2b:00): 79, GPU has fallen off the bus.",
        {"kind": "xid", "xid": 79, "bus_id": "0000:2b:00.0"},
    ),
    "off-bus-new": (
        "May 18 19:02:39 host kernel: NVRM: GPU 0000:2b:00.0: GPU has fallen off the bus.",
        {"kind": "fell_off_bus", "bus_id": "0000:2b:00.0"},
    ),
    "old-xid-form": (
        "Nov 22 18:29:55 hostname kernel: [  966.503025] NVRM: Xid (0000:01:00): 31, "
        "Ch 0000000b, engmask 00000120, intr 10000000",
        {"xid": 31, "bus_id": "0000:01:00.0", "pid": None, "detail": "Ch 0000000b, engmask "
         "00000120, intr 10000000"},
    ),
    "nvswitch-fatal": (
        "nvidia-nvswitch0: SXid (PCI:0000:c2:00.0): 20034, Fatal, Link 28 LTSSM Fault Up",
        {"kind": "sxid", "xid": 20034, "fatal": True, "device": "nvidia-nvswitch0"},
    ),
    "limited-by": (
        "[    2.608284] mlx5_core 0000:41:00.1: 63.008 Gb/s available PCIe bandwidth, limited "
        "by 8.0 GT/s PCIe x8 link at 0000:40:01.1 (capable of 252.048 Gb/s with 16.0 GT/s "
        "PCIe x16 link)",
        {"kind": "pcie_limited", "bus_id": "0000:41:00.1", "device": "mlx5_core"},
    ),
    "aer-corrected": (
        "[ 1020.123456] pcieport 0000:00:03.1: AER: Corrected error received: 0000:05:00.0",
        {"kind": "aer_corrected", "bus_id": "0000:05:00.0", "fatal": None},
    ),
    "aer-nonfatal": (
        "[ 1020.123456] pcieport 0000:00:01.0: AER: Uncorrected (Non-Fatal) error received: "
        "0000:01:00.0",
        {"kind": "aer", "bus_id": "0000:01:00.0", "fatal": False},
    ),
    "aer-fatal-new-kernel": (
        "[ 1020.123456] pcieport 0000:00:01.0: AER: Uncorrectable (Fatal) error message "
        "received from 0000:01:00.0",
        {"kind": "aer", "bus_id": "0000:01:00.0", "fatal": True},
    ),
    "api-mismatch": (
        "[   12.3] NVRM: API mismatch: the client has the version 535.104.05, but\n"
        "               NVRM: this kernel module has the version 535.129.03.  Please\n"
        "               NVRM: make sure that this kernel module and all NVIDIA driver",
        {"kind": "api_mismatch",
         "detail": "client 535.104.05, kernel module 535.129.03"},
    ),
    "kmsg-with-dictionary": (
        "3,1200,5000000,-;NVRM: Xid (PCI:0000:9b:00): 94, pid=1234, name=python3, Contained ECC"
        "\n SUBSYSTEM=pci\n DEVICE=+pci:0000:9b:00.0",
        {"xid": 94, "pid": 1234, "process": "python3", "boot_seconds": 5.0,
         "detail": "Contained ECC"},
    ),
}  # fmt: skip


@pytest.mark.parametrize("name", list(QUOTED))
def test_quoted_event_lines(name: str) -> None:
    text, expected = QUOTED[name]
    facts = scan_kernel_log(text, now=NOW)
    assert facts.events is not None and len(facts.events) == 1, facts.events
    ev = facts.events[0]
    for field_name, value in expected.items():
        assert getattr(ev, field_name) == value, field_name
    assert "kind" in expected or ev.kind in ("xid", "sxid")


def test_empty_log() -> None:
    facts = scan_kernel_log("")
    assert facts.events == () and facts.lines == 0 and facts.format is None
    assert facts.first_time is None and facts.first_boot_seconds is None


def test_binary_junk_never_raises() -> None:
    junk = bytes(range(256)) * 64 + b"\n\x00\xff NVRM: Xid (PCI:\n" + bytes(range(255, -1, -1))
    facts = scan_kernel_log(junk.decode("utf-8", errors="replace"))
    assert facts.events == ()
    assert facts.format == "raw"


def test_truncated_lines() -> None:
    text = text_of("kernel-logs/gpud__dmesg.decode.iso.log.0")
    full = scan_kernel_log(text)
    # Cut the log anywhere: never an exception, never more events than the whole log.
    for cut in range(0, len(text), 997):
        part = scan_kernel_log(text[:cut])
        assert len(part.events or ()) <= len(full.events or ())
    cut_mid_xid = "kern  :warn  : 2025-01-21T02:21:33,498559+00:00 NVRM: Xid (PCI"
    assert scan_kernel_log(cut_mid_xid).events == ()
    assert scan_kernel_log("[  12.34").format == "raw"


@pytest.mark.parametrize(
    "line",
    [
        "[Tue Feb 30 02:21:33 2025] impossible date",
        "2025-13-45T99:99:99,000000+00:00 impossible iso",
        "999,1,2,-;priority out of range",
        "kern  :bogus : 2025-01-21T02:21:33,498559+00:00 unknown level",
        "Foo 17 00:00:24 host prog: not a month",
        "<>[ 1.0] empty priority",
    ],
)
def test_malformed_stamps_become_raw_or_partial(line: str) -> None:
    rec = parse_record([line], now=NOW)
    assert rec.raw == line and rec.message
    if rec.fmt == "raw":
        assert rec.time is None and rec.boot_seconds is None


@settings(max_examples=300, deadline=None)
@given(st.text(alphabet=st.characters(codec="utf-8"), max_size=400))
def test_any_text_scans(text: str) -> None:
    facts = scan_kernel_log(text, now=NOW)
    assert facts.events is not None
    for ev in facts.events:
        assert isinstance(ev, KernelEvent) and ev.line_no >= 1


# --- collect: host trees, this live host, the fallback chain ----------------------------------


def test_collect_reads_commands_dmesg_of_a_tree(tmp_path: Path) -> None:
    text = text_of("kernel-logs/gpud__dmesg.decode.iso.log.0")
    root = make_tree(tmp_path, commands={"dmesg": text})
    assert (root / "commands" / "dmesg").is_file()
    facts = collect(TreeHost(root), now=NOW)
    assert xid_counts(facts) == {13: 629, 43: 7}
    assert facts.source == "commands/dmesg" and "events" not in facts.unread


def test_collect_refused_is_unread_not_empty(tmp_path: Path) -> None:
    err = "dmesg: read kernel buffer failed: Operation not permitted\n"
    root = make_tree(tmp_path, commands={"dmesg": ("", 1, err)})
    facts = collect(TreeHost(root), now=NOW)
    assert facts.events is None
    assert facts.unread["events"].startswith("insufficient permissions")


def test_collect_absent_log_is_missing(tmp_path: Path) -> None:
    """A hand-made tree with a commands/ folder vouches that it holds every command."""
    facts = collect(TreeHost(make_tree(tmp_path, commands={"uname -r": "6.8.0\n"})), now=NOW)
    assert facts.events is None and facts.unread["events"].startswith("missing")


def test_collect_unrecorded_log_names_the_file(tmp_path: Path) -> None:
    """A tree without commands/ did not record the log: it says so, naming the file, not the
    last command a live host would have tried (issue 8)."""
    facts = collect(TreeHost(make_tree(tmp_path)), now=NOW)
    assert facts.events is None
    assert facts.unread["events"] == "not in this bundle: the kernel log (commands/dmesg)"


class ScriptedHost(TreeHost):
    """A host whose commands answer per argv, to walk the fallback chain a tree cannot show."""

    kind = "live"

    def __init__(self, root: Path, answers: Mapping[tuple[str, ...], CommandResult]) -> None:
        super().__init__(root)
        self.answers = answers
        self.calls: list[tuple[tuple[str, ...], str | None]] = []

    def run(
        self, argv: Sequence[str], *, timeout: float = DEFAULT_TIMEOUT, key: str | None = None
    ) -> CommandResult:
        self.calls.append((tuple(argv), key))
        return self.answers.get(
            tuple(argv), CommandResult(tuple(argv), RunStatus.MISSING, reason="not found")
        )


def test_fallback_to_plain_dmesg_then_journal(tmp_path: Path) -> None:
    old = CommandResult(ATTEMPTS[0], RunStatus.FAILED, "", "dmesg: unrecognized option", 1)
    denied = CommandResult(ATTEMPTS[1], RunStatus.FAILED, "", "dmesg: Operation not permitted", 1)
    journal = CommandResult(
        ATTEMPTS[2],
        RunStatus.OK,
        text_of("kernel-logs/gpud__journalctl-time-format-short-iso-2.log"),
    )
    host = ScriptedHost(tmp_path, {ATTEMPTS[0]: old, ATTEMPTS[1]: denied, ATTEMPTS[2]: journal})
    facts = collect(host, now=NOW)
    assert [c for c in host.calls] == [(a, "dmesg") for a in ATTEMPTS]
    assert facts.source == " ".join(ATTEMPTS[2]) and kinds(facts) == {"peermem": 14}


def test_journal_hiding_the_kernel_from_a_user_is_a_refusal(tmp_path: Path) -> None:
    denied = CommandResult(ATTEMPTS[0], RunStatus.FAILED, "", "dmesg: Operation not permitted", 1)
    hidden = CommandResult(
        ATTEMPTS[2],
        RunStatus.OK,
        "-- No entries --\n",
        "Hint: You are currently not seeing messages from other users and the system.\n",
    )
    host = ScriptedHost(tmp_path, {ATTEMPTS[0]: denied, ATTEMPTS[1]: denied, ATTEMPTS[2]: hidden})
    facts = collect(host, now=NOW)
    assert facts.events is None and facts.unread["events"].startswith("insufficient permissions")


def test_collect_on_this_live_host() -> None:
    facts = collect(LiveHost())
    if facts.events is None:  # not root, or dmesg_restrict: a reason, never an empty log
        assert facts.unread["events"].split(":")[0] in (
            "insufficient permissions",
            "missing",
            "command failed",
        )
        return
    assert facts.lines > 0 and facts.format is not None
    assert facts.source is not None and facts.source.startswith(("dmesg", "journalctl"))


# Formats no recording holds, as util-linux dmesg, journalctl and rsyslog print them.
VARIANTS = [
    ("kern  :warn  : [Tue Jan 21 02:21:33 2025] NVRM: Xid (PCI:0000:38:00): 13, x",
     "dmesg-ctime-decode", datetime(2025, 1, 21, 2, 21, 33), None, "kern", "warn"),
    ("kern  :info  : [    2.608284] mlx5_core 0000:41:00.1: x", "dmesg-decode", None, 2.608284,
     "kern", "info"),
    ("Jan 17 17:10:43.123456 exp03 kernel: eth0: link becomes ready", "syslog",
     datetime(2025, 1, 17, 17, 10, 43, 123456), None, None, None),
    ("2025-01-17T17:10:43.123456+00:00 exp03 kernel: eth0: link becomes ready", "journal-iso",
     datetime(2025, 1, 17, 17, 10, 43, 123456, UTC), None, None, None),
    ("2025-01-17T17:10:43Z exp03 kernel: eth0: link becomes ready", "journal-iso",
     datetime(2025, 1, 17, 17, 10, 43, tzinfo=UTC), None, None, None),
    ("2025-01-17T17:10:43-0500 exp03 kernel: eth0: link becomes ready", "journal-iso",
     datetime(2025, 1, 17, 17, 10, 43, tzinfo=timezone(timedelta(hours=-5))), None, None, None),
    ("<3>[  201.650687] NVRM: x", "dmesg", None, 201.650687, "kern", "err"),
    ("14,100,5,-;user message", "kmsg", None, 5e-06, "user", "info"),
]  # fmt: skip


@pytest.mark.parametrize("row", VARIANTS, ids=lambda r: r[1])
def test_format_variants(row: Sequence[object]) -> None:
    line, fmt, time, boot, facility, level = row
    rec = parse_record([str(line)], now=NOW)
    assert (rec.fmt, rec.time, rec.boot_seconds, rec.facility, rec.level) == (
        fmt, time, boot, facility, level,
    )  # fmt: skip
    assert rec.message.endswith(("x", "link becomes ready", "user message"))


def test_driver_start_up_lines_name_the_gpus() -> None:
    """nvidia-drm's "Initialized nvidia-drm ... for 0000:19:00.0" names each GPU the driver
    took: no event, but the GPU exists (a boot log alone shows the 8 GPUs of an HGX H100)."""
    facts = scan("kernel-logs/gpud__dmesg.decode.iso.log.1")
    assert facts.driver_gpus == tuple(
        f"0000:{b}:00.0" for b in ("19", "3b", "4c", "5d", "9b", "bb", "cb", "db")
    )
    assert not [e for e in facts.events or () if e.kind in ("xid", "fell_off_bus")]
    quoted = scan_kernel_log(fenced("kernel-logs/issues__xid-excerpts.md"), now=NOW)
    assert "0000:00:05.0" in quoted.driver_gpus  # "NVRM: GPU at PCI:0000:00:05: GPU-efbd..."

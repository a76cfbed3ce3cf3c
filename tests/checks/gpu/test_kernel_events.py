"""gpu.sxid (NVSwitch SXids, fabric manager lines) and gpu.fell_off_bus (with or without Xid 79)."""

from __future__ import annotations

from pathlib import Path

from tests.checks.gpu.trees import by_subject, run, tree
from tests.conftest import recording

# NVIDIA/nvtrust#124 (issues__xid-excerpts.md): SXid 22013 at driver load on an H100 HGX.
SXID_22013 = """\
[   38.175561] nvidia-nvswitch3: SXid (PCI:0000:04:00.0): 22013, Data {0x0000002b, 0x0000002b, \
0x00000000, 0x0000002b, 0x80005302, 0x00000000, 0x00000000, 0x00000000, 0x00000000}
[   38.178720] nvidia-nvswitch3: SXid (PCI:0000:04:00.0): 22013, Non-fatal, Link 44 Minion Link \
DLREQ interrupt
[   38.180708] nvidia-nvswitch3: SXid (PCI:0000:04:00.0): 22013, Severity 0 Engine instance 44 \
Sub-engine instance 00
"""
# NVIDIA/NVSentinel#155: the probe-time message, no Xid, three lines.
OFF_BUS = """\
[ 1843.308145] NVRM: The NVIDIA GPU 0000:b3:00.0
               NVRM: (PCI ID: 10de:26b5) installed in this system has
               NVRM: fallen off the bus and is not responding to commands.
[ 1843.439662] NVRM: The NVIDIA probe routine failed for 1 device(s).
"""


def fm_log() -> str:
    return recording("fabric-manager/gpud__fabricmanager.log").read_text()


def test_sxid_unreadable_log_is_unknown(tmp_path: Path) -> None:
    [f] = run(tree(tmp_path, pci={}), "gpu.sxid")
    assert f.status.value == "unknown"


def test_no_sxid_passes(tmp_path: Path) -> None:
    clean = recording("kernel-logs/gpud__os_dmesg.decode.iso.log").read_text()
    [f] = run(tree(tmp_path, pci={}, dmesg=clean), "gpu.sxid")
    assert (f.status.value, f.subject) == ("pass", "host")


def test_sxid_22013_is_informational(tmp_path: Path) -> None:
    [f] = run(tree(tmp_path, pci={}, dmesg=SXID_22013, uptime_s=600), "gpu.sxid")
    assert (f.status.value, f.subject) == ("pass", "pci:0000:04:00.0")
    assert f.evidence["sxids"][0]["count"] == 3


def test_fabric_manager_non_fatal_sxid_warns(tmp_path: Path) -> None:
    lines = [ln for ln in fm_log().splitlines(True) if "NVSwitch non-fatal error" in ln]
    assert lines, "the recording holds fabric manager SXid lines"
    found = by_subject(run(tree(tmp_path, pci={}, dmesg="".join(lines)), "gpu.sxid"))
    assert {f.status.value for f in found.values()} == {"warn"}
    assert all(f.evidence["sxids"][0]["sxid"] == 12028 for f in found.values())


def test_fatal_sxid_fails(tmp_path: Path) -> None:
    line = next(ln for ln in fm_log().splitlines(True) if "NVSwitch non-fatal error" in ln)
    fatal = line.replace("non-fatal error", "fatal error")
    [f] = run(tree(tmp_path, pci={}, dmesg=fatal), "gpu.sxid")
    assert f.status.value == "fail" and f.evidence["sxids"][0]["severity"] == "critical"
    assert "nvidia-fabricmanager" in (f.remedy or "")


def test_gpu_off_the_bus_fails_even_without_an_xid(tmp_path: Path) -> None:
    log = OFF_BUS.replace("0000:b3:00.0", "0000:ca:00.0")
    found = by_subject(run(tree(tmp_path, pci={}, dmesg=log, uptime_s=2000), "gpu.fell_off_bus"))
    f = found["gpu:00000000:CA:00.0"]
    assert f.status.value == "fail" and "lists it now" in f.summary
    assert f.evidence["listed_now"] is True and "service" in (f.remedy or "")


def test_unlisted_gpu_off_the_bus_fails(tmp_path: Path) -> None:
    found = by_subject(
        run(tree(tmp_path, pci={}, dmesg=OFF_BUS, uptime_s=400000), "gpu.fell_off_bus")
    )
    f = found["gpu:00000000:B3:00.0"]
    assert f.status.value == "fail" and f.evidence["listed_now"] is False


def test_old_fall_that_answers_now_warns(tmp_path: Path) -> None:
    log = OFF_BUS.replace("0000:b3:00.0", "0000:ca:00.0")
    found = by_subject(run(tree(tmp_path, pci={}, dmesg=log, uptime_s=400000), "gpu.fell_off_bus"))
    assert found["gpu:00000000:CA:00.0"].status.value == "warn"


def test_no_fall_passes(tmp_path: Path) -> None:
    [f] = run(tree(tmp_path, pci={}, dmesg=SXID_22013), "gpu.fell_off_bus")
    assert (f.status.value, f.subject) == ("pass", "host")

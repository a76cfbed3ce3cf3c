"""gpu.xid: real kernel-log lines (gpud, GitHub issue quotes) re-pointed at the bus ids of the
real 8x H100 capture, with the window, the catalogue and the traps (63, 92, 109, 154, 79,
application faults)."""

from __future__ import annotations

from pathlib import Path

from tests.checks.gpu.trees import by_subject, edit_gpu, run, tree, xml
from tests.conftest import recording

GPU0, GPU4, GPU5 = "gpu:00000000:53:00.0", "gpu:00000000:97:00.0", "gpu:00000000:A8:00.0"
# gpud's dmesg --time-format iso: Xid 48, 63 (row marked for remapping), 94 on 0000:19:00.
DBE_LOG = "kernel-logs/gpud__dmesg-time-format-iso.log"
# gpud's dmesg --decode --time-format iso: Xid 13 and 43 of a faulting job on 0000:38:00.
APP_LOG = "kernel-logs/gpud__memory_dmesg.decode.iso.log"
# NVIDIA/NVSentinel#155 (quoted in issues__xid-excerpts.md), and gpud PR #46 (dmesg -T).
XID79 = "NVRM: Xid (PCI:0000:44:00): 79, GPU has fallen off the bus\n"
XID109 = (
    "[Fri Aug 30 11:43:14 2024] NVRM: Xid (PCI:0000:cb:00): 109, pid=1797828, "
    "name=pt_main_thread, Ch 00000008, errorString CTX SWITCH TIMEOUT, Info 0x58005\n"
)
# A GB200 journal line (tests/facts/test_kernel_log.py "xid154").
XID154 = (
    "Sep 19 10:30:06 cn02 kernel: NVRM: Xid (PCI:0018:01:00): 154, GPU recovery action "
    "changed from 0x0 (None) to 0x4 (Drain and Reset)\n"
)
# The first line of gpud's dmesg-with-xid-119 capture (tests/facts/test_kernel_log.py).
XID119 = (
    "[ 3947.590120] NVRM: Xid (PCI:0000:61:00): 119, pid=123417, name=nv-hostengine, "
    "Timeout after 6s of waiting for RPC response from GPU0 GSP! Expected function 10 "
    "(FREE) (0xc0000005 0x0).\n"
)


def dbe_log(bus: str = "53") -> str:
    return recording(DBE_LOG).read_text().replace("PCI:0000:19:00", f"PCI:0000:{bus}:00")


def app_log() -> str:
    return recording(APP_LOG).read_text().replace("PCI:0000:38:00", "PCI:0000:97:00")


def test_unreadable_kernel_log_is_unknown(tmp_path: Path) -> None:
    [f] = run(tree(tmp_path, pci={}), "gpu.xid")
    assert (f.status.value, f.subject) == ("unknown", "host")
    assert "not recorded" in f.summary and "root" in (f.remedy or "")


def test_log_without_xids_passes_every_gpu(tmp_path: Path) -> None:
    clean = recording("kernel-logs/gpud__os_dmesg.decode.iso.log").read_text()
    found = run(tree(tmp_path, pci={}, dmesg=clean), "gpu.xid")
    assert len(found) == 8 and {f.status.value for f in found} == {"pass"}


def test_double_bit_error_fails_the_gpu(tmp_path: Path) -> None:
    root = tree(tmp_path, pci={}, dmesg=dbe_log(), created="2024-11-15T13:00:00Z")
    found = by_subject(run(root, "gpu.xid"))
    f = found[GPU0]
    assert f.status.value == "fail" and f.summary.startswith("Xid 48 x1")
    codes = {e["xid"]: e for e in f.evidence["events"]}
    assert set(codes) == {48, 63, 94} and codes[94]["count"] == 9
    assert codes[48]["action"] == "reset_gpu" and "nvidia-smi -r -i 00000000:53:00.0" in (
        f.remedy or ""
    )
    assert f.evidence["reference"] == "the snapshot's capture time"
    # The remap of Xid 63 is done on this capture (pending No, failure No): informational.
    assert codes[63]["remap_pending"] is False
    assert found[GPU4].status.value == "pass"


def test_xid63_follows_the_remap_state(tmp_path: Path) -> None:
    only63 = "".join(ln for ln in dbe_log().splitlines(True) if "): 63," in ln)
    pending = edit_gpu(xml(), 0, r"<remapped_row_pending>No<", "<remapped_row_pending>Yes<")
    failed = edit_gpu(xml(), 0, r"<remapped_row_failure>No<", "<remapped_row_failure>Yes<")
    results = {}
    for name, doc in (("done", xml()), ("pending", pending), ("failed", failed)):
        root = tree(tmp_path / name, nvsmi=doc, pci={}, dmesg=only63)
        results[name] = by_subject(run(root, "gpu.xid"))[GPU0]
    assert results["done"].status.value == "pass" and "repair is done" in results["done"].summary
    assert results["pending"].status.value == "warn"
    assert "nvidia-smi -r -i 00000000:53:00.0" in (results["pending"].remedy or "")
    assert results["failed"].status.value == "fail"
    assert "service" in (results["failed"].remedy or "")


def test_events_older_than_the_window_pass_with_evidence(tmp_path: Path) -> None:
    root = tree(tmp_path, pci={}, dmesg=dbe_log(), created="2024-11-18T12:00:00Z")
    f = by_subject(run(root, "gpu.xid"))[GPU0]
    assert f.status.value == "pass" and "older than 24 h" in f.summary
    assert f.evidence["older_events"] == [48, 63, 94]
    wide = by_subject(run(root, "gpu.xid", "[validate]\nxid_window_hours = 100\n"))[GPU0]
    assert wide.status.value == "fail" and wide.evidence["window_hours"] == 100
    site = '[thresholds."gpu.xid"]\nwindow_hours = 80\n'
    assert by_subject(run(root, "gpu.xid", site))[GPU0].status.value == "fail"


def test_application_faults_warn_and_never_drain(tmp_path: Path) -> None:
    f = by_subject(run(tree(tmp_path, pci={}, dmesg=app_log()), "gpu.xid"))[GPU4]
    assert f.status.value == "warn"
    assert {e["xid"] for e in f.evidence["events"]} == {13, 43}
    assert "drain" not in (f.remedy or "") and "Restart the application" in (f.remedy or "")


def test_xid79_without_time_counts_as_recent(tmp_path: Path) -> None:
    line = XID79.replace("0000:44:00", "0000:86:00")
    f = by_subject(run(tree(tmp_path, pci={}, dmesg=line), "gpu.xid"))["gpu:00000000:86:00.0"]
    assert f.status.value == "fail" and "service" in (f.remedy or "")
    assert f.evidence["events"][0]["newest_age_h"] is None


def test_xid109_warns_once_and_fails_when_repeated(tmp_path: Path) -> None:
    once = XID109.replace("0000:cb:00", "0000:a8:00")
    again = once.replace("11:43:14", "11:52:40")  # the same timeout, nine minutes later
    created = "2024-08-30T12:00:00Z"
    one = by_subject(run(tree(tmp_path / "1", pci={}, dmesg=once, created=created), "gpu.xid"))
    assert one[GPU5].status.value == "warn"
    two = by_subject(
        run(tree(tmp_path / "2", pci={}, dmesg=once + again, created=created), "gpu.xid")
    )
    assert two[GPU5].status.value == "fail" and two[GPU5].evidence["events"][0]["incidents"] == 2
    assert "nvidia-smi -r" in (two[GPU5].remedy or "")


def test_xid92_warns_and_points_at_ecc(tmp_path: Path) -> None:
    # An Xid 94 line of the gpud capture re-numbered 92 (excessive single-bit errors).
    line = next(ln for ln in dbe_log().splitlines(True) if "): 94," in ln).replace(
        "): 94,", "): 92,"
    )
    f = by_subject(run(tree(tmp_path, pci={}, dmesg=line), "gpu.xid"))[GPU0]
    assert f.status.value == "warn" and "corrected-error counters" in f.summary
    assert f.evidence["events"][0]["aggregate_correctable"] == 0


def test_xid154_follows_what_the_gpu_reports_now(tmp_path: Path) -> None:
    line = XID154.replace("0018:01:00", "0000:a8:00")
    done = by_subject(run(tree(tmp_path / "a", pci={}, dmesg=line), "gpu.xid"))[GPU5]
    assert done.status.value == "pass" and "recovery action None" in done.summary
    asks = edit_gpu(
        xml(), 5, r"<gpu_recovery_action>None<", "<gpu_recovery_action>Drain and Reset<"
    )
    f = by_subject(run(tree(tmp_path / "b", nvsmi=asks, pci={}, dmesg=line), "gpu.xid"))[GPU5]
    assert f.status.value == "fail" and "Drain and Reset" in f.summary
    assert "let running jobs finish" in (f.remedy or "")


def test_xid154_on_an_unlisted_gpu_uses_the_line(tmp_path: Path) -> None:
    found = by_subject(run(tree(tmp_path, pci={}, dmesg=XID154), "gpu.xid"))
    f = found["gpu:00000018:01:00.0"]
    assert f.status.value == "fail" and f.evidence["events"][0]["recovery_action_now"] is None


def test_boot_relative_times_compare_with_uptime(tmp_path: Path) -> None:
    line = XID119.replace("0000:61:00", "0000:53:00")
    recent = by_subject(run(tree(tmp_path / "a", pci={}, dmesg=line, uptime_s=4000), "gpu.xid"))
    assert recent[GPU0].status.value == "fail"
    assert 0 < recent[GPU0].evidence["events"][0]["newest_age_h"] < 1
    old = by_subject(run(tree(tmp_path / "b", pci={}, dmesg=line, uptime_s=400000), "gpu.xid"))
    assert old[GPU0].status.value == "pass" and old[GPU0].evidence["older_events"] == [119]


def test_no_gpu_listed_and_no_xid_vouches_for_nothing(tmp_path: Path) -> None:
    clean = recording("kernel-logs/gpud__os_dmesg.decode.iso.log").read_text()
    refused = ("NVIDIA-SMI has failed because it couldn't communicate with the NVIDIA driver.\n", 9)
    root = tree(tmp_path, nvsmi="", dmesg=clean, commands={"nvidia-smi -q -x": refused})
    for check in ("gpu.xid", "gpu.fell_off_bus"):
        [f] = run(root, check)
        assert (f.status.value, f.subject) == ("skip", "host"), check
    # An Xid still counts when the driver lists nothing: it is attributed by bus id.
    off = tree(tmp_path / "b", nvsmi="", dmesg=XID79, commands={"nvidia-smi -q -x": refused})
    [f] = run(off, "gpu.xid")
    assert (f.status.value, f.subject) == ("fail", "gpu:00000000:44:00.0")

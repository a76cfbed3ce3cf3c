"""The host-level kernel-log checks on the real recordings, alone in a tree (what a user
pastes), and their agreement with `dolmen logs scan` on the same events."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from dolmen.checks.log_severity import STATUS, assess_event
from dolmen.checks.model import Status
from dolmen.cli.main import main
from dolmen.facts.kernel_log import scan_kernel_log
from dolmen.kb.xids import load_xids
from tests.checks.helpers import by_subject, run_check
from tests.conftest import make_tree, recording, recordings_in

NEW = (
    "system.kernel_panic",
    "system.oom_kills",
    "system.file_max",
    "system.segfaults",
    "gpu.peermem",
)
PEERMEM = ("gpu.peermem", "log:nvidia-peermem", Status.WARN)
# recording -> (check, subject, status) it must draw; every other NEW check passes.
FAULTS = {
    "gpud__dmesg-time-format-iso.log": PEERMEM,
    "gpud__dmesg.peermem.log.0": PEERMEM,
    "gpud__journalctl-time-format-short-iso-2.log": PEERMEM,
    "gpud__kmsg.2.peermem.log": PEERMEM,
    "issues__xid-excerpts.md": PEERMEM,
    "gpud__memory_dmesg.decode.iso.log": ("system.oom_kills", "host", Status.WARN),
    "gpud__nccl_dmesg.decode.iso.log": ("system.segfaults", "lib:libnccl.so.2", Status.WARN),
    "gpud__os_dmesg.decode.iso.log": ("system.file_max", "host", Status.WARN),
    "gpud__pstore_7530486857247_dmesg.txt": ("system.kernel_panic", "host", Status.WARN),
    "gpud__pstore_dmesg-erst.txt": ("system.kernel_panic", "host", Status.WARN),
}


def _tree(tmp_path: Path, log: str) -> Path:
    return make_tree(tmp_path / "t", commands={"dmesg": log})


@pytest.mark.parametrize(
    "path", recordings_in("kernel-logs"), ids=lambda p: p.name if isinstance(p, Path) else str(p)
)
def test_each_recording_alone(path: Path, tmp_path: Path) -> None:
    root = _tree(tmp_path, path.read_text(errors="replace"))
    fault = FAULTS.get(path.name)
    for check in NEW:
        findings = run_check(root, check)
        if fault is not None and fault[0] == check:
            f = by_subject(findings)[fault[1]]
            assert f.status is fault[2], f.summary
            assert f.evidence["lines"], "the finding shows the lines"
        else:  # gpu.peermem skips where nothing shows a GPU (no GPU, no peermem line)
            allowed = {Status.PASS} if check.startswith("system.") else {Status.PASS, Status.SKIP}
            assert {f.status for f in findings} <= allowed, [f.summary for f in findings]


def test_summaries_say_what_and_when(tmp_path: Path) -> None:
    text = recording("kernel-logs/gpud__memory_dmesg.decode.iso.log").read_text()
    (f,) = run_check(_tree(tmp_path, text), "system.oom_kills")
    # 123 (twice) and 456 are system kills, one cut summary line names no pid; 2 memcg kills
    assert f.summary.startswith("3 OOM kill(s), last 2025-01-21T08:47:30+00:00: httpd, python")
    assert f.evidence["memcg_kills"] == 2
    text = recording("kernel-logs/gpud__pstore_7530486857247_dmesg.txt").read_text()
    (f,) = run_check(_tree(tmp_path / "p", text), "system.kernel_panic")
    assert "Kernel panic - not syncing: Test panic triggered by crash_test module" in f.summary


def test_memcg_kills_and_other_programs_segfaults_are_not_the_nodes(tmp_path: Path) -> None:
    log = (
        "[ 10.0] Memory cgroup out of memory: Killed process 7 (java) total-vm:1kB\n"
        "[ 11.0] bash[12]: segfault at 0 ip 0 sp 0 error 4 in libc.so.6[7f00+1000]\n"
    )
    root = _tree(tmp_path, log)
    (oom,) = run_check(root, "system.oom_kills")
    assert oom.status is Status.PASS and "1 kill(s) inside a memory cgroup" in oom.summary
    (seg,) = run_check(root, "system.segfaults")
    assert seg.status is Status.PASS


def test_old_events_are_history(tmp_path: Path) -> None:
    log = (
        "kern  :warn  : 2025-01-01T00:00:00,000000+00:00 VFS: file-max limit 100 reached\n"
        "kern  :info  : 2025-01-21T00:00:00,000000+00:00 usb 1-1: reset\n"
    )
    (f,) = run_check(_tree(tmp_path, log), "system.file_max")
    assert f.status is Status.PASS and "1 older" in f.summary
    (f,) = run_check(_tree(tmp_path / "w", log), "system.file_max", window_hours=24 * 30)
    assert f.status is Status.WARN


def test_an_unreadable_log_is_unknown(tmp_path: Path) -> None:
    root = make_tree(tmp_path / "t")  # no commands/dmesg: not in this bundle
    for check in NEW:
        (f,) = run_check(root, check)
        assert f.status is Status.UNKNOWN and "kernel log could not be read" in f.summary


def test_pstore_check(tmp_path: Path) -> None:
    panic = recording("kernel-logs/gpud__pstore_7530486857247_dmesg.txt").read_text()
    path = "var/lib/systemd/pstore/7530486857247/dmesg.txt"
    root = make_tree(tmp_path / "t", files={path: panic})
    (f,) = run_check(root, "system.pstore", window_hours=24 * 365 * 100)
    assert f.status is Status.WARN and f.evidence["records"] == [path]
    assert f.summary.startswith("this host crashed before the current boot (2025-07-24T03:35:02")
    (f,) = run_check(make_tree(tmp_path / "u"), "system.pstore")
    assert f.status is Status.SKIP and f.summary == "not in this bundle: sys/fs/pstore"
    (tmp_path / "e" / "sys" / "fs" / "pstore").mkdir(parents=True)
    (f,) = run_check(tmp_path / "e", "system.pstore")
    assert f.status is Status.PASS


@pytest.mark.parametrize("name", sorted(FAULTS))
def test_logs_scan_and_validate_agree(
    name: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """The same event, the same severity: logs scan's rows and the check's status."""
    path = recording(f"kernel-logs/{name}")
    check, subject, status = FAULTS[name]
    assert main(["logs", "scan", "--json", str(path)]) in (0, 1)
    doc = json.loads(capsys.readouterr().out)
    catalogue = load_xids()
    events = scan_kernel_log(path.read_text()).events or ()
    kinds = ("oom_kill", "segfault", "file_max", "panic", "oops", "peermem")
    judged = [e for e in events if e.kind in kinds]
    scanned = {(e["line"], e["severity"]) for e in doc["events"]}
    for ev in judged:
        assert (ev.line_no, assess_event(catalogue, ev).severity) in scanned
    worst = max((STATUS[assess_event(catalogue, e).severity] for e in judged), key=_rank)
    root = _tree(tmp_path, path.read_text())
    f = by_subject(run_check(root, check, window_hours=24 * 365 * 100))[subject]
    assert f.status is worst is status


def _rank(s: Status) -> int:
    return {Status.PASS: 0, Status.WARN: 1, Status.FAIL: 2}[s]


def test_io_errors_read_the_same_table(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """storage.io_errors fails a disk and warns a loop device; logs scan says the same."""
    log = tmp_path / "kern.log"
    log.write_text(
        "[ 5.0] blk_update_request: I/O error, dev sda, sector 2048 op 0x0:(READ)\n"
        "[ 6.0] blk_update_request: I/O error, dev loop0, sector 8 op 0x0:(READ)\n"
    )
    assert main(["logs", "scan", "--json", str(log)]) == 1
    doc = json.loads(capsys.readouterr().out)
    assert {e["device"]: e["severity"] for e in doc["events"]} == {
        "sda": "critical",
        "loop0": "warn",
    }
    found = by_subject(run_check(_tree(tmp_path, log.read_text()), "storage.io_errors"))
    assert found["disk:sda"].status is Status.FAIL and found["disk:loop0"].status is Status.WARN

"""``dolmen logs scan`` in-process: text and dolmen.logscan/1 JSON on the real recordings, stdin,
gzip, --since (counted back from the end of the logs, or from now), the summary per code and
-v, and the exit codes (0 no critical event, 1 critical, 2 unreadable input). Every JSON
document is validated against its schema (tests/report/contract.py)."""

from __future__ import annotations

import gzip
import io
import json
from pathlib import Path
from typing import Any

import pytest

from dolmen.cli.logs import parse_duration
from dolmen.cli.main import main
from tests.conftest import recording
from tests.report.contract import assert_valid

DECODE0 = "kernel-logs/gpud__dmesg.decode.iso.log.0"  # Xid 13 x629, 43 x7 (warn only)
DBE = "kernel-logs/gpud__dmesg-time-format-iso.log"  # Xid 48 (critical), 63, 94, peermem
KMSG_PEERMEM = "kernel-logs/gpud__kmsg.2.peermem.log"  # boot-relative times only
FM = "fabric-manager/gpud__fabric-manager.0.log"  # SXid 12028 non-fatal x18


def run(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str, str]:
    rc = main(["logs", "scan", *args])
    out, err = capsys.readouterr()
    return rc, out, err


def scan_json(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, dict[str, Any]]:
    rc, out, err = run(capsys, "--json", *args)
    assert not err
    return rc, assert_valid(json.loads(out))


def test_text_summarises_each_code_with_its_first_and_last_line(
    capsys: pytest.CaptureFixture[str],
) -> None:
    rc, out, _ = run(capsys, str(recording(DECODE0)))
    assert rc == 0  # Xid 13 and 43 are warnings
    lines = out.splitlines()
    assert lines[1].startswith(
        "  Xid 13  warn  action: restart_app  x629 on GPU 0000:38:00.0  Graphics engine exception"
    )
    assert lines[2].startswith(
        "    first  2025-01-21T02:21:33.498559+00:00  line 1: NVRM: Xid (PCI:0000:38:00): 13,"
    )
    assert lines[3].startswith("    last   2025-01-21T04:41:44.285147+00:00  line 635: NVRM:")
    assert "  Xid 43  warn  action: none  x7 on GPU 0000:38:00.0" in out
    assert out.count("NVRM: Xid (PCI:0000:38:00): 13,") == 2  # the first and the last only
    summary = out.strip().splitlines()[-1]
    assert summary.startswith("summary: 636 events (0 critical, 636 warn, 0 info)")
    assert "Xid 13 x629, Xid 43 x7" in summary and "GPU 0000:38:00.0 x636" in summary


def test_verbose_prints_every_line_by_device(capsys: pytest.CaptureFixture[str]) -> None:
    rc, out, _ = run(capsys, "-v", str(recording(DECODE0)))
    assert rc == 0
    assert "  GPU 0000:38:00.0" in out and "    Xid 13  x629" in out
    assert out.count("NVRM: Xid (PCI:0000:38:00): 13,") == 629 + 2  # every one, and the summary


def test_a_code_on_several_gpus_names_them_critical_first(
    capsys: pytest.CaptureFixture[str],
) -> None:
    # Xid lines quoted in GitHub issues: several GPUs, some lines without a time.
    rc, out, _ = run(capsys, str(recording("kernel-logs/issues__xid-excerpts.md")))
    assert rc == 1
    codes = [ln for ln in out.splitlines() if ln.startswith("  ") and not ln.startswith("    ")]
    assert codes[0].startswith("  Xid 149  critical  action: check_nvlink  x4 on 2 GPUs: ")
    assert "Xid 45  info  action: none  x8 on 4 GPUs: 0000:dc:00.0, 0000:ed:00.0," in out
    assert "  Xid 79  critical  action: drain_and_service  x1 on GPU 0000:44:00.0" in out
    assert "    only   -  line 78: NVRM: Xid (PCI:0000:44:00): 79, GPU has fallen off" in out
    assert "    first  [1843.308145]  line 72: " in out  # a boot-relative time as the log gave it


def test_critical_event_exits_1(capsys: pytest.CaptureFixture[str]) -> None:
    rc, out, _ = run(capsys, str(recording(DBE)))
    assert rc == 1
    assert "Xid 48  critical  action: reset_gpu  x1" in out
    assert "Xid 63  info  action: none  x1" in out
    assert "nvidia-peermem" in out and "1 critical" in out


def test_json_document(capsys: pytest.CaptureFixture[str]) -> None:
    rc, doc = scan_json(capsys, str(recording(DBE)), str(recording(DECODE0)))
    assert rc == 1 and doc["exit_code"] == 1
    assert doc["schema"] == "dolmen.logscan/1" and doc["since"] is None
    files = {Path(f["path"]).name: f for f in doc["files"]}
    assert files[Path(DECODE0).name]["events"] == 636
    assert files[Path(DECODE0).name]["format"] == "dmesg-iso-decode"
    assert files[Path(DBE).name]["first_time"] == "2024-11-15T05:39:15.491363+00:00"
    summary = doc["summary"]
    assert summary["by_code"]["Xid 13"] == 629 and summary["by_code"]["Xid 94"] == 9
    assert summary["by_group"]["GPU 0000:19:00.0"] == 11
    assert summary["critical"] == 1 and summary["events"] == len(doc["events"]) == 636 + 41
    dbe = next(e for e in doc["events"] if e["code"] == 48)
    assert dbe["severity"] == "critical" and dbe["action"] == "reset_gpu" and dbe["known"]
    assert dbe["bus_id"] == "0000:19:00.0" and dbe["clock"] == "absolute"
    assert dbe["line"] == 11 and dbe["time"] == "2024-11-15T12:02:03.470068+00:00"
    keys = {"file", "line", "kind", "code", "label", "group", "severity", "action", "meaning"}
    assert all(keys <= set(e) for e in doc["events"])


def test_stdin_and_boot_relative_times(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    data = recording(KMSG_PEERMEM).read_bytes()
    monkeypatch.setattr("sys.stdin", io.TextIOWrapper(io.BytesIO(data)))
    rc, doc = scan_json(capsys, "--since", "1h", "--anchor", "now", "-")
    # kmsg times are seconds since boot: counted from now, --since cannot date them, they
    # are kept and counted as undated.
    assert rc == 0 and doc["files"][0]["path"] == "-"
    assert doc["summary"]["events"] == 7 and doc["summary"]["undated"] == 7
    assert doc["events"][0]["time"] is None and doc["events"][0]["boot_seconds"] == 227.996636


def test_since_counts_back_from_the_end_of_an_archived_log(
    capsys: pytest.CaptureFixture[str],
) -> None:
    # The log ends at 2024-11-15T12:02:15.95: its last hour holds the Xid 48 of 12:02:03.
    rc, doc = scan_json(capsys, "--since", "1h", str(recording(DBE)))
    assert rc == 1 and doc["since"] == "1h" and doc["anchor"] == "end"
    f = doc["files"][0]
    assert f["window"] == {
        "start": "2024-11-15T11:02:15.950445+00:00",
        "end": "2024-11-15T12:02:15.950445+00:00",
        "start_boot_seconds": None,
        "end_boot_seconds": None,
    }
    assert doc["summary"]["events"] == f["events"] == 31 and f["filtered"] == 10
    assert all(e["time"] >= "2024-11-15T11:02:15" for e in doc["events"])
    rc, out, _ = run(capsys, "--since", "1h", str(recording(DBE)))
    assert (
        "  --since 1h: 2024-11-15T11:02:15.950445+00:00 .. 2024-11-15T12:02:15.950445+00:00 "
        "(counted back from the end of the logs, not now)" in out
    )


def test_since_from_now_drops_old_dated_events(capsys: pytest.CaptureFixture[str]) -> None:
    rc, doc = scan_json(capsys, "--since", "1h", "--anchor", "now", str(recording(DBE)))
    assert rc == 0  # the Xid 48 of 2024 is outside the last hour of now
    assert doc["summary"]["events"] == 0 and doc["files"][0]["filtered"] == 41
    assert doc["anchor"] == "now"
    _, out, _ = run(capsys, "--since", "1h", "--anchor", "now", str(recording(DBE)))
    assert "(counted back from now)" in out


def test_since_over_several_files_counts_back_from_the_newest(
    capsys: pytest.CaptureFixture[str],
) -> None:
    # DECODE0 ends in January 2025: the day before it holds nothing of DBE's November 2024.
    rc, doc = scan_json(capsys, "--since", "1d", str(recording(DBE)), str(recording(DECODE0)))
    assert rc == 0
    files = {Path(f["path"]).name: f for f in doc["files"]}
    assert files[Path(DBE).name]["events"] == 0 and files[Path(DBE).name]["filtered"] == 41
    assert files[Path(DECODE0).name]["events"] == 636
    assert files[Path(DBE).name]["window"]["end"] == "2025-01-21T04:41:44.287197+00:00"


def test_since_places_boot_relative_times_within_one_boot(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    log = tmp_path / "dmesg"
    xid = "NVRM: Xid (PCI:0000:19:00): 48, pid='<unknown>', name=<unknown>, DBE"
    log.write_text(f"[  100.000000] {xid}\n[ 7000.000000] {xid}\n[ 7300.000000] usb 1-1: reset\n")
    _, doc = scan_json(capsys, "--since", "1h", str(log))
    assert doc["summary"]["events"] == 1 and doc["events"][0]["boot_seconds"] == 7000.0
    assert doc["files"][0]["window"]["end_boot_seconds"] == 7300.0
    assert doc["files"][0]["window"]["start_boot_seconds"] == 3700.0
    # Seconds that go back are a reboot inside the file: nothing can be placed, all is kept.
    log.write_text(f"[ 7000.000000] {xid}\n[  100.000000] {xid}\n[ 7300.000000] usb 1-1: x\n")
    _, doc = scan_json(capsys, "--since", "1h", str(log))
    assert doc["summary"]["events"] == doc["summary"]["undated"] == 2
    assert set(doc["files"][0]["window"].values()) == {None}
    _, out, _ = run(capsys, "--since", "1h", str(log))
    assert (
        "--since 1h: not applied (its seconds since boot go back: a reboot inside the log)" in out
    )


def test_gzip_is_read(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    gz = tmp_path / "kern.log.2.gz"
    gz.write_bytes(gzip.compress(recording(DECODE0).read_bytes()))
    rc, doc = scan_json(capsys, str(gz))
    assert rc == 0 and doc["summary"]["by_code"] == {"Xid 13": 629, "Xid 43": 7}


def test_fabric_manager_sxids(capsys: pytest.CaptureFixture[str]) -> None:
    rc, out, _ = run(capsys, str(recording(FM)))
    assert rc == 0
    assert "NVSwitch 0000:86:00.0" in out and "SXid 12028  warn  action: reboot" in out


def test_flaps_are_warnings_and_a_gain_is_no_flap(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    # Two lines of Azure/azurehpc-health-checks test/data/1dev_6flap_syslog (MIT).
    log = tmp_path / "syslog"
    log.write_text(
        "Aug 17 06:18:01 jplc7eb7-vm-0 systemd-networkd[5398]: ib6: lost carrier\n"
        "Aug 17 06:18:06 jplc7eb7-vm-0 systemd-networkd[5398]: ib6: Gained carrier\n"
        "Aug 17 06:18:07 jplc7eb7-vm-0 kernel: IPv6: ADDRCONF(NETDEV_CHANGE): ib6: link becomes "
        "ready\n"
    )
    rc, out, _ = run(capsys, str(log))
    assert rc == 0
    assert "ib_flap  warn  action: check_link  x1 on link ib6" in out
    assert "link_up  info  action: none  x1 on link ib6" in out  # the gain: shown, not a flap
    _, doc = scan_json(capsys, str(log))
    assert doc["summary"]["by_code"] == {"ib_flap": 1, "link_up": 1}
    assert [e["interface"] for e in doc["events"]] == ["ib6", "ib6"]


def test_no_events(capsys: pytest.CaptureFixture[str]) -> None:
    rc, out, _ = run(capsys, str(recording("kernel-logs/azurehpc__0flap_syslog")))
    assert rc == 0 and "no events" in out and "summary: 0 events" in out


def test_empty_file_is_readable(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    empty = tmp_path / "empty.log"
    empty.write_text("")
    rc, doc = scan_json(capsys, str(empty))
    assert rc == 0 and doc["files"][0]["lines"] == 0 and doc["events"] == []


@pytest.mark.parametrize(
    ("content", "message"),
    [
        (None, "no such file"),
        (b"\x00\x01\x02binary\x00" * 100, "binary data, not a text log"),
        (bytes(range(1, 32)) * 200, "binary data, not a text log"),
        (b"\x1f\x8b\x08\x00garbage", "damaged gzip data"),
        ("dir", "is a directory"),
    ],
    ids=["missing", "nul-bytes", "control-bytes", "bad-gzip", "directory"],
)
def test_unreadable_input_exits_2(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, content: bytes | str | None, message: str
) -> None:
    path = tmp_path / "input.log"
    if content == "dir":
        path.mkdir()
    elif isinstance(content, bytes):
        path.write_bytes(content)
    good = str(recording(DBE))  # a readable file first: one bad input still stops the scan
    rc, out, err = run(capsys, good, str(path))
    assert rc == 2 and out == ""
    first = err.splitlines()[0]
    assert first == f"dolmen: error: {path}: {message}" or first.startswith(
        f"dolmen: error: {path}: {message}"
    )


def test_bad_since_exits_2(capsys: pytest.CaptureFixture[str]) -> None:
    rc, _, err = run(capsys, "--since", "yesterday", str(recording(DBE)))
    assert rc == 2
    assert "dolmen: error: --since 'yesterday' is not a duration" in err and "hint:" in err


def test_no_file_is_a_usage_error(capsys: pytest.CaptureFixture[str]) -> None:
    rc, _, err = run(capsys)
    assert rc == 2 and "FILE" in err


@pytest.mark.parametrize(
    ("text", "seconds"),
    [("90s", 90), ("30m", 1800), ("2h", 7200), ("1h30m", 5400), ("7d", 604800), ("2W", 1209600)],
)
def test_parse_duration(text: str, seconds: int) -> None:
    assert parse_duration(text).total_seconds() == seconds


def test_help_lists_scan(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["logs", "--help"]) == 0
    assert "scan" in capsys.readouterr().out


# Issue 9 case 10: a crash's NUL run is text; a large log is streamed, memory bounded.


def test_a_run_of_nul_bytes_is_text_as_validate_reads_it(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    log = recording(DBE).read_bytes()
    crashed = tmp_path / "kern.log"
    crashed.write_bytes(b"\0" * 70_000 + log)  # the blocks a crash allocated, never written
    rc, doc = scan_json(capsys, str(crashed))
    assert rc == 1 and doc["summary"]["critical"] == 1  # the Xid 48 after the NULs is found
    middle = tmp_path / "kern.log.1"
    middle.write_bytes(log[:2000] + b"\0" * 5000 + log[2000:])
    assert scan_json(capsys, str(middle))[1]["summary"]["critical"] == 1


def test_a_long_log_is_streamed_in_bounded_memory(tmp_path: Path) -> None:
    import subprocess
    import sys

    noise = b"".join(
        b"[%8d.000000] usb 1-1: new high-speed USB device number %d using xhci_hcd\n" % (i, i)
        for i in range(1000)
    )
    xid = recording(DBE).read_bytes()
    big = tmp_path / "syslog"
    with open(big, "wb") as f:
        for _ in range(500):  # about 40 MB, 500 critical Xid 48 among 550 000 lines
            f.write(noise)
            f.write(xid)
    # The child reports its own high-water mark (VmHWM of its own memory map): the kernel
    # keeps the pre-exec peak in getrusage's ru_maxrss, and a vfork from a pytest that has
    # grown to hundreds of MiB would count the parent's size (seen in a full CI run).
    code = (
        "import sys\n"
        "from dolmen.cli.main import main\n"
        "try:\n"
        "    rc = main(sys.argv[1:])\n"
        "finally:\n"
        "    hwm = [l for l in open('/proc/self/status') if l.startswith('VmHWM')]\n"
        "    sys.stderr.write(hwm[0])\n"
        "sys.exit(rc)\n"
    )
    argv = [sys.executable, "-c", code, "logs", "scan", "--json", str(big)]
    with open(tmp_path / "out.json", "wb") as out:
        done = subprocess.run(argv, stdout=out, stderr=subprocess.PIPE, text=True, check=False)
    assert done.returncode == 1, done.stderr
    peak_mib = int(done.stderr.split("VmHWM:")[1].split()[0]) / 1024
    doc = json.loads((tmp_path / "out.json").read_text())
    assert doc["summary"]["critical"] == 500 and doc["files"][0]["lines"] > 500_000
    # Python, click and the catalogue take about 50 MiB; the 40 MB log held whole took 250.
    assert peak_mib < 120, f"peak RSS {peak_mib:.0f} MiB"


def test_host_text_in_log_lines_is_shown_not_obeyed(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    log = tmp_path / "kern.log"
    line = recording(DBE).read_text().splitlines()[0]
    # (\r and \x85 end a line, for logs scan as for validate: they never reach a message)
    log.write_text(line + " \x1b]0;owned\x07\x1b[2J\b\x9b\u202e\n")
    _, out, _ = run(capsys, str(log))
    assert not any(c in out for c in "\x1b\x07\b\x9b\u202e")
    assert "\\x1b]0;owned\\x07\\x1b[2J\\x08\\x9b\\u202e" in out
    _, doc = scan_json(capsys, str(log))  # JSON stays exact data
    assert any("\x1b]0;owned" in e["message"] for e in doc["events"])

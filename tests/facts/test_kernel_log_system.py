"""Host-level kernel-log events (panic, Oops/BUG, OOM kill, segfault, file-max), carrier
lines of any interface, the block prefilter, the streamed blocks, and pstore records."""

from __future__ import annotations

import random
from datetime import datetime
from pathlib import Path

import pytest

from dolmen.compat import UTC
from dolmen.facts.kernel_log import collect, scan_kernel_log
from dolmen.facts.kernel_log.events import BLOCK_WORDS, NEEDLES
from dolmen.facts.kernel_log.pstore import parse_pstore
from dolmen.facts.kernel_log.scan import PER_GROUP, LogScanner, scan_blocks
from dolmen.facts.kernel_log.stream import MAX_LINE, blocks_of, split_lines, text_blocks
from dolmen.host.tree import TreeHost
from tests.conftest import make_tree, recording

NOW = datetime(2025, 1, 22, 12, 0)


def one(line: str) -> dict[str, object] | None:
    """The one event of a one-line log, as a dict of its set fields (None: no event)."""
    events = scan_kernel_log(line, now=NOW).events or ()
    assert len(events) <= 1
    if not events:
        return None
    ev = events[0]
    fields = ("kind", "pid", "process", "device", "interface", "detail")
    return {f: getattr(ev, f) for f in fields if getattr(ev, f) is not None}


CASES = [
    # gpud components/os/testdata (file-max) and the pstore recordings (panic, Oops, BUG)
    (
        "kern  :warn  : 2025-01-21T04:41:44,285060+00:00 VFS: file-max limit 1000000 reached",
        {"kind": "file_max", "detail": "1000000"},
    ),
    (
        "<0>[ 3098.275469] Kernel panic - not syncing: Test panic triggered by crash_test module",
        {"kind": "panic", "detail": "Test panic triggered by crash_test module"},
    ),
    (
        "[ 12.5] Kernel panic - not syncing: Fatal exception",
        {"kind": "panic", "detail": "Fatal exception"},
    ),
    ("<4>[  201.670809] Oops: 0002 [#1] SMP", {"kind": "oops", "detail": "Oops: 0002 [#1] SMP"}),
    (
        "[ 9.1] BUG: kernel NULL pointer dereference, address: 0000000000000008",
        {
            "kind": "oops",
            "detail": "BUG: kernel NULL pointer dereference, address: 0000000000000008",
        },
    ),
    ("[ 9.1] kernel BUG at mm/slub.c:321!", {"kind": "oops", "detail": "BUG: mm/slub.c:321!"}),
    (
        "[ 9.1] watchdog: BUG: soft lockup - CPU#3 stuck for 22s! [python:1234]",
        {"kind": "oops", "detail": "BUG: soft lockup - CPU#3 stuck for 22s! [python:1234]"},
    ),
    # gpud components/memory/testdata: every OOM line form
    (
        "kern  :warn  : 2025-01-21T08:43:30,287197+00:00 Out of memory: Killed process 123, UID 48, (httpd)",
        {"kind": "oom_kill", "pid": 123, "process": "httpd", "detail": "system"},
    ),
    (
        "[ 1.0] Out of memory: Kill process 456 (python) score 50 or sacrifice child",
        {"kind": "oom_kill", "pid": 456, "process": "python", "detail": "system"},
    ),
    (
        "[ 1.0] Memory cgroup out of memory: Killed process 7 (java) total-vm:1kB, anon-rss:1kB",
        {"kind": "oom_kill", "pid": 7, "process": "java", "detail": "memcg"},
    ),
    (
        "[ 1.0] oom-kill:constraint=CONSTRAINT_MEMCG,nodemask=(null),cpuset=x,mems_allowed=0-1,"
        "oom_memcg=/k,task_memcg=/k/c,task=node,pid=863987,uid=0",
        {
            "kind": "oom_kill",
            "pid": 863987,
            "process": "node",
            "detail": "memcg",
            "device": "CONSTRAINT_MEMCG",
        },
    ),
    (
        "[ 1.0] oom-kill:constraint=CONSTRAINT_NONE,nodemask=(null),",
        {"kind": "oom_kill", "detail": "system", "device": "CONSTRAINT_NONE"},
    ),
    ("[ 1.0] oom_reaper: reaped process 345646 (vector), now anon-rss:0kB", None),
    # gpud components/accelerator/nvidia/nccl/testdata
    (
        "kern  :warn  : 2025-01-21T04:41:44,285060+00:00 pt_main_thread[2536443]: segfault at "
        "7f797fe00000 ip 00007f7c7ac69996 sp 00007f7c12fd7c30 error 4 in libnccl.so.2[7f7c7ac00000+d3d3000]",
        {
            "kind": "segfault",
            "pid": 2536443,
            "process": "pt_main_thread",
            "device": "libnccl.so.2",
            "detail": "segfault",
        },
    ),
    (
        "[ 5.0] traps: python[99] general protection fault ip:7f00 sp:7ffe error:0 in libcuda.so.1[7f00+1000]",
        {
            "kind": "segfault",
            "pid": 99,
            "process": "python",
            "device": "libcuda.so.1",
            "detail": "general protection fault",
        },
    ),
    # carrier and link lines name their interface, losses and gains alike
    (
        "Aug 17 06:18:01 vm-0 systemd-networkd[5398]: ib6: lost carrier",
        {"kind": "ib_flap", "interface": "ib6", "detail": "down"},
    ),
    (
        "Aug 17 06:18:01 vm-0 systemd-networkd[5398]: enp65s0f1np1: Gained carrier",
        {"kind": "ib_flap", "interface": "enp65s0f1np1", "detail": "up"},
    ),
    (
        "[ 7.0] ixgbe 0000:03:00.0 eth0: NIC Link is Down",
        {"kind": "ib_flap", "interface": "eth0", "detail": "down"},
    ),
    (
        "[ 7.0] e1000e: eth1 NIC Link is Up 1000 Mbps Full Duplex, Flow Control: None",
        {"kind": "ib_flap", "interface": "eth1", "detail": "up"},
    ),
    ("[ 7.0] IPv6: ADDRCONF(NETDEV_CHANGE): eth0: link becomes ready", None),  # no flap
    ("[ 7.0] ata3: SATA link down (SStatus 0 SControl 300)", None),
    # another program's "BUG:" or "segfault" in a syslog is not the kernel's
    ("Aug 17 06:18:01 vm-0 myapp[12]: BUG: Kernel panic - not syncing: in my test", None),
    # truncated, junk and hostile lines: no event, never an exception
    ("[ 1.0] Kernel panic - not syn", None),
    ("[ 1.0] Out of memory: Killed process", None),
    ("[ 1.0] Out of memory: Killed process x (y)", None),
    ("[ 1.0] x[]: segfault at", None),
    ("[ 1.0] VFS: file-max limit  reached", None),
    ("\x00\x1b[2J Oops:", None),
    ("[ 1.0] " + "Oops: " * 20000, {"kind": "oops"}),
]


@pytest.mark.parametrize(("line", "want"), CASES, ids=[c[0][:60] for c in CASES])
def test_event_table(line: str, want: dict[str, object] | None) -> None:
    got = one(line)
    if want is None or got is None:
        assert got == want
    else:
        assert {k: got.get(k) for k in want} == want


def test_every_needle_line_holds_a_block_word() -> None:
    """BLOCK_WORDS must cover NEEDLES, or the fast path would skip a block with an event."""
    samples = [line for line, _ in CASES] + [
        "NVRM: Xid (PCI:0000:38:00): 79",
        "GPU has fallen off the bus",
        "nvidia-peermem nv_get_p2p_free_callback ERROR",
        "mlx5_core 0000:9d:00.1 ib0: Link down",
        "mlx5_core 0000:9d:00.1 ib0: Link up",
        "63.008 Gb/s available PCIe bandwidth, limited by 8.0 GT/s",
        "pcieport 0000:00:01.0: AER: Corrected error received",
        "NVRM: API mismatch: the client has the version 1",
        "detected NVSwitch non-fatal error",
        "I/O error, dev sda, sector 2048",
        "Buffer I/O Error on dev sda1",
        "critical medium error, dev sda",
        "critical target error, dev sda",
        "EXT4-fs error (device md0): x",
        "nvme nvme0: I/O 123 QID 4 timeout, aborting",
        "Kernel Panic - not syncing: x",
    ]
    for line in samples:
        if NEEDLES.search(line):
            assert any(w in line for w in BLOCK_WORDS), line


_POOL = [
    "[  1.0] usb 1-1: reset",
    "  continued line",
    "",
    "   ",
    "\tmore",
    "[  2.0] NVRM: Xid (PCI:0000:38:00): 79, pid=1, name=x, GPU has fallen off the bus",
    "  NVRM: Xid (PCI:0000:39:00): 48, pid=1, name=x, DBE",
    "kern  :warn  : 2025-01-21T04:41:44,285060+00:00 VFS: file-max limit 1000000 reached",
    "<4>[ 3.0] Oops: 0002 [#1] SMP",
    "x\ry",
    "é Aug 17 06:18:01 h systemd-networkd[5]: ib6: lost carrier",
    "a\r",
    "\x85z",
]


def _facts(scanner: LogScanner, events: list[object]) -> tuple[object, ...]:
    f = scanner.facts(events=())
    return f.lines, f.format, f.first_boot_seconds, f.last_boot_seconds, tuple(events)


@pytest.mark.parametrize("size", [1, 7, 64, 4096])
def test_blocks_scan_as_lines_do(size: int) -> None:
    """Blocks (with the fast path) and bytes chunks give what line-by-line feeding gives."""
    rng = random.Random(size)
    for _ in range(400):
        text = "\n".join(rng.choice(_POOL) for _ in range(rng.randint(0, 50)))
        text += rng.choice(["", "\n"])
        by_line: list[object] = []
        s = LogScanner(on_event=lambda e, seen=by_line: seen.append((e.kind, e.line_no, e.message)))
        s.feed_all(text.splitlines())
        want = _facts(s, by_line)
        data = text.encode()
        chunks = [data[i : i + size] for i in range(0, len(data), size)]
        for blocks in (blocks_of(text, size), text_blocks(chunks)):
            got: list[object] = []
            b = LogScanner(on_event=lambda e, got=got: got.append((e.kind, e.line_no, e.message)))
            for block in blocks:
                b.feed_block(block)
            assert _facts(b, got) == want, text
        assert list(split_lines(chunks)) == text.splitlines()


def test_an_overlong_line_is_cut_and_a_file_without_a_break_cannot_fill_memory() -> None:
    lines = list(split_lines([b"a" * (3 * MAX_LINE), b"b\nnext\n"]))
    assert lines == ["a" * MAX_LINE, "next"]  # line numbers stay the file's
    assert [len(x) for x in split_lines([b"x" * (MAX_LINE + 5) + b"\ny"])] == [MAX_LINE, 1]


def test_a_flood_keeps_its_latest_events_per_device() -> None:
    line = "[{i}.0] NVRM: Xid (PCI:0000:38:00): 13, pid=1, name=x, Graphics Exception\n"
    text = "".join(line.format(i=i) for i in range(PER_GROUP + 10))
    facts = scan_blocks(blocks_of(text))
    assert facts.events is not None and len(facts.events) == PER_GROUP
    assert facts.events_dropped == 10 and facts.events[-1].line_no == PER_GROUP + 10


# pstore: the two gpud recordings (pkg/pstore/testdata), a header-only record, absence.


def test_pstore_panic_is_dated_from_its_boot() -> None:
    text = recording("kernel-logs/gpud__pstore_7530486857247_dmesg.txt").read_text()
    (ev,) = parse_pstore({"var/lib/systemd/pstore/7530486857247/dmesg.txt": text})
    assert ev.kind == "panic" and ev.detail == "Test panic triggered by crash_test module"
    # audit(1753325631.043) at 627.032411 s: the boot began 1753325004.01 s; +3098.275 s
    assert ev.time is not None and ev.clock == "absolute"
    assert ev.time.replace(microsecond=0) == datetime(2025, 7, 24, 3, 35, 2, tzinfo=UTC)
    assert ev.device == "var/lib/systemd/pstore/7530486857247/dmesg.txt"


def test_pstore_oops_without_a_wall_clock() -> None:
    text = recording("kernel-logs/gpud__pstore_dmesg-erst.txt").read_text()
    events = parse_pstore({"sys/fs/pstore/dmesg-erst-1": text})
    assert [e.kind for e in events] == ["oops", "oops"] and events[0].time is None
    assert events[-1].detail == "Oops: 0002 [#1] SMP" and events[-1].boot_seconds == 201.670809


def test_pstore_header_alone_is_a_crash_and_a_clean_shutdown_is_none() -> None:
    (ev,) = parse_pstore({"sys/fs/pstore/dmesg-efi-1": "Panic#2 Part1\n<6>[ 5.0] usb reset\n"})
    assert ev.kind == "panic" and ev.line_no == 1 and "Panic#2 Part1" in ev.message
    assert parse_pstore({"sys/fs/pstore/dmesg-efi-2": "Restart#1 Part1\n<6>[ 5.0] bye\n"}) == ()
    assert parse_pstore({"sys/fs/pstore/dmesg-efi-3": "\x00\xff junk"}) == ()


def test_pstore_in_a_tree(tmp_path: Path) -> None:
    crash = recording("kernel-logs/gpud__pstore_dmesg-erst.txt").read_text()
    root = make_tree(tmp_path / "t", files={"sys/fs/pstore/dmesg-erst-7": crash})
    facts = collect(TreeHost(root), now=NOW)
    assert facts.pstore is not None and {e.kind for e in facts.pstore} == {"oops"}
    assert facts.pstore_files == ("sys/fs/pstore/dmesg-erst-7",) and "pstore" not in facts.unread
    absent = collect(TreeHost(make_tree(tmp_path / "u")), now=NOW)
    assert absent.pstore is None and absent.unread["pstore"] == "not in this bundle: sys/fs/pstore"
    (tmp_path / "e" / "sys" / "fs" / "pstore").mkdir(parents=True)
    assert collect(TreeHost(tmp_path / "e"), now=NOW).pstore == ()  # mounted, no record


def test_recordings_draw_their_events() -> None:
    """The gpud kernel-log recordings of each fault hold exactly the events they show."""

    def kinds(name: str) -> set[str]:
        text = recording(f"kernel-logs/{name}").read_text(errors="replace")
        events = scan_kernel_log(text, now=NOW).events or ()
        assert all(e.detail == "up" for e in events if e.kind == "ib_flap"), name
        return {e.kind for e in events}

    assert kinds("gpud__os_dmesg.decode.iso.log") == {"file_max"}
    assert kinds("gpud__nccl_dmesg.decode.iso.log") == {"segfault"}
    assert kinds("gpud__memory_dmesg.decode.iso.log") == {"xid", "oom_kill"}
    # its mlx5 "Link up" is an up (no loss); its 21 "link becomes ready" lines are no event
    # and NVRM's "loading NVIDIA UNIX x86_64 Kernel Module  550.144.03": the module loaded
    assert kinds("gpud__pstore_7530486857247_dmesg.txt") == {"panic", "ib_flap", "driver_loaded"}
    assert kinds("gpud__pstore_dmesg-erst.txt") == {"oops"}
    assert kinds("azurehpc__0flap_syslog") == set()


def test_import_compiles_only_the_prefilter() -> None:
    """The quick tier starts often: importing the kernel-log facts compiles no event or
    time-stamp pattern (they compile when a line needs them)."""
    import subprocess
    import sys

    code = (
        "import dolmen.facts.kernel_log\n"
        "from dolmen.facts.kernel_log import events, lines, pstore, system_events\n"
        "from dolmen.facts.kernel_log.lazy import Lazy\n"
        "lazy = [v for m in (events, lines, pstore, system_events) for v in vars(m).values()\n"
        "        if isinstance(v, Lazy)]\n"
        "assert len(lazy) > 30 and not [p for p in lazy if p._compiled is not None]\n"
        "events.extract_event(lines.parse_record(['[ 1.0] VFS: file-max limit 5 reached']))\n"
        "done = [p.pattern for p in lazy if p._compiled is not None]\n"
        "print(len(done), done[0].startswith('VFS') or done[1].startswith('VFS'))\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    # the dmesg time stamp ("[ 1.0] ") and the one event pattern the line needed
    assert done.stdout.split() == ["2", "True"]

"""Kernel logs (dmesg, kmsg, journalctl, syslog, pstore records), the Xid excerpts, the
fabric manager's logs. A kernel log of any format lies at ``commands/dmesg`` (the one key
validate reads it from); a pstore record at its pstore path."""

from __future__ import annotations

from tests.recordings import keys
from tests.recordings.model import BAD, JUDGED, Case, Flag, Kind, fails, flags

KL = "kernel-logs"


def log(
    name: str, kind: Kind, why: str, expect: tuple[Flag, ...] = (), key: str = keys.DMESG
) -> Case:
    return Case(f"{KL}/{name}", f"{KL}/{name}", key, kind, why, expect=expect)


def xid_judged(*bus: str) -> tuple[Flag, ...]:
    """gpu.xid judged the GPU the NVRM lines name: the log alone proves it exists."""
    return tuple(Flag("gpu.xid", JUDGED, f"gpu:{b}") for b in bus)


def host_rule(words: str) -> Flag:
    """A kernel-log rule (issue 8: panic/Oops/OOM/NCCL segfault/file-max) flags the host
    (or the library it names)."""
    return Flag("*", BAD, "*", words)


PASS = frozenset({"pass"})
H100_BUSES = ("19", "3b", "4c", "5d", "9b", "bb", "cb", "db")

PEERMEM = (
    "nvidia-peermem 'ERROR detected invalid context' (kern.err, repeated): GPUDirect RDMA's "
    "module reports an error; no GPU named. At least a warning on the host"
)

LOG_CASES = [
    log(
        "azurehpc__0flap_syslog",
        "healthy",
        "two systemd lines, no kernel event (the no-flap control)",
    ),
    log(
        "gpud__dmesg-time-format-iso.log",
        "fault",
        "peermem errors, then Xid 48 (DBE) and Xid 63 (row marked for remapping, 'reset gpu "
        "to activate') and Xid 94 on 0000:19:00: the GPU needs a reset",
        (fails("gpu.xid", "gpu:0000:19:00"),),
    ),
    log(
        "gpud__dmesg-time-format-short-iso.log",
        "healthy",
        "docker veth churn on an A800 host: nothing wrong",
    ),
    log(
        "gpud__dmesg.decode.iso.log.0",
        "fault",
        "629 Xid 13 and 7 Xid 43 on 0000:38:00 (application faults): a warning on that GPU",
        (flags("gpu.xid", "gpu:0000:38:00"),),
    ),
    log(
        "gpud__dmesg.decode.iso.log.1",
        "healthy",
        "a boot log (mlx5 at full PCIe width, BAR assignment notes, ACPI IPMI errors) in which "
        "the NVIDIA module 550.90.07 loads and no Xid follows (grep -c Xid: 0; the Xids are in "
        "the .0 log, whatever PROVENANCE.md says): nothing to flag. nvidia-drm's 'Initialized "
        "nvidia-drm ... for 0000:19:00.0' names each of the 8 GPUs: they exist",
        (
            *(Flag("gpu.present", PASS, f"gpu:0000:{b}:00") for b in H100_BUSES),
            Flag("gpu.xid", PASS, "host", "no Xid"),
            # "NVRM: loading NVIDIA UNIX x86_64 Kernel Module  550.90.07": loaded at that boot
            Flag(
                "stack.driver.loaded", PASS, "host", r"550\.90\.07 was loaded at 2025-01-17T15:36"
            ),
            Flag("stack.driver.userspace_match", frozenset({"unknown"}), "host", "550.90.07"),
        ),
    ),
    log("gpud__dmesg.peermem.log.0", "fault", PEERMEM, (host_rule("peermem|invalid context"),)),
    log(
        "gpud__journalctl-time-format-short-iso-2.log",
        "healthy",
        "journalctl -k short-iso: eth0/cali link-ups (Calico pods): nothing wrong, no flap",
    ),
    log(
        "gpud__kmsg.1.log",
        "healthy",
        "/dev/kmsg records: nvidia-nvswitch opens, IPv6 link-ups, perf notes; no Xid (the "
        "PROVENANCE line that says Xid 48/63/94 describes the dmesg-time-format-iso file). "
        "The opens show the NVSwitches exist: the NVLink fabric's SXid check reads the log",
        (Flag("gpu.sxid", PASS, "host", "no NVSwitch SXid"),),
    ),
    log("gpud__kmsg.2.peermem.log", "fault", PEERMEM, (host_rule("peermem|invalid context"),)),
    log(
        "gpud__memory_dmesg.decode.iso.log",
        "fault",
        "16 Xid 13 on 0000:38:00 and OOM kills (oom-kill, 'Out of memory: Killed process')",
        (flags("gpu.xid", "gpu:0000:38:00"), host_rule("(?i)oom|out of memory")),
    ),
    log(
        "gpud__nccl_dmesg.decode.iso.log",
        "fault",
        "pt_main_thread segfaults in libnccl.so.2 (twice)",
        (host_rule("(?i)segfault|crash|nccl"),),
    ),
    log(
        "gpud__os_dmesg.decode.iso.log",
        "fault",
        "'VFS: file-max limit 1000000 reached' (twice)",
        (host_rule("(?i)file.max|open.file"),),
    ),
    log(
        "gpud__pstore_7530486857247_dmesg.txt",
        "fault",
        "systemd-pstore's dmesg.txt of a Panic (Part1 and Part2 records): the host crashed in "
        "an earlier boot",
        (host_rule("(?i)panic|crash"),),
        key=f"{keys.PSTORE_ARCHIVE}/7530486857247/dmesg.txt",
    ),
    log(
        "gpud__pstore_dmesg-erst.txt",
        "fault",
        "an ERST record: SysRq-triggered crash, NULL pointer dereference, Oops: the host "
        "crashed in an earlier boot (the record id is not in the file: -1 stands for it)",
        (host_rule("(?i)oops|panic|crash|null pointer"),),
        key=f"{keys.PSTORE}/dmesg-erst-1",
    ),
]

XIDS = f"{KL}/issues__xid-excerpts.md"


def xid_block(
    url: str,
    kind: Kind,
    why: str,
    expect: tuple[Flag, ...],
    start: str | None = None,
    stop: str | None = None,
) -> Case:
    tail = url.split("github.com/")[-1].replace("/", "-")
    return Case(
        f"{XIDS}#{tail}",
        XIDS,
        keys.DMESG,
        kind,
        why,
        expect=expect,
        block=url,
        start=start,
        stop=stop,
    )


XID_CASES = [
    xid_block(
        "https://github.com/NVIDIA/open-gpu-kernel-modules/issues/1150",
        "healthy",
        "Xid 45 (preemptive cleanup, 'caused by previous Xid 149/145') on dc, ed, ba, 97: the "
        "GPUs exist; the NVLink Xids themselves are not in the excerpt",
        xid_judged("0000:dc:00", "0000:ed:00", "0000:ba:00", "0000:97:00"),
    ),
    xid_block(
        "https://github.com/leptonai/gpud/pull/46",
        "fault",
        "peermem error, 3 Xid 13 and one Xid 109 (CTX SWITCH TIMEOUT) on 0000:cb:00: a warning",
        (flags("gpu.xid", "gpu:0000:cb:00"),),
    ),
    xid_block(
        "https://github.com/akash-network/support/issues/244",
        "fault",
        "dmesg -T | grep NVRM on a VM: Xid 43 x2 on 00:05 (Jul 31), Xid 31 on 00:07 (Aug 5), "
        "Xid 94 (contained ECC) on 00:08 on Aug 9, the log's last day. The kernel-log window "
        "(24 h before the last line) decides: Xid 94 warns; the application-class 43 and 31, "
        "9 and 4 days older, are shown by name as history and do not warn (a node is not "
        "drained today for an app fault of last week)",
        (
            Flag("gpu.xid", frozenset({"pass"}), "gpu:0000:00:05", r"older than 24 h \(Xid 43\)"),
            Flag("gpu.xid", frozenset({"pass"}), "gpu:0000:00:07", r"older than 24 h \(Xid 31\)"),
            flags("gpu.xid", "gpu:0000:00:08", "Xid 94"),
        ),
        start=r"NVRM: loading",
    ),
    xid_block(
        "https://github.com/NVIDIA/NVSentinel/issues/155",
        "fault",
        "the multi-line 'has fallen off the bus' message for 0000:b3:00.0 (no Xid line), and "
        "the probe failure that follows",
        (fails("gpu.fell_off_bus", "gpu:0000:b3:00.0"),),
        stop=r"^$",
    ),
    xid_block(
        "https://github.com/Bumblebee-Project/Bumblebee/issues/554",
        "fault",
        "old-driver 'GPU at 0000:01:00.0 has fallen off the bus' (twice)",
        (fails("gpu.fell_off_bus", "gpu:0000:01:00.0"),),
    ),
    xid_block(
        "https://github.com/NVIDIA/nvtrust/issues/124",
        "healthy",
        "non-fatal SXid 22013 (Minion link DLREQ) of NVSwitch 0000:04:00.0 at driver load: "
        "the switch exists, nothing fatal",
        (Flag("gpu.sxid", JUDGED, "pci:0000:04:00.0"),),
    ),
]

FM = "fabric-manager"
FM_CASES = [
    Case(
        f"{FM}/gpud__fabric-manager.0.log",
        f"{FM}/gpud__fabric-manager.0.log",
        keys.FM_LOG,
        "unread",
        "fabric manager start-up/runtime log: NVSwitch non-fatal error 12028 on four switches "
        "(non-fatal); validate reads no fabric manager log",
    ),
    Case(
        f"{FM}/gpud__fabricmanager.log",
        f"{FM}/gpud__fabricmanager.log",
        keys.FM_LOG,
        "unread",
        "multicast team setup/release and one non-fatal NVSwitch error 12028",
    ),
]

CASES = LOG_CASES + XID_CASES + FM_CASES

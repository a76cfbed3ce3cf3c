"""Events in kernel-log messages: Xids, SXids, GPUs off the bus, link flaps, PCIe trouble,
and (``system_events``) panics, Oopses, OOM kills, segfaults, the file-max limit.

One small catalogue of patterns, each with the driver or kernel code that prints
it. ``NEEDLES`` is the cheap prefilter: a line none of its words appear in
cannot hold an event, so the other patterns run on a few lines in thousands, and
are compiled only when such a line comes (``lazy``).
"""

from __future__ import annotations

import re

from dolmen.facts.kernel_log.lazy import Lazy
from dolmen.facts.kernel_log.model import KernelEvent, LogRecord
from dolmen.facts.kernel_log.system_events import SYSTEM_WORDS, WORDS, system_event
from dolmen.frozen.regex import pattern
from dolmen.values.busid import BusId

# Any event's line contains one of these words (checked on raw lines before parsing): the
# one pattern every line meets, so it is compiled at import.
NEEDLES = pattern(
    r"Xid|fallen off|peermem|arrier|Link (?:down|up)|Link is|limited by"
    r"|AER:|API mismatch|NVSwitch|I/O [Ee]rror|medium error|target error|EXT4-fs error"
    r"|QID \d+ timeout|Initialized nvidia-drm|NVRM: GPU at|NVRM: loading|nvswitch\d+: open|" + WORDS
)
# Plain strings, one of which is in every text NEEDLES matches (each needle holds one): a
# block of lines that holds none cannot hold an event, and ``in`` runs at C speed where the
# regular expression costs microseconds a line. tests/facts check that they cover NEEDLES.
BLOCK_WORDS = (
    "Xid", "fallen off", "peermem", "arrier", "Link ", "limited by", "AER:", "API mismatch",
    "NVSwitch", "I/O ", "medium error", "target error", "EXT4-fs error", "QID ",
    "Initialized nvidia-drm", "NVRM: GPU at", "NVRM: loading", ": open", *SYSTEM_WORDS,
)  # fmt: skip

_BDF = r"(?:[0-9a-fA-F]{4,8}:)?[0-9a-fA-F]{2}:[0-9a-fA-F]{2}(?:\.[0-7])?"

# NVIDIA driver (NVRM), every branch since ~2010: "NVRM: Xid (PCI:0000:38:00): 13, pid=...,
# name=..., msg"; drivers before ~R450 print "(0000:01:00)" without "PCI:"; Blackwell systems
# use PCI domains like 0018; the pid/name part is absent on some lines (NVLink5 Xids).
_XID = Lazy(r"NVRM: Xid \((?:PCI:)?(" + _BDF + r")\): (\d+),? ?(.*)")
_PID = Lazy(r"pid=('?<unknown>'?|\d+)(?:, name=([^,]*))?(?:, ?(.*))?")
# NVSwitch driver (nvidia-nvswitchN, R450+): "nvidia-nvswitch3: SXid (PCI:0000:04:00.0): 22013,
# Non-fatal, Link 44 ..." (one incident prints several lines: Data, Severity, the description).
_SXID = Lazy(r"(nvidia-nvswitch\d*): SXid \((?:PCI:)?(" + _BDF + r")\): (\d+),? ?(.*)")
# nv-fabricmanager log: "detected NVSwitch non-fatal error 12028 on fid 0 on NVSwitch pci bus id
# 00000000:86:00.0 physical id 3 port 36" (its own record of an SXid).
_FM_SXID = Lazy(
    r"detected NVSwitch (non-fatal|fatal) error (\d+) .*?pci bus id (" + _BDF + r")(.*)", re.I
)
# NVRM, without an Xid: "GPU at 0000:01:00.0 has fallen off the bus." (old drivers), "The
# NVIDIA GPU 0000:b3:00.0 (PCI ID: ...) installed in this system has fallen off the bus" (probe).
_GPU_BDF = Lazy(r"GPU (?:at )?(?:PCI:)?(" + _BDF + r")\b")
# The driver's own words for a GPU it took, no event: nvidia-drm at start-up, "[drm] Initialized
# nvidia-drm 0.0.0 20160202 for 0000:19:00.0 on minor 1" (every GPU, display or not), and NVRM's
# "GPU at PCI:0000:00:05: GPU-efbdfde9-..." (before a GPU's first Xid, and at probe).
_DRIVER_GPU = Lazy(r"(?:Initialized nvidia-drm .*? for |NVRM: GPU at (?:PCI:)?)(" + _BDF + r")\b")
# NVRM as nvidia.ko loads (nv.c, every branch): "NVRM: loading NVIDIA UNIX x86_64 Kernel Module
# 550.90.07  Fri May 31 ..." or "... UNIX Open Kernel Module for x86_64  570.158.01  Release Build".
_LOADING = Lazy(
    r"NVRM: loading NVIDIA UNIX\s+(?:(Open)\s+)?(?:\S+\s+)?Kernel Module(?:\s+for\s+\S+)?"
    r"\s+(\d+\.\d+(?:\.\d+)?)\b"
)
# The NVSwitch driver as a client opens a switch (fabric manager at start): "nvidia-nvswitch2:
# open (major=510)": the switch exists, so the node has an NVLink fabric.
_NVSWITCH_OPEN = Lazy(r"^(nvidia-nvswitch\d+): open\b")
# Fatal / non-fatal words: SXid lines ("Non-fatal"), NVLink5 Xids 144-150 ("Nonfatal", "Fatal").
_FATALITY = Lazy(r"\b(Non-?fatal|Fatal)\b", re.I)
# Xid 154 (R570+): "GPU recovery action changed from 0x0 (None) to 0x1 (GPU Reset Required)".
_RECOVERY = Lazy(r"to (0x[0-9a-fA-F]+)(?: \(([^)]*)\))?")
# systemd-networkd on any interface (IPoIB most often): "ib6: lost carrier", "eth0: Gained
# carrier" (capitalised from systemd 24x on).
_CARRIER = Lazy(r"^([\w.@-]+): (lost|gained) carrier", re.I)
# Ethernet drivers (ixgbe, i40e, igb, e1000e, bnxt_en, ice): "ixgbe 0000:03:00.0 eth0: NIC Link is
# Down", "e1000e: eth0 NIC Link is Up 1000 Mbps Full Duplex". The IPv6 stack's "ADDRCONF(
# NETDEV_CHANGE): eth0: link becomes ready" is no event: it follows every carrier gain (each
# container's veth prints one), and a gain is not a flap.
_LINK_IS = Lazy(r"([\w.@-]+):? (?:NIC )?Link is (Down|Up)")
# mlx5_core (ConnectX, IB or RoCE ports): "mlx5_core 0000:9d:00.1 enp157s0f1np1: Link down".
_MLX5_LINK = Lazy(r"mlx5_core (" + _BDF + r") (\S+): Link (down|up)")
# PCI core, pcie_print_link_status() (any driver, mlx5 most often): "mlx5_core 0000:41:00.0:
# 63.008 Gb/s available PCIe bandwidth, limited by 8.0 GT/s PCIe x8 link at 0000:40:01.1 (...)".
_LIMITED = Lazy(r"(\S+) (" + _BDF + r"): .*available PCIe bandwidth, limited by (.*)")
# PCIe AER service driver: "pcieport 0000:00:01.0: AER: Corrected error received: 0000:01:00.0"
# (newer kernels: "AER: Correctable error message received from 0000:01:00.0").
_AER = Lazy(
    r"("
    + _BDF
    + r"): AER: (?:Multiple )?(.*?) error(?: message)? received(?: from)?:? ?("
    + _BDF
    + r")?"
)
# NVRM on a driver upgrade without reboot: "NVRM: API mismatch: the client has the version
# 535.104.05, but NVRM: this kernel module has the version 535.129.03."
_VERSION = Lazy(r"(client|kernel module) has the version ([\w.]+?)[,.]?(?:\s|$)")

# Block layer, blk_print_req_error() (5.x; "blk_update_request: I/O error, dev sda, sector
# 2048 op 0x0:(READ)" before 5.17): "<kind> error, dev <disk>, sector <n>". Kinds from
# blk_errors[]: I/O, critical medium, critical target, timeout, protection...
_BLK = Lazy(r"\b((?:critical )?[\w/ ]*?) error, dev (\S+?), sector (\d+)")
# Buffer cache (fs/buffer.c): "Buffer I/O error on dev sda1, logical block 0, async page read".
_BUFFER = Lazy(r"Buffer I/O error on dev(?:ice)? (\S+?),")
# NVMe driver: "nvme nvme0: I/O 123 QID 4 timeout, aborting" (nvme_timeout) and
# "nvme0n1: I/O Cmd(0x2) @ LBA 0, 8 blocks, I/O Error (sct 0x2 / sc 0x81)" (nvme_log_error).
_NVME = Lazy(r"\b(nvme\d+(?:n\d+)?):? I/O .*?(timeout|I/O Error[^)]*\)?)")
# Filesystems: "EXT4-fs error (device md0): ext4_find_entry:1455: inode #2: ..." (ext4_error).
_EXT4 = Lazy(r"EXT4-fs error \(device ([^)]+)\): ?(.*)")


def _bus_id(text: str) -> str | None:
    """A bus id from a log line (``PCI:0000:38:00``, ``00000000:86:00.0``) as ``0000:38:00.0``."""
    bus = BusId.parse(text)
    return bus.sysfs if bus else None


def driver_gpu(message: str) -> str | None:
    """The bus id (``0000:19:00.0``) of a GPU the NVIDIA driver names in a start-up line that
    reports no event (``_DRIVER_GPU``), or None."""
    if "nvidia-drm" not in message and "NVRM: GPU at" not in message:
        return None
    found = _DRIVER_GPU.search(message)
    return _bus_id(found[1]) if found else None


def extract_event(rec: LogRecord) -> KernelEvent | None:
    """The event a record reports, or None (most records report none)."""
    m = rec.message
    ev: dict[str, object] | None = None
    if "Xid" in m:
        ev = _xid(m) if "SXid" not in m else _sxid(m)
    if ev is None and "NVSwitch" in m:
        ev = _fm_sxid(m)
    if ev is None and "fallen off the bus" in m and "NVRM" in m:
        found = _GPU_BDF.search(m)
        ev = {"kind": "fell_off_bus", "bus_id": _bus_id(found[1]) if found else None}
    # nvidia-peermem (GPUDirect RDMA module): "nvidia-peermem nv_get_p2p_free_callback:127 ERROR
    # detected invalid context, skipping further processing".
    if ev is None and m.startswith("nvidia-peermem") and ("ERROR" in m or "error" in m):
        ev = {"kind": "peermem", "device": "nvidia-peermem"}
    if ev is None and "arrier" in m:
        found = _CARRIER.search(m)
        if found:
            state = "down" if found[2].lower() == "lost" else "up"
            ev = {"kind": "ib_flap", "interface": found[1], "detail": state}
    if ev is None and "Link is" in m:
        found = _LINK_IS.search(m)
        if found:
            ev = {"kind": "ib_flap", "interface": found[1], "detail": found[2].lower()}
    if ev is None and "Link " in m:
        found = _MLX5_LINK.search(m)
        if found:
            ev = {
                "kind": "ib_flap",
                "bus_id": _bus_id(found[1]),
                "interface": found[2],
                "device": "mlx5_core",
                "detail": found[3],
            }
    if ev is None and "limited by" in m:
        found = _LIMITED.search(m)
        if found:
            ev = {
                "kind": "pcie_limited",
                "device": found[1],
                "bus_id": _bus_id(found[2]),
                "detail": found[3],
            }
    if ev is None and "AER:" in m:
        ev = _aer(m)
    if ev is None and ("error" in m or "Error" in m or "timeout" in m):
        ev = _io_error(m)
    if ev is None:
        ev = system_event(m, rec.program)
    if ev is None and "API mismatch" in m:
        versions = dict(_VERSION.findall(m))
        detail = ", ".join(f"{k} {v}" for k, v in versions.items()) or None
        ev = {"kind": "api_mismatch", "device": "nvidia", "detail": detail}
    if ev is None and m.startswith("nvidia-nvswitch") and ": open" in m:
        found = _NVSWITCH_OPEN.search(m)
        if found:
            ev = {"kind": "nvswitch", "device": found[1]}
    if ev is None and "NVRM: loading" in m:
        found = _LOADING.search(m)
        if found:
            flavour = "open" if found[1] else "proprietary"
            ev = {"kind": "driver_loaded", "device": flavour, "detail": found[2]}
    if ev is None:
        return None
    return KernelEvent(
        line_no=rec.line_no,
        message=rec.message,
        raw=rec.raw,
        time=rec.time,
        boot_seconds=rec.boot_seconds,
        clock=rec.clock,
        **ev,  # type: ignore[arg-type]
    )


def _xid(m: str) -> dict[str, object] | None:
    found = _XID.search(m)
    if not found:
        return None
    ev: dict[str, object] = {
        "kind": "xid",
        "bus_id": _bus_id(found[1]),
        "xid": int(found[2]),
    }
    rest = found[3]
    who = _PID.match(rest)
    if who:
        ev["pid"] = int(who[1]) if who[1].isdigit() else None
        name = (who[2] or "").strip()
        ev["process"] = name if name and "unknown" not in name else None
        rest = who[3] or ""
    ev["detail"] = rest or None
    ev["fatal"] = _fatality(rest)
    if ev["xid"] == 154:
        action = _RECOVERY.search(rest)
        if action:
            ev["recovery"] = int(action[1], 16)
    return ev


def _sxid(m: str) -> dict[str, object] | None:
    found = _SXID.search(m)
    if not found:
        return None
    return {
        "kind": "sxid",
        "device": found[1],
        "bus_id": _bus_id(found[2]),
        "xid": int(found[3]),
        "detail": found[4] or None,
        "fatal": _fatality(found[4]),
    }


def _fm_sxid(m: str) -> dict[str, object] | None:
    found = _FM_SXID.search(m)
    if not found:
        return None
    return {
        "kind": "sxid",
        "device": "nv-fabricmanager",
        "bus_id": _bus_id(found[3]),
        "xid": int(found[2]),
        "fatal": found[1].lower() == "fatal",
        "detail": found[4].strip() or None,
    }


def _io_error(m: str) -> dict[str, object] | None:
    found = _BLK.search(m)
    if found:
        what = found[1].strip() or "I/O"
        return {
            "kind": "io_error",
            "device": found[2],
            "detail": f"{what} error, sector {found[3]}",
        }
    found = _BUFFER.search(m)
    if found:
        return {"kind": "io_error", "device": found[1], "detail": "buffer I/O error"}
    found = _NVME.search(m)
    if found:
        return {"kind": "io_error", "device": found[1], "detail": found[2]}
    found = _EXT4.search(m)
    if found:
        return {"kind": "io_error", "device": found[1], "detail": f"ext4 error: {found[2][:80]}"}
    return None


def _aer(m: str) -> dict[str, object] | None:
    found = _AER.search(m)
    if not found:
        return None
    what = found[2].lower()
    # "Uncorrected (Fatal)", "Uncorrected (Non-Fatal)", "Corrected"; newer kernels say
    # "Uncorrectable"/"Correctable".
    device = _bus_id(found[3] or found[1])
    if what.startswith("correct"):
        return {"kind": "aer_corrected", "bus_id": device, "detail": found[2]}
    return {"kind": "aer", "bus_id": device, "fatal": "non-fatal" not in what, "detail": found[2]}


def _fatality(text: str) -> bool | None:
    found = _FATALITY.search(text)
    if not found:
        return None
    return not found[1].lower().startswith("non")

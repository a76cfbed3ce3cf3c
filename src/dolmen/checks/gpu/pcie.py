"""The GPU's PCIe link: generation and width against what the GPU and its slot can do, and
the link's error counters (AER, replays).

THE TRAP: NVIDIA GPUs lower the link *speed* when idle to save power (an RTX 3090 in
P8 reads Gen1 of Gen4), so a lower generation is a fault only under load
(utilization above a limit, or performance state P0). The link *width* does not
change with the P-state: the idle recordings keep x16 while at Gen1 (RTX 3090, RTX
2080 Ti in ../shared/recordings), so a narrower width is a fault at any load. That
rule is dolmen's judgement from those recordings; NVIDIA documents the speed change
(nvidia-smi -q "Link Gen: Current" vs "Max"), not a width change.

The maximum is the lowest of what sysfs says the GPU and its upstream port (the
slot) can do and what nvidia-smi reports as possible "with this device and system";
the current state comes from sysfs when present, else from nvidia-smi. Two cases only
warn: a GPU seen from inside a VM (the host's slot is invisible; the T4 of an AWS
g4dn reads x8 of x16), and a desktop board without the slot in sysfs (a second x16
slot is often wired x8: the real dual RTX 2070 capture reads x8 of x16).
"""

from __future__ import annotations

from typing import Any

from dolmen.checks.context import Context
from dolmen.checks.gpu.gpus import is_datacenter, is_skippable, per_gpu, unread
from dolmen.checks.model import Level, Outcome, check, failed, passed, skipped, unknown, warned
from dolmen.facts import FactError
from dolmen.facts.pci import PciDevice, PciFacts
from dolmen.host import NOT_IN_BUNDLE
from dolmen.host.gpu import ABSENT, Gpu

GUEST_MODES = frozenset({"Pass-Through", "VGPU"})  # the GPU is seen from inside a VM


def _pci(ctx: Context) -> tuple[PciFacts | None, str]:
    try:
        return ctx.pci, ""
    except FactError as e:
        return None, e.message


@check(
    "gpu.pcie.link",
    title="The GPU's PCIe link runs at its full width, and at full speed under load",
    level=Level.QUICK,
    needs=("gpu", "pci"),
    when=("nvidia_gpu",),
    remedy=(
        "Reseat the GPU or its riser/cable, check the slot (lspci -vvv -s <bdf>: LnkCap vs "
        "LnkSta) and the BIOS PCIe settings; compare with the node's peers."
    ),
    limits={"busy_util_pct": 10},
    source=(
        "nvidia-smi/sysfs link state; idle downtraining of speed is normal (NVIDIA P-states); "
        "width and the busy threshold: dolmen's judgement; KB pcie_gen per model (datasheets)"
    ),
)
def pcie_link(ctx: Context) -> list[Outcome]:
    """Reads each GPU's link (sysfs current/max of the GPU and its upstream port, else
    nvidia-smi), its utilization and P-state, and the KB's PCIe generation for the model."""
    busy_pct = int(ctx.limit("busy_util_pct"))
    pci, _ = _pci(ctx)
    devices = pci.by_bdf() if pci else {}
    if not ctx.gpu.gpus:
        from dolmen.checks.gpu.pcie_bus import bus_links  # only without a driver inventory

        if on_bus := bus_links(devices):
            return on_bus  # lspci -vvv alone, a tree whose nvidia-smi failed: the bus's word

    def body(gpu: Gpu) -> Outcome:
        guest = gpu.virtualization_mode in GUEST_MODES
        dev = devices.get(gpu.pci_address or "")
        # Inside a VM the upstream port is the hypervisor's emulated one: its link is fiction.
        parent = devices.get(dev.parent) if dev and dev.parent and not guest else None
        cur, top, slot = _link(dev), _link(dev, "max"), _link(parent, "max")
        cur_gen = cur[0] if cur[0] else gpu.pcie.gen_current
        cur_w = cur[1] if cur[1] else gpu.pcie.width_current
        max_gen = lowest(top[0], slot[0], gpu.pcie.gen_max)
        max_w = lowest(top[1], slot[1], gpu.pcie.width_max)
        model = ctx.kb.gpus.match(gpu.name) if gpu.name else None
        busy, load = _load(gpu, busy_pct)
        ev: dict[str, Any] = {
            "gen": cur_gen,
            "gen_max": max_gen,
            "width": cur_w,
            "width_max": max_w,
            "source": "sysfs" if cur[0] or cur[1] else "nvidia-smi",
            "slot": parent.bdf if parent else None,
            "load": load,
            "kb_pcie_gen": model.pcie_gen if model else None,
            "virtualization": gpu.virtualization_mode,
        }
        if cur_gen is None and cur_w is None:
            return unread(gpu, ("pcie.gen_current", "pcie.width_current"), "PCIe link state")
        if cur_w is not None and max_w is not None and cur_w < max_w:
            text = f"link width x{cur_w} of x{max_w}: lanes are missing"
            if guest:
                return warned(
                    gpu.subject,
                    f"{text} (seen from a VM: the host's slot may be narrower; ask the provider)",
                    **ev,
                )
            if slot[1] is None and not is_datacenter(gpu):
                # Desktop boards wire a second x16 slot as x8 (or x1 through the chipset) and
                # nvidia-smi's "max" is the GPU's own: the real dual RTX 2070/2080 captures
                # read x8 of x16. Without the slot's width from sysfs, that is no fault.
                return warned(
                    gpu.subject,
                    f"{text}, or the slot is narrower (no slot width in sysfs to tell)",
                    **ev,
                )
            return failed(gpu.subject, text, **ev)
        if cur_gen is not None and max_gen is not None and cur_gen < max_gen:
            text = f"link at Gen{cur_gen} of Gen{max_gen}"
            if busy is None:
                return unknown(gpu.subject, f"{text}, and the GPU's load could not be read", **ev)
            if busy:
                return failed(gpu.subject, f"{text} under load ({load})", **ev)
            return passed(gpu.subject, f"{text}: downtrained at idle ({load}): normal", **ev)
        kb_gen = model.pcie_gen if model else None
        if kb_gen and max_gen and max_gen < kb_gen:
            return warned(
                gpu.subject,
                f"the platform limits the link to Gen{max_gen}; "
                f"{model.name if model else 'the model'} supports Gen{kb_gen}",
                remedy="Check the BIOS PCIe speed setting and the slot's generation.",
                **ev,
            )
        return passed(gpu.subject, f"Gen{cur_gen} x{cur_w}, the maximum", **ev)

    return per_gpu(ctx, body)


def lowest(*values: int | None) -> int | None:
    """The lowest of the known values (0 and None unknown), or None."""
    known = [v for v in values if v]
    return min(known) if known else None


def _link(dev: PciDevice | None, which: str = "current") -> tuple[int | None, int | None]:
    link = None if dev is None else dev.current_link if which == "current" else dev.max_link
    return (link.generation, link.width) if link else (None, None)


def _load(gpu: Gpu, busy_pct: int) -> tuple[bool | None, str]:
    """Whether the GPU is busy (utilization at or above the limit, or in P0), and how."""
    util, state = gpu.utilization.gpu, gpu.performance_state
    if util is not None and util >= busy_pct:
        return True, f"{util}% busy"
    if state == "P0":
        return True, "P0"
    if state is not None:
        return False, state
    if util is not None:
        return False, f"{util}% busy"
    return None, "unreadable"


@check(
    "gpu.pcie.aer",
    title="No uncorrectable PCIe errors on the GPU, few corrected ones and replays",
    level=Level.QUICK,
    needs=("gpu", "pci", "os"),
    when=("nvidia_gpu",),
    remedy=(
        "Reseat the GPU or riser, check the slot with lspci -vvv -s <bdf> (AER status), "
        "and run dcgmi diag -r 2; service the GPU or the baseboard if errors continue."
    ),
    limits={"max_correctable": 100, "max_replays_per_minute": 8},
    source=(
        "sysfs aer_dev_{fatal,nonfatal,correctable}; DCGM DCGM_LIMIT_MAX_PCIREPLAY_RATE 8 per "
        "minute (averaged here since boot); correctable limit: dolmen's judgement"
    ),
)
def pcie_aer(ctx: Context) -> list[Outcome]:
    """Reads the GPU function's AER counters from sysfs and the replay counter with the uptime."""
    max_cor = int(ctx.limit("max_correctable"))
    max_rate = float(ctx.limit("max_replays_per_minute"))
    pci, why = _pci(ctx)
    devices = pci.by_bdf() if pci else {}
    try:
        uptime = ctx.os.uptime_s
    except FactError:
        uptime = None

    def body(gpu: Gpu) -> Outcome:
        if pci is None:
            return unknown(gpu.subject, f"PCI facts could not be read: {why}")
        bdf = gpu.pci_address or ""
        dev = devices.get(bdf)
        if dev is None:
            listing = pci.unread.get("devices", "")
            if listing.startswith(NOT_IN_BUNDLE):  # no PCI tree in this bundle at all
                return unknown(gpu.subject, f"the AER counters of {bdf}: {listing}")
            return unknown(gpu.subject, f"the GPU's PCI function {bdf} is not in sysfs")
        replay = gpu.pcie.replay_counter
        rate = replay / (uptime / 60) if replay is not None and uptime else None
        ev: dict[str, Any] = {"replays": replay, "replays_per_minute": rate, "uptime_s": uptime}
        aer = dev.aer
        if aer is None:
            reason = pci.unread.get(f"{bdf}.aer", "missing")
            if rate is not None and rate > max_rate:
                return warned(
                    gpu.subject, f"{rate:.1f} PCIe replays per minute (AER: {reason})", **ev
                )
            if reason.startswith("not supported"):
                return skipped(gpu.subject, f"AER counters: {reason}", **ev)
            return unknown(gpu.subject, f"AER counters could not be read: {reason}", **ev)
        ev |= {
            "fatal": aer.total_fatal,
            "nonfatal": aer.total_nonfatal,
            "correctable": aer.total_correctable,
            "counters": {
                k: v
                for group in (aer.fatal, aer.nonfatal, aer.correctable)
                for k, v in group.items()
                if v
            },
        }
        uncorrectable = (aer.total_fatal or 0) + (aer.total_nonfatal or 0)
        if uncorrectable:
            return failed(
                gpu.subject, f"{uncorrectable} uncorrectable PCIe (AER) errors since boot", **ev
            )
        if aer.total_fatal is None and aer.total_nonfatal is None:
            reason = pci.unread.get(f"{bdf}.aer.fatal", "unreadable")
            return unknown(
                gpu.subject, f"uncorrectable AER counters could not be read: {reason}", **ev
            )
        if aer.total_correctable is not None and aer.total_correctable > max_cor:
            return warned(
                gpu.subject, f"{aer.total_correctable} corrected PCIe (AER) errors since boot", **ev
            )
        if rate is not None and rate > max_rate:
            return warned(gpu.subject, f"{rate:.1f} PCIe replays per minute since boot", **ev)
        # A counter file that holds junk (not one that is absent) is no zero.
        for kind in ("fatal", "nonfatal", "correctable"):
            reason = pci.unread.get(f"{bdf}.aer.{kind}", "")
            if reason.startswith("malformed"):
                return unknown(gpu.subject, f"AER {kind} counters: {reason}", **ev)
        if replay is None and not is_skippable(gpu.unread.get("pcie.replay_counter", ABSENT)):
            return unread(gpu, "pcie.replay_counter", "PCIe replay counter")
        return passed(gpu.subject, "no uncorrectable PCIe errors", **ev)

    return per_gpu(ctx, body)

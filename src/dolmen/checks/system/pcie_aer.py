"""PCIe Advanced Error Reporting on non-GPU devices: the sysfs counters and the kernel log.

An uncorrectable error (fatal or non-fatal) means a transaction was lost: the
device or its link is faulty, whatever it is (a NIC, an NVMe drive, an NVSwitch, a
bridge). Correctable errors (bad TLPs and DLLPs, replays) are retried by the link
and only a high rate matters: DCGM warns above 8 replays a minute (the driver
team's ceiling). The counters run since boot, so that rate is judged as
``system.since_boot`` explains; the kernel log's lines carry times, so there it is
counted per minute. Each AER line's severity is ``checks.log_severity``'s, as ``dolmen
logs scan`` reads it (kb/data/xids.toml: an uncorrected error is critical, a corrected one
informational); the lines a severity leaves informational are the ones counted.

GPUs (and the other functions of a GPU's slot) are ``gpu.*``'s. A bundle without the
PCI tree holds no counter: a clean log alone is ``unknown``, never a pass (issue 8).
"""

from __future__ import annotations

from collections import Counter, defaultdict
from typing import Any

from dolmen.checks.context import Context
from dolmen.checks.interconnect.nic import hcas_off_bus
from dolmen.checks.model import Level, Outcome, Status, check, failed, passed, unknown, warned
from dolmen.checks.system.log_window import worst
from dolmen.checks.system.pcie_links import slot
from dolmen.checks.system.since_boot import allowance, describe_uptime, uptime_s
from dolmen.facts import FactError
from dolmen.facts.kernel_log import KernelEvent
from dolmen.facts.pci import PciDevice, is_gpu
from dolmen.facts.reading import unrecorded
from dolmen.values.busid import pci_subject

MINUTE_S = 60.0


@check(
    "system.pcie.aer",
    title="No uncorrectable PCIe errors, and few correctable ones, on non-GPU devices",
    level=Level.QUICK,
    needs=("pci", "kernel_log", "os", "infiniband", "network"),
    remedy=(
        "Find the device (lspci -s <bdf>) and its link (lspci -vvv: LnkSta, the AER status "
        "registers); reseat it or its riser/cable, update its firmware, and replace it if "
        "uncorrectable errors come back. The BMC's event log (ipmitool sel list) often has the "
        "same events."
    ),
    limits={"correctable_per_minute": 8},
    source="DCGM_LIMIT_MAX_PCIREPLAY_RATE (8 replays per minute); PCIe AER severities",
)
def aer(ctx: Context) -> list[Outcome]:
    """Reads aer_dev_{fatal,nonfatal,correctable} per device and AER lines of the kernel log."""
    devices = ctx.pci.by_bdf()
    gpu_slots = {slot(d.bdf) for d in devices.values() if is_gpu(d)}
    limit = float(ctx.limit("correctable_per_minute"))
    up = uptime_s(ctx)
    out: list[Outcome] = []
    clean = 0
    for dev in sorted(devices.values(), key=lambda d: d.bdf):
        if slot(dev.bdf) in gpu_slots or dev.aer is None:
            continue
        verdict = _counters(ctx, dev, limit, up)
        if verdict is None:
            clean += 1
        else:
            out.append(verdict)
    out.extend(_log(ctx, devices, gpu_slots, limit))
    if clean:
        out.append(passed("host", f"{clean} non-GPU device(s) without AER errors since boot"))
    why = ctx.pci.unread.get("devices")
    if not out and unrecorded(why):  # the log alone proves nothing of the counters
        return [unknown("host", f"no AER line in the log, but the AER counters are {why}")]
    if not out and (off_bus := hcas_off_bus(ctx, devices)):  # a pass would stand on absence
        names = ", ".join(n for n, _ in off_bus)
        said = f"the AER counters of the Mellanox HCAs {off_bus[0][1]} shows ({names})"
        return [unknown("host", f"{said}: their PCI functions were not read", hcas=names)]
    return out or [passed("host", "no AER counters on non-GPU devices, no AER line in the log")]


def _counters(ctx: Context, dev: PciDevice, limit: float, up: float | None) -> Outcome | None:
    a = dev.aer
    assert a is not None
    subject = pci_subject(dev.bdf)
    ev: dict[str, Any] = {
        "vendor": dev.vendor_id,
        "class": dev.class_id,
        "driver": dev.driver,
        "fatal": a.total_fatal,
        "nonfatal": a.total_nonfatal,
        "correctable": a.total_correctable,
    }
    bad = (a.total_fatal or 0) + (a.total_nonfatal or 0)
    if bad:
        kinds = ", ".join(
            [f"{k} {v} (fatal)" for k, v in a.fatal.items() if v]
            + [f"{k} {v}" for k, v in a.nonfatal.items() if v]
        )
        return failed(subject, f"{bad} uncorrectable AER error(s) since boot ({kinds})", **ev)
    missing = [
        k for k in ("fatal", "nonfatal", "correctable") if f"{dev.bdf}.aer.{k}" in ctx.pci.unread
    ]
    if missing:
        why = ctx.pci.unread[f"{dev.bdf}.aer.{missing[0]}"]
        return unknown(subject, f"AER {'/'.join(missing)} counters unreadable: {why}", **ev)
    count = a.total_correctable or 0
    proven = allowance(limit, MINUTE_S, up)
    ev |= {"uptime": describe_uptime(up), "proven_at": proven}
    if (proven is not None and count >= proven) or (proven is None and count > limit):
        kinds = ", ".join(f"{k} {v}" for k, v in a.correctable.items() if v)
        base = f"over {describe_uptime(up)}" if proven is not None else "(uptime unknown)"
        return warned(subject, f"{count} correctable AER error(s) {base}: {kinds}", **ev)
    return None


def _log(
    ctx: Context, devices: dict[str, PciDevice], gpu_slots: set[str], limit: float
) -> list[Outcome]:
    try:
        events = ctx.kernel_log.events
        why = ctx.kernel_log.unread.get("events", "not read")
    except FactError as e:
        events, why = None, e.message
    if events is None:
        if unrecorded(why):
            return [unknown("host", f"AER lines not checked: {why}")]
        return [unknown("host", f"kernel log unreadable, AER lines not checked: {why}")]
    judged: dict[str, list[KernelEvent]] = defaultdict(list)
    per_minute: dict[str, Counter[object]] = defaultdict(Counter)
    for ev in events:
        if ev.kind not in ("aer", "aer_corrected"):
            continue
        bdf = ev.bus_id or "unknown"
        if slot(bdf) in gpu_slots:
            continue
        if worst(ctx, (ev,)) is Status.PASS:
            per_minute[bdf][_minute(ev)] += 1  # informational alone: only a rate matters
        else:
            judged[bdf].append(ev)
    out: list[Outcome] = []
    for bdf, evs in sorted(judged.items()):
        dev = devices.get(bdf)
        lines = [e.raw.strip() for e in evs[-3:]]
        who = f" ({dev.driver})" if dev is not None and dev.driver else ""
        status = worst(ctx, evs)
        kind = "uncorrectable" if any(e.kind == "aer" for e in evs) else "correctable"
        msg = f"{len(evs)} {kind} AER line(s) in the kernel log{who}: {evs[-1].detail}"
        out.append(Outcome(status, pci_subject(bdf), msg, None, {"lines": lines}))
    for bdf, minutes in sorted(per_minute.items()):
        busiest = max(minutes.values())
        if busiest > limit:
            msg = f"{busiest} correctable AER lines within one minute in the kernel log"
            out.append(warned(pci_subject(bdf), msg, lines_total=sum(minutes.values())))
    return out


def _minute(ev: KernelEvent) -> object:
    """The minute of an event, for per-minute counts (one bucket when the line has no time)."""
    if ev.time is not None:
        return ev.time.replace(second=0, microsecond=0)
    if ev.boot_seconds is not None:
        return int(ev.boot_seconds // MINUTE_S)
    return None

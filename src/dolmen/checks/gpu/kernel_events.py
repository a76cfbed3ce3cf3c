"""Kernel-log events around the GPUs other than Xids: NVSwitch SXids, GPUs off the bus,
nvidia-peermem (GPUDirect RDMA) errors."""

from __future__ import annotations

from collections import defaultdict
from typing import Any

from dolmen.checks.context import Context
from dolmen.checks.gpu.actions import action_remedy
from dolmen.checks.gpu.gpus import gpu_by_bus, subject_for_bus, target
from dolmen.checks.gpu.xid import RANK, SEVERITY_RANK, STATUS
from dolmen.checks.gpu.xid_traps import short
from dolmen.checks.model import (
    Level,
    Outcome,
    Status,
    check,
    failed,
    passed,
    skipped,
    warned,
)
from dolmen.checks.recent import grouped, log_unread, make_window
from dolmen.checks.system.log_window import split_events, when, worst
from dolmen.facts.gpu import seen_with_log
from dolmen.facts.kernel_log import KernelEvent
from dolmen.values.busid import pci_subject


@check(
    "gpu.sxid",
    title="No fatal NVSwitch SXid in the kernel log's recent past",
    level=Level.QUICK,
    needs=("gpu", "kernel_log", "os"),
    when=("nvidia_fabric",),
    remedy=(
        "Fatal SXids need the NVSwitch tray reset: drain the node (<drain>), restart "
        "nvidia-fabricmanager "
        "(systemctl restart nvidia-fabricmanager) or reboot; service the baseboard if they return."
    ),
    limits={"window_hours": 24},
    source="NVIDIA Fabric Manager user guide, NVSwitch SXid errors (kb/data/xids.toml [[sxid]])",
)
def sxid(ctx: Context) -> list[Outcome]:
    """Reads the kernel log's SXid events (nvidia-nvswitch driver and fabric manager lines)."""
    log = ctx.kernel_log
    if (unread := log_unread(log, fabric_manager=True)) is not None:
        return [unread]
    window = make_window(ctx, log)
    by_switch = grouped(log, "sxid")
    if not by_switch:
        return [passed("host", "no NVSwitch SXid in the kernel log", log=log.source)]
    return [
        _switch(ctx, bdf, evs, window.split(evs), window.evidence())
        for bdf, evs in by_switch.items()
    ]


def _switch(
    ctx: Context,
    bdf: str | None,
    evs: list[KernelEvent],
    parts: tuple[list[KernelEvent], list[KernelEvent]],
    window_ev: dict[str, Any],
) -> Outcome:
    subject = pci_subject(bdf) if bdf else "host"
    recent, older = parts
    ev: dict[str, Any] = {**window_ev, "older_sxids": sorted({e.xid for e in older if e.xid})}
    if not recent:
        return passed(subject, f"{len(older)} SXid lines, all older than the window", **ev)
    kb = ctx.kb.xids
    by_code: dict[int, list[KernelEvent]] = defaultdict(list)
    for e in recent:
        by_code[e.xid or 0].append(e)
    rows: list[dict[str, Any]] = []
    worst = Status.PASS
    action = "none"
    for code, group in sorted(by_code.items()):
        assessed = [kb.assess("sxid", code, fatal=e.fatal) for e in group]
        a = max(assessed, key=lambda x: SEVERITY_RANK[x.severity])
        status = STATUS[a.severity]
        if RANK[status] > RANK[worst]:
            worst, action = status, a.action
        rows.append(
            {
                "sxid": code,
                "count": len(group),
                "severity": a.severity,
                "meaning": a.meaning,
                "action": a.action,
                "line": group[-1].raw[:240],
            }
        )
    ev["sxids"] = rows
    summary = "; ".join(f"SXid {r['sxid']} x{r['count']} ({short(r['meaning'])})" for r in rows[:4])
    if worst is Status.PASS:
        return passed(subject, f"non-fatal only: {summary}", **ev)
    remedy = action_remedy(action) if action not in ("none", "reboot") else None
    return Outcome(worst, subject, summary, remedy, ev)


@check(
    "gpu.fell_off_bus",
    title="No GPU fell off the PCI bus (kernel log, with or without an Xid 79)",
    level=Level.QUICK,
    needs=("gpu", "kernel_log", "os"),
    when=("nvidia_gpu",),
    remedy=action_remedy("drain_and_service"),
    limits={"window_hours": 24},
    source="NVRM 'has fallen off the bus' (Xid 79, the probe-time message); kb fell_off_bus",
)
def fell_off_bus(ctx: Context) -> list[Outcome]:
    """Reads the kernel log's fell_off_bus events and whether the driver lists that GPU now."""
    log = ctx.kernel_log
    if (unread := log_unread(log)) is not None:
        return [unread]
    gpus = ctx.gpu.gpus
    window = make_window(ctx, log)
    by_bus = grouped(log, "fell_off_bus")
    if not by_bus and not gpus and not log.driver_gpus:  # no driver GPU to vouch for
        return [skipped("host", "no GPU fell off the bus, and the driver lists no GPU")]
    if not by_bus:
        return [passed("host", "no GPU fell off the bus in this kernel log", log=log.source)]
    out = []
    for bdf, evs in by_bus.items():
        subject = subject_for_bus(bdf, gpus)
        gpu = gpu_by_bus(bdf, gpus)
        recent, _ = window.split(evs)
        evidence: dict[str, Any] = {
            **window.evidence(),
            "count": len(evs),
            "line": evs[-1].raw[:240],
            "listed_now": gpu is not None,
            "lost_now": gpu.lost if gpu else None,
        }
        if recent or gpu is None or gpu.lost:
            out.append(
                failed(
                    subject,
                    "the GPU fell off the PCI bus"
                    + ("" if gpu is None else " (the driver lists it now)" if not gpu.lost else ""),
                    **evidence,
                )
            )
        else:
            out.append(
                warned(
                    subject,
                    f"the GPU fell off the bus earlier in this boot (before the {window.hours:g} h "
                    "window) and answers now",
                    remedy=f"Run dcgmi diag -r 2; service the GPU ({target(gpu)}) if it recurs.",
                    **evidence,
                )
            )
    return out


@check(
    "gpu.peermem",
    title="No nvidia-peermem (GPUDirect RDMA) error in the kernel log's recent past",
    level=Level.QUICK,
    needs=("kernel_log", "os", "gpu"),
    remedy=(
        "Check that nvidia_peermem matches the driver and the OFED stack (modinfo "
        "nvidia_peermem; ofed_info -s); reload it after OFED upgrades (sudo rmmod "
        "nvidia_peermem; sudo modprobe nvidia_peermem), and restart the jobs that failed."
    ),
    limits={"window_hours": 24},
    source=(
        "leptonai/gpud peermem kernel-log matcher (dmesg.peermem.log.0, kmsg.2.peermem.log); "
        "kb/data/xids.toml [[event]] peermem"
    ),
)
def peermem(ctx: Context) -> list[Outcome]:
    """Reads the kernel log's nvidia-peermem error lines, the uptime (the window) and whether
    a GPU is known; no GPU predicate: the module's own lines show the GPU stack, whatever
    else the bundle holds."""
    split = split_events(ctx, ("peermem",))
    if isinstance(split, Outcome):
        return [split]
    if not split.recent and not split.older and not seen_with_log(ctx.gpu, ctx.kernel_log)[0]:
        return [skipped("host", "no nvidia-peermem line, and no NVIDIA GPU seen")]
    if not split.recent:
        msg = f"no nvidia-peermem error in the window ({len(split.older)} older)"
        return [passed("log:nvidia-peermem", msg, **split.evidence())]
    last = split.recent[-1]
    summary = (
        f"{len(split.recent)} nvidia-peermem error(s), last {when(last)}: "
        f"{last.message.strip()[:120]}"
    )
    return [
        Outcome(worst(ctx, split.recent), "log:nvidia-peermem", summary, None, split.evidence())
    ]

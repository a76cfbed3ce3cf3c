"""InfiniBand port error counters (the PMA ``counters/`` of each port).

Limits are rdma-core's ``infiniband-diags/etc/error_thresholds`` (the defaults of
``ibqueryerrors``), which judge counters since they were last cleared. Here the
counters run since the driver loaded, so a limit is applied per day of uptime: a
counter over ``limit x days up`` has certainly averaged more than ``limit`` a day
(``system.since_boot``). With PAM4 signalling (HDR, NDR) raw symbol errors are
expected and FEC corrects them; what matters is a rate, which is why a lifetime
count alone does not raise an alarm (NVIDIA NVSentinel's NIC monitor argues the same).
With the uptime unknown there is no rate: a counter within its limit is within it per
any day, one above it is unknown (never a per-day warning).

``link_downed`` is judged by ``interconnect.ib.flaps``; ``port_xmit_wait`` counts
congestion, not errors, and is left out.
"""

from __future__ import annotations

from typing import Any

from dolmen.checks.context import Context
from dolmen.checks.interconnect.portinfo import uptime_reason
from dolmen.checks.model import Level, Outcome, check, passed, skipped, unknown, warned
from dolmen.checks.system.since_boot import allowance, describe_uptime, uptime_s
from dolmen.facts.infiniband import IbPort
from dolmen.facts.infiniband.sysfs import COUNTERS

DAY_S = 86400.0
# rdma-core infiniband-diags/etc/error_thresholds, by sysfs counter name.
ERROR_THRESHOLDS: dict[str, int] = {
    "symbol_error": 10,
    "link_error_recovery": 10,
    "port_rcv_errors": 10,
    "port_rcv_remote_physical_errors": 100,
    "port_rcv_switch_relay_errors": 100,
    "port_xmit_discards": 100,
    "port_xmit_constraint_errors": 100,
    "port_rcv_constraint_errors": 100,
    "local_link_integrity_errors": 10,
    "excessive_buffer_overrun_errors": 10,
    "VL15_dropped": 100,
}


@check(
    "interconnect.ib.errors",
    title="InfiniBand error counters stay below their limits per day of uptime",
    level=Level.QUICK,
    needs=("infiniband", "os"),
    when=("infiniband",),
    remedy=(
        "Physical-layer errors (symbol_error, link_error_recovery, local_link_integrity_errors, "
        "port_rcv_errors) point at the cable or transceiver: check it with mlxlink -d <device> "
        "-p <port> (BER, FEC), reseat or replace it. Clear the counters (perfquery -x -R) and "
        "read them again to see whether they still grow."
    ),
    limits={"per_day": ERROR_THRESHOLDS},
    source=(
        "rdma-core infiniband-diags error_thresholds (ibqueryerrors defaults), applied per day "
        "of uptime"
    ),
)
def errors(ctx: Context) -> list[Outcome]:
    """Reads each port's PMA counters and the uptime."""
    limits = {**ERROR_THRESHOLDS, **dict(ctx.limit("per_day"))}
    unread = sorted(set(limits) - COUNTERS)
    if unread:  # a site limit on a counter dolmen does not read is never silently dropped
        return [
            unknown(
                "host",
                f"per_day limits on {', '.join(unread)}: not read (dolmen reads only the error "
                f"counters {', '.join(sorted(COUNTERS))})",
                unjudged=unread,
            )
        ]
    up = uptime_s(ctx)
    if not ctx.infiniband.ports:  # a vanished device alone: interconnect.ib.port_state's
        return [skipped("host", "no port read: no counters to judge")]
    return [_port(ctx, p, limits, up) for p in ctx.infiniband.ports]


def _port(ctx: Context, p: IbPort, limits: dict[str, int], up: float | None) -> Outcome:
    why = ctx.infiniband.unread.get(f"{p.device}/{p.port}.counters")
    if not p.counters:
        if why and why.startswith("not supported"):
            return skipped(p.subject, f"no error counters: {why}")
        if p.source != "sysfs":
            return unknown(
                p.subject, f"error counters not read: the port is known from {p.source} only"
            )
        return unknown(p.subject, f"error counters unreadable: {why or 'none in sysfs'}")
    days = allowance(1, DAY_S, up)
    scale = days if days is not None else 1.0
    over: dict[str, int] = {}
    for name, limit in limits.items():
        count = p.counters.get(name)
        if count is not None and count > limit * scale:
            over[name] = count
    ev: dict[str, Any] = {
        "counters": {n: p.counters[n] for n in limits if n in p.counters},
        "uptime": describe_uptime(up),
        "days_counted": days,
    }
    if why:
        ev["unread"] = why
    if over and days is None:
        listed = ", ".join(f"{n} {c}" for n, c in over.items())
        return unknown(
            p.subject,
            f"{listed} above the per-day limits, uptime unknown ({uptime_reason(ctx)}): "
            "no rate to judge",
            over=over,
            **ev,
        )
    if over:
        listed = ", ".join(f"{n} {c} (> {limits[n]}/day)" for n, c in over.items())
        return warned(p.subject, f"{listed} over {scale:g} day(s) up", over=over, **ev)
    if why and not why.startswith("not supported"):
        # A counter that holds junk may be the one over its limit.
        return unknown(p.subject, f"error counters partly unreadable: {why}", **ev)
    nonzero = {n: c for n, c in ev["counters"].items() if c}
    detail = ", ".join(f"{n} {c}" for n, c in nonzero.items()) or "all zero"
    return passed(p.subject, f"error counters within limits ({detail})", **ev)

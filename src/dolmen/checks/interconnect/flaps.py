"""Link flaps: the ``link_downed`` counter of each port, and link-loss lines in the kernel log.

Two published rules, each on its own signal:

- Azure healthagent: ``link_downed`` growing by 3 or more within 3 hours is an error,
  and with its default of one strike the node stays degraded. One reading proves that
  when the count is at least 3 per 3-hour window of uptime (``system.since_boot``);
  a lower count may be old history (gpud's own H100 fixture carries a saturated 255
  on a port it reports healthy), so it is shown, not judged.
- aznhc: 5 or more "lost carrier" lines for an interface within 24 hours fail the node.
  A loss counts when the link was up before it: systemd-networkd's "lost carrier" says
  so itself; mlx5's "Link down" counts only after a "Link up" of the same interface,
  because the driver prints "Link down" once when it opens the interface at boot.
  The log is judged per interface whether or not any port was read: six ``ib6: lost
  carrier`` lines in a pasted syslog are evidence of a flapping link on their own
  (a "Gained carrier" line is a recovery, never a loss). The interfaces are the HCA's:
  IPoIB names (``ib*``), mlx5_core's lines, and netdevs the network facts place on an
  RDMA port's PCI function; another NIC's carrier (eth0, a container's veth) is not
  this check's.

With the uptime unknown a counter has no rate: a ``link_downed`` at or above the
limit is unknown (it may be years of history), never a warning about three hours.
"""

from __future__ import annotations

from collections import Counter, defaultdict
from typing import Any

from dolmen.checks.context import Context
from dolmen.checks.interconnect.portinfo import uptime_reason
from dolmen.checks.model import Level, Outcome, check, failed, passed, skipped, unknown, warned
from dolmen.checks.recent import log_unread, make_window
from dolmen.checks.system.since_boot import allowance, describe_uptime, uptime_s
from dolmen.facts import FactError
from dolmen.facts.infiniband import why_no_ports
from dolmen.facts.kernel_log import KernelLogFacts

THREE_HOURS_S = 3 * 3600.0


@check(
    "interconnect.ib.flaps",
    title="No InfiniBand/RoCE link flaps: link_downed counters and kernel-log link losses",
    level=Level.QUICK,
    needs=("infiniband", "kernel_log", "os", "network"),
    remedy=(
        "A flapping link needs its cable or transceiver checked: mlxlink -d <device> -p <port> "
        "(link-down reasons, BER), ibstat, and the switch port's log; reseat or replace the "
        "cable, then clear the counters (perfquery -x -R) and watch them."
    ),
    limits={"link_downed_per_3h": 3, "log_flaps_per_window": 5, "window_hours": 24},
    source=(
        "Azure healthagent defaults (link_downed +3 within 3 h, strikes 1); aznhc "
        "check_ib_link_flapping (5 lost-carrier lines in 24 h)"
    ),
)
def flaps(ctx: Context) -> list[Outcome]:
    """Reads each port's ``link_downed``, the uptime, and ``ib_flap`` kernel-log events (per
    interface, with or without a port read)."""
    ib = ctx.infiniband
    out = [_counter(ctx, p.subject, p.counters.get("link_downed")) for p in ib.ports]
    no_ports = why_no_ports(ib)
    log = _log(ctx, quiet=no_ports is not None)
    if no_ports is not None and isinstance(log, str):
        return [skipped("host", f"{no_ports}, and {log}")]
    assert isinstance(log, list)
    return out + log


def _counter(ctx: Context, subject: str, count: int | None) -> Outcome:
    limit = int(ctx.limit("link_downed_per_3h"))
    up = uptime_s(ctx)
    ev: dict[str, Any] = {"link_downed": count, "uptime": describe_uptime(up)}
    if count is None:
        return unknown(subject, "link_downed counter not read", **ev)
    proven = allowance(limit, THREE_HOURS_S, up)
    ev["proven_at"] = proven
    if proven is not None and count >= proven:
        return failed(
            subject,
            f"link_downed {count} in {describe_uptime(up)} up: at least {limit} link losses "
            "within 3 hours",
            **ev,
        )
    if proven is None and count >= limit:
        return unknown(
            subject,
            f"link_downed {count}, uptime unknown: cannot tell when they happened "
            f"({uptime_reason(ctx)})",
            **ev,
        )
    note = " (saturated: clear it with perfquery -x -R to see new losses)" if count >= 255 else ""
    return passed(subject, f"link_downed {count} over {describe_uptime(up)}{note}", **ev)


def _hca_netdevs(ctx: Context) -> set[str]:
    """Interfaces that run on an HCA: IPoIB (ARPHRD 32), or on an RDMA port's PCI function."""
    try:
        interfaces = ctx.network.interfaces
    except FactError:
        return set()
    bdfs = {p.pci_bdf for p in ctx.infiniband.ports if p.pci_bdf}
    return {i.name for i in interfaces if i.link_kind == "infiniband" or i.pci_bdf in bdfs}


def _log(ctx: Context, *, quiet: bool) -> list[Outcome] | str:
    """Findings per interface from the kernel log. ``quiet`` (no port on this host or in
    this bundle): instead of an unknown or a pass with nothing to judge, the words for the
    skip (the log unreadable, or no link event in it)."""
    try:
        log: KernelLogFacts = ctx.kernel_log
    except FactError as e:
        why = f"kernel log unreadable: {e.message}"
        return why if quiet else [unknown("host", why)]
    if (unread := log_unread(log)) is not None:
        return unread.summary if quiet else [unread]
    hours = float(ctx.limit("window_hours"))
    limit = int(ctx.limit("log_flaps_per_window"))
    window = make_window(ctx, log, hours)
    recent: Counter[str] = Counter()
    older: Counter[str] = Counter()
    seen_up: set[str] = set()
    lines: dict[str, list[str]] = defaultdict(list)
    hca_netdevs = _hca_netdevs(ctx)
    for ev in log.events or ():
        if ev.kind != "ib_flap" or not ev.interface:
            continue
        name = ev.interface
        if ev.device != "mlx5_core" and not name.startswith("ib") and name not in hca_netdevs:
            continue  # another NIC's link (eth0, a container's veth): not this check's
        if ev.detail == "up":
            seen_up.add(name)
            continue
        if "carrier" not in ev.message and name not in seen_up:
            continue  # "Link down" as the driver opens the interface: not a loss
        if window.recent(ev):
            recent[name] += 1
            lines[name].append(ev.raw.strip())
        else:
            older[name] += 1
    span: dict[str, Any] = window.evidence()
    out: list[Outcome] = []
    for name, n in sorted(recent.items()):
        info = {"losses": n, "older": older.get(name, 0), "lines": lines[name][-5:], **span}
        if n >= limit:
            msg = f"{n} link losses in the last {hours:g} h (limit {limit})"
            out.append(failed(f"nic:{name}", msg, **info))
        else:
            out.append(warned(f"nic:{name}", f"{n} link loss(es) in the last {hours:g} h", **info))
    if not out and quiet and not older and not seen_up:
        return "no link event in the kernel log"
    if not out:
        msg = f"no link loss in the kernel log's last {hours:g} h"
        out.append(passed("host", msg, older=dict(older), **span))
    return out

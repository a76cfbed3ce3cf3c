"""RDMA rails: as many ports ACTIVE as the site says the node has.

``[validate] expected_ib_ports`` is the number of ports (InfiniBand or RoCE) that must
be ACTIVE with their link up; with ``expected_ib_rate`` set only ports at that rate or
faster count, so the front-end NICs of a node (ConnectX-6 Dx at 100 Gb/s) do not make
up for a missing 400 Gb/s rail. GPUd's infiniband component judges a node the same
way (at least N ports at rate R, else unhealthy). Without the setting, the siblings
rule of ``interconnect.ib.port_state`` and ``interconnect.roce`` stands in, and a
baseline's ports are ``baseline.ib``'s.
"""

from __future__ import annotations

from dolmen.checks.context import Context
from dolmen.checks.interconnect.portinfo import ignored, is_up, rate_text
from dolmen.checks.model import Level, Outcome, check, failed, passed, skipped, warned


@check(
    "interconnect.ib.rails",
    title="As many RDMA ports are ACTIVE as [validate] expected_ib_ports says",
    level=Level.QUICK,
    needs=("infiniband",),
    remedy=(
        "Find the ports that are not counted (ibstat; interconnect.ib.port_state and "
        "interconnect.roce name them), bring them up or replace their cable/transceiver; update "
        "[validate] expected_ib_ports if the node was rebuilt."
    ),
    limits={"ignore_ports": []},
    source="gpud infiniband component (expected port count at the expected rate); GCM manifest",
)
def rails(ctx: Context) -> list[Outcome]:
    """Reads each port's state and rate, ``[validate] expected_ib_ports`` and
    ``expected_ib_rate``."""
    want = ctx.config.get("validate", "expected_ib_ports")
    if want is None:
        return [
            skipped(
                "host",
                "[validate] expected_ib_ports is not set: ports are judged against their "
                "siblings (interconnect.ib.port_state, interconnect.roce)",
            )
        ]
    rate = ctx.config.get("validate", "expected_ib_rate")
    ports = [p for p in ctx.infiniband.ports if not ignored(ctx, p)]
    counted = [p for p in ports if is_up(p) and (rate is None or (p.rate_gbps or 0) >= float(rate))]
    others = {p.subject: f"{p.state or '?'}/{p.phys_state or '?'}, {rate_text(p)}" for p in ports}
    for p in counted:
        del others[p.subject]
    at = f" at {float(rate):g} Gb/s or more" if rate is not None else ""
    ev = {
        "expected": want,
        "expected_rate_gbps": rate,
        "counted": [p.subject for p in counted],
        "not_counted": others,
        "lost_devices": dict(ctx.infiniband.lost_devices),
    }
    n = len(counted)
    if n < want:
        missing = ", ".join(f"{s} ({why})" for s, why in others.items()) or "none listed"
        lost = ", ".join(ctx.infiniband.lost_devices)
        extra = f"; vanished: {lost}" if lost else ""
        msg = f"{n} ACTIVE port(s){at}, {want} expected; not counted: {missing}{extra}"
        return [failed("host", msg, **ev)]
    if n > want:
        msg = f"{n} ACTIVE port(s){at}, more than the {want} expected"
        return [warned("host", msg, remedy="Update [validate] expected_ib_ports.", **ev)]
    return [passed("host", f"{n} ACTIVE port(s){at}, as expected", **ev)]

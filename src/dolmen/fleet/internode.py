"""The inter-node figure a multi-node collective is held to: the RDMA rails' line rate.

Across nodes an all_reduce's bus bandwidth is bounded by what each node can send over its
rails (nccl-tests' PERFORMANCE.md: busbw is comparable with the slowest link the algorithm
crosses). A node's rails are its ACTIVE InfiniBand or RoCE ports of one build (the largest
sibling group, ``checks.interconnect.portinfo.group``: eight ConnectX-7 ports, not the two
front-end ConnectX-6 Dx), each at the rate the node's facts read (ibstat, sysfs), else the
KB's top rate for its HCA family (``kb/data/hcas.toml``); the figure is their sum in GB/s
(Gb/s / 8), the slowest node's figure for the job. A site that knows its fabric says
``[validate] expected_ib_ports`` and ``expected_ib_rate``, which replace the ports read.

The run is judged at its largest size (as ``workload.nccl_allreduce`` judges 1 GiB on one
node): pass at or above ``fraction`` of the figure, fail below it, unknown when the sweep
stopped before the last size or there is no figure, and on the CPU (gloo over TCP: the
machinery, not the fabric) measured only, never a pass.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from dolmen.checks.interconnect.portinfo import group, is_up
from dolmen.facts.infiniband import IbPort
from dolmen.fleet import MIN_FRACTION
from dolmen.frozen import frozen
from dolmen.kb.hcas import HcaTable
from dolmen.report.bench.figures import human_bytes
from dolmen.workloads.collective import FULL_SIZES, Run


@frozen
class Rails:
    """One node's rails: how many, their sum (GB/s; None unknown), and what was read."""

    node: str
    ports: int
    gbps: float | None
    why: str  # how the figure was made, or why there is none


@frozen
class Judgement:
    """The run's verdict at its largest size: status (pass, fail, unknown, skip) and why."""

    status: str
    why: str
    figure_gbps: float | None
    floor_gbps: float | None

    def to_json(self) -> dict[str, Any]:
        """The ``internode`` object of the collective result."""
        return {
            "status": self.status,
            "why": self.why,
            "figure_gbps": self.figure_gbps,
            "floor_gbps": self.floor_gbps,
        }


def port_of(raw: Mapping[str, Any]) -> IbPort | None:
    """An IbPort from a task's ``rails`` message; None for an entry that is not one."""
    try:
        rate = raw.get("rate_gbps")
        return IbPort(
            device=str(raw["device"]),
            port=int(raw["port"]),
            state=_text(raw.get("state")),
            phys_state=_text(raw.get("phys_state")),
            rate_gbps=float(rate) if isinstance(rate, int | float) else None,
            rate_text=None,
            link_layer=_text(raw.get("link_layer")),
            hca_type=_text(raw.get("hca_type")),
        )
    except (KeyError, TypeError, ValueError):
        return None


def node_rails(node: str, ports: Sequence[IbPort], hcas: HcaTable, unread: str = "") -> Rails:
    """The rails of one node from the ports its facts show (module docstring)."""
    up = [p for p in ports if is_up(p)]
    if not up:
        seen = f"{len(ports)} port(s), none ACTIVE" if ports else (unread or "no RDMA port")
        return Rails(node, 0, None, f"{node}: {seen}")
    groups: dict[Any, list[IbPort]] = {}
    for p in up:
        groups.setdefault(group(p), []).append(p)
    best = max(groups.values(), key=lambda g: (len(g), sum(p.rate_gbps or 0 for p in g)))
    rates: list[float] = []
    for p in best:
        family = hcas.get(p.hca_type)
        rate = p.rate_gbps if p.rate_gbps else (family.max_gbps if family else None)
        if rate is None:
            return Rails(node, len(best), None, f"{node}: no rate read for {p.subject}")
        rates.append(rate)
    kinds = sorted({f"{r:g}" for r in rates})
    return Rails(
        node,
        len(best),
        sum(rates) / 8,
        f"{node}: {len(best)} x {'/'.join(kinds)} Gb/s ({best[0].hca_type or 'HCA'})",
    )


def figure(
    rails: Sequence[Rails], site_ports: int | None, site_rate: float | None
) -> tuple[float | None, str]:
    """The job's figure in GB/s and how it was made: the site's ports x rate when both are
    set, else the slowest node's rails; None (with why) when a node's rails are unknown."""
    if site_ports and site_rate:
        return site_ports * site_rate / 8, (
            f"[validate] expected_ib_ports x expected_ib_rate = {site_ports} x {site_rate:g} Gb/s"
        )
    if not rails:
        return None, "no node reported its RDMA ports"
    unknown = [r for r in rails if r.gbps is None]
    if unknown:
        return None, "; ".join(r.why for r in unknown)
    slowest = min(rails, key=lambda r: r.gbps or 0.0)
    return slowest.gbps, slowest.why + (" (the slowest node)" if len(rails) > 1 else "")


def judge(
    run: Run | None,
    device: str,
    figure_gbps: float | None,
    how: str,
    fraction: float = MIN_FRACTION,
    stopped: str | None = None,
) -> Judgement:
    """The all_reduce run against ``fraction`` of the figure (module docstring)."""
    top = run.largest if run is not None else None
    floor = figure_gbps * fraction if figure_gbps else None
    if run is None or top is None:
        return Judgement("unknown", "no all_reduce size was measured", figure_gbps, floor)
    size = human_bytes(top.bytes)
    said = f"busbw {top.busbw_gbps:.3g} GB/s at {size} on {run.world} {run.backend} ranks"
    if device == "cpu":
        why = f"{said}: measured on CPU (gloo over TCP), no inter-node threshold"
        return Judgement("skip", why, None, None)
    if floor is None:
        return Judgement("unknown", f"{said}: no inter-node figure ({how})", None, None)
    if top.bytes < FULL_SIZES[-1]:
        why = f"{said}: {stopped or 'the sweep ended early'}; the figure is for 1 GiB"
        return Judgement("unknown", why, figure_gbps, floor)
    versus = f"{fraction:g} of {figure_gbps:,.1f} GB/s ({how})"
    if top.busbw_gbps < floor:
        return Judgement("fail", f"{said}, below {floor:,.1f} GB/s: {versus}", figure_gbps, floor)
    return Judgement("pass", f"{said}, at least {floor:,.1f} GB/s: {versus}", figure_gbps, floor)


def _text(value: Any) -> str | None:
    return str(value) if value is not None else None

"""Ports from ``sys/class/infiniband``, and where ibstat disagrees with them.

Per device ``{fw_ver,board_id,hca_type,node_guid}`` and per port
``ports/<n>/{state,phys_state,rate,link_layer,lid}`` and, of ``ports/<n>/counters/*`` (the
PMA counters), the ones a check judges: ``COUNTERS``, the error counters of rdma-core's
``error_thresholds`` (``interconnect.ib.errors``) and ``link_downed``
(``interconnect.ib.flaps``). Not the data and packet counters, nor ``hw_counters/*`` (the
driver's 26 or so: out_of_buffer, rnr_nak_retry_err...): no check judges them, and they
were two thirds of the files of every quick run on an 8-rail node. ``dolmen snapshot``
still records both folders whole (``snapshot.EXTRA_FOLDERS``).
"""

from __future__ import annotations

from collections.abc import Mapping

from dolmen.facts.infiniband.model import IbPort
from dolmen.facts.infiniband.parse import (
    normalise_guid,
    parse_counters,
    parse_phys_state,
    parse_rate,
    parse_state,
    parse_width,
)
from dolmen.facts.reading import Read, malformed, parse_hex, read_value
from dolmen.host import Host
from dolmen.values.busid import sysfs_name

CLASS = "sys/class/infiniband"
# rdma-core infiniband-diags/etc/error_thresholds' counters, and link_downed.
COUNTERS = frozenset(
    (
        "symbol_error",
        "link_error_recovery",
        "link_downed",
        "port_rcv_errors",
        "port_rcv_remote_physical_errors",
        "port_rcv_switch_relay_errors",
        "port_xmit_discards",
        "port_xmit_constraint_errors",
        "port_rcv_constraint_errors",
        "local_link_integrity_errors",
        "excessive_buffer_overrun_errors",
        "VL15_dropped",
    )
)


def read_sysfs(host: Host, unread: dict[str, str], *, counters: bool = True) -> list[IbPort]:
    """Every port under ``sys/class/infiniband``; ``counters=False`` leaves out the error
    counters (the topology needs the ports, not their health: 12 reads a port fewer)."""
    ports: list[IbPort] = []
    for dev in host.listdir(CLASS):
        base = f"{CLASS}/{dev}"
        ident = {
            name: read_value(host, f"{base}/{name}")
            for name in ("fw_ver", "hca_type", "board_id", "node_guid")
        }
        if ident["fw_ver"].text is None:
            unread[f"{dev}.fw_version"] = ident["fw_ver"].reason
        guid = ident["node_guid"].text
        if guid and normalise_guid(guid) is None:
            unread[f"{dev}.node_guid"] = malformed(guid)  # GCM's maps hold "node_guid" here
        link = host.readlink(base) or host.readlink(f"{base}/device") or ""
        bdfs = [p for p in link.split("/") if sysfs_name(p)]
        if not bdfs:
            unread[f"{dev}.pci_bdf"] = "missing (no device link in sysfs)"
        for pname in host.listdir(f"{base}/ports"):
            if not pname.isdigit():
                continue
            ports.append(
                _sysfs_port(
                    host, dev, int(pname), ident, bdfs[-1] if bdfs else None, unread, counters
                )
            )
    return ports


def _sysfs_port(
    host: Host,
    dev: str,
    num: int,
    ident: Mapping[str, Read],
    bdf: str | None,
    unread: dict[str, str],
    with_counters: bool = True,
) -> IbPort:
    base = f"{CLASS}/{dev}/ports/{num}"
    key = f"{dev}/{num}"
    vals = {n: read_value(host, f"{base}/{n}") for n in ("state", "phys_state", "rate")}
    vals |= {n: read_value(host, f"{base}/{n}") for n in ("link_layer", "lid")}
    state = parse_state(vals["state"].text)
    phys = parse_phys_state(vals["phys_state"].text)
    rate = parse_rate(vals["rate"].text)
    for name, value, r in (
        ("state", state, vals["state"]),
        ("phys_state", phys, vals["phys_state"]),
        ("rate_gbps", rate, vals["rate"]),
    ):
        if value is None:
            unread[f"{key}.{name}"] = r.reason or malformed(r.text or "")
    layer = vals["link_layer"]
    if layer.text is None and layer.reason != "missing":  # a FIFO, a folder, not recorded
        unread[f"{key}.link_layer"] = layer.reason  # not "InfiniBand" by default: unknown
    lid = parse_hex(vals["lid"].text)
    if lid is None and vals["lid"].reason != "missing":
        unread[f"{key}.lid"] = vals["lid"].reason or malformed(vals["lid"].text or "")
    folder = f"{base}/counters"
    names = [n for n in host.listdir(folder) if n in COUNTERS] if with_counters else []
    texts = {n: read_value(host, f"{folder}/{n}").text or "" for n in names}
    counters, bad = parse_counters(texts)
    if bad:
        sample = texts[bad[0]].strip()
        why = f"not supported ({sample})" if sample.startswith("N/A") else malformed(sample)
        unread[f"{key}.counters"] = f"{why}: {', '.join(sorted(bad)[:5])}" + (
            f" and {len(bad) - 5} more" if len(bad) > 5 else ""
        )
    fw, hca, board = ident["fw_ver"].text, ident["hca_type"].text, ident["board_id"].text
    return IbPort(
        device=dev,
        port=num,
        state=state,
        phys_state=phys,
        rate_gbps=rate,
        rate_text=vals["rate"].text or None,
        link_layer=vals["link_layer"].text or None,
        lid=lid,
        fw_version=fw or None,
        hca_type=hca or None,
        board_id=board or None,
        node_guid=normalise_guid(ident["node_guid"].text),
        pci_bdf=bdf,
        counters=counters,
        active_width=parse_width(vals["rate"].text),
    )


def cross_check(sysfs: list[IbPort], ibstat: list[IbPort]) -> tuple[str, ...]:
    """Where ibstat and sysfs disagree about a port (state, phys state, rate, link layer)."""
    out: list[str] = []
    theirs = {(p.device, p.port): p for p in ibstat}
    ours = {(p.device, p.port): p for p in sysfs}
    for k, p in ours.items():
        q = theirs.get(k)
        if q is None:
            out.append(f"{p.subject}: in sysfs, not in ibstat")
            continue
        for name in ("state", "phys_state", "rate_gbps", "link_layer"):
            a, b = getattr(p, name), getattr(q, name)
            if a is not None and b is not None and a != b:
                out.append(f"{p.subject}: {name} is {a} in sysfs, {b} in ibstat")
    out.extend(f"{q.subject}: in ibstat, not in sysfs" for k, q in theirs.items() if k not in ours)
    return tuple(out)

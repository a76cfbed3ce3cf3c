"""The node page's topology section: the ``nvidia-smi topo -m`` matrix a verdict carries
(``inventory.topology``, read at level standard and above) as an accessible table, and the
one place a picture of it goes (``topology_picture``). Pure: an inventory in, HTML out.

The matrix is drawn by nobody here: ``topology_picture`` is the hook for the SVG that
``dolmen topo`` makes (being built on another branch); until it returns one, the section
is the table and its legend.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from html import escape
from typing import Any

from dolmen.fleet.doc import obj

# nvidia-smi's own legend, printed under every matrix (facts/topology/model.py)
LEGEND = (
    ("X", "the device itself"),
    ("NV#", "a bonded set of # NVLinks"),
    ("PIX", "at most one PCIe bridge (the same PCIe switch)"),
    ("PXB", "several PCIe bridges, without the host bridge"),
    ("PHB", "a PCIe host bridge (typically the CPU)"),
    ("NODE", "the interconnect between host bridges within a NUMA node"),
    ("SYS", "the SMP interconnect between NUMA nodes (QPI/UPI, xGMI)"),
)


def topology_picture(topology: Mapping[str, Any]) -> str | None:
    """THE HOOK for the topology picture: the SVG markup of this matrix (``dolmen topo``'s,
    from another branch; the markup is its maker's to escape), shown above the table; None
    shows the table alone. ``topology`` is the verdict's ``inventory.topology``."""
    return None


def carries(doc: Mapping[str, Any]) -> Mapping[str, Any] | None:
    """The verdict's topology when it holds a matrix, else None."""
    inv = doc.get("inventory")
    topo = inv.get("topology") if isinstance(inv, dict) else None
    if isinstance(topo, dict) and topo.get("devices") and isinstance(topo.get("paths"), list):
        return topo
    return None


def section(latest: Mapping[str, Any], found: tuple[str, Mapping[str, Any]] | None) -> str:
    """The section: ``found`` is (collection, verdict) of the newest verdict with a matrix
    (the latest, or an older one of this node when the latest is a quick run)."""
    head = '<h2 id="topology">Topology</h2>'
    if found is None:
        inv = latest.get("inventory")
        topo = inv.get("topology") if isinstance(inv, dict) else None
        why = topo.get("reason") if isinstance(topo, dict) else None
        if not why:
            why = "no verdict of this node read it"
        return (
            f"{head}<p>No <code>nvidia-smi topo -m</code> matrix: {escape(str(why))}. It is "
            "read at level standard and above (<code>dolmen fleet validate --level "
            "standard</code>); the agent's quick tier does not run it.</p>"
        )
    collection, doc = found
    topo = carries(doc) or {}
    source = ""
    if doc is not latest:
        source = (
            f"<p>From the verdict of collection {escape(collection)} (level "
            f"{escape(str(doc.get('level')))}, started {escape(str(doc.get('started')))}): "
            "the latest one did not read the matrix.</p>"
        )
    picture = topology_picture(topo)
    figure = (
        f'<figure id="topology-picture">{picture}<figcaption>GPU, NIC and CPU topology'
        "</figcaption></figure>"
        if picture
        else ""
    )
    return head + source + figure + _table(topo) + _notes(topo)


def _table(topo: Mapping[str, Any]) -> str:
    devices = [str(d) for d in topo["devices"]]
    nics, affinity = obj(topo, "nics"), obj(topo, "affinity")

    def label(d: str) -> str:
        name = nics.get(d)
        return escape(d) + (f"<br>{escape(str(name))}" if name and name != d else "")

    head = "".join(f'<th scope="col">{label(d)}</th>' for d in devices)
    rows = []
    for d, cells in zip(devices, topo["paths"], strict=False):
        tds = "".join(_cell(c) for c in (cells if isinstance(cells, list) else []))
        a = obj(affinity, d)
        aff = "".join(
            f"<td>{escape(str(a.get(k))) if a.get(k) is not None else '-'}</td>"
            for k in ("cpus", "numa_node")
        )
        rows.append(f'<tr><th scope="row">{label(d)}</th>{tds}{aff}</tr>')
    # a scrolling region, reachable by keyboard: a 16-NIC matrix is wider than a laptop
    return (
        '<div class="scroll" role="region" aria-label="topology matrix" tabindex="0">'
        '<table id="topology-matrix" class="matrix"><caption>nvidia-smi topo -m: how each '
        "pair of devices is connected, and each GPU's CPU and NUMA affinity</caption><thead>"
        f'<tr><th scope="col">Device</th>{head}<th scope="col">CPU affinity</th>'
        f'<th scope="col">NUMA affinity</th></tr></thead><tbody>{"".join(rows)}</tbody>'
        "</table></div>"
    )


def _cell(cell: object) -> str:
    if cell is None:
        return '<td class="topo-unread">not read</td>'
    text = escape(str(cell))
    title = next((m for code, m in LEGEND if text == code), "")
    if text.startswith("NV") and text[2:].isdigit():
        title = f"{text[2:]} bonded NVLinks"
    return f'<td><abbr title="{escape(title)}">{text}</abbr></td>' if title else f"<td>{text}</td>"


def _notes(topo: Mapping[str, Any]) -> str:
    legend = "".join(f"<dt>{escape(c)}</dt><dd>{escape(m)}</dd>" for c, m in LEGEND)
    problems: Sequence[Any] = topo.get("problems") or ()
    listed = "".join(f"<li>{escape(str(p))}</li>" for p in problems)
    said = (
        f'<p>What could not be read:</p><ul id="topology-problems">{listed}</ul>' if listed else ""
    )
    return f'<dl id="topology-legend">{legend}</dl>{said}'

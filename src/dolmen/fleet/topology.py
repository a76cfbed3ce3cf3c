"""The node page's topology section: ``dolmen topo``'s picture of the node and the
``nvidia-smi topo -m`` matrix, both from the verdict's ``inventory.topology`` (a run at
level standard and above reads them; the agent's quick tier does not). Pure: an
inventory in, HTML out.

The picture is drawn by ``dolmen topo``'s own renderer (``report/topology/svg.py``) from
the tree the verdict carries (``tree``: the part of ``dolmen.topo/1`` the picture needs),
read back by ``report/topology/rebuild.py``; the SVG escapes its texts itself, and is
embedded inline with its label. The matrix is an accessible table with nvidia-smi's
legend. Either may be missing (a verdict of an older dolmen has no tree, a host without
``nvidia-smi topo -m`` no matrix): the section shows the other and says why.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from html import escape
from typing import Any

from dolmen.fleet.doc import obj
from dolmen.report.topology.rebuild import rebuild
from dolmen.report.topology.svg import render_svg

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
NO_TREE = "the verdict carries no topology tree (a dolmen older than the picture made it)"


def _picture(topology: Mapping[str, Any], title: str) -> tuple[str | None, str]:
    """The SVG markup of the node's topology (``dolmen topo --svg``'s picture, every text
    in it escaped by its maker), or None and why not: the verdict's ``inventory.topology``
    carries no tree, or a malformed one."""
    tree = topology.get("tree")
    if not isinstance(tree, dict):
        return None, NO_TREE
    if not tree.get("devices"):
        return None, str(tree.get("reason") or "no device in the topology tree")
    try:
        topo = rebuild(tree)
    except ValueError as e:  # someone else's verdict: said, never a broken page
        return None, f"the verdict's topology tree is malformed: {e}"
    return render_svg(topo, title), ""


def carries(doc: Mapping[str, Any]) -> Mapping[str, Any] | None:
    """The verdict's topology when it holds a matrix or a tree with devices, else None."""
    inv = doc.get("inventory")
    topo = inv.get("topology") if isinstance(inv, dict) else None
    if not isinstance(topo, dict):
        return None
    if _has_matrix(topo) or obj(topo, "tree").get("devices"):
        return topo
    return None


def _has_matrix(topo: Mapping[str, Any]) -> bool:
    return bool(topo.get("devices")) and isinstance(topo.get("paths"), list)


def section(latest: Mapping[str, Any], found: tuple[str, Mapping[str, Any]] | None) -> str:
    """The section: ``found`` is (collection, verdict) of the newest verdict with a matrix
    or a tree (the latest, or an older one of this node when the latest is a quick run)."""
    head = '<h2 id="topology">Topology</h2>'
    if found is None:
        inv = latest.get("inventory")
        topo = inv.get("topology") if isinstance(inv, dict) else None
        why = topo.get("reason") if isinstance(topo, dict) else None
        if not why:
            why = "no verdict of this node read it"
        return (
            f"{head}<p>No <code>nvidia-smi topo -m</code> matrix and no picture: "
            f"{escape(str(why))}. Both are read at level standard and above (<code>dolmen "
            "fleet validate --level standard</code>); the agent's quick tier does not run "
            "them.</p>"
        )
    collection, doc = found
    topo = carries(doc) or {}
    source = ""
    if doc is not latest:
        source = (
            f"<p>From the verdict of collection {escape(collection)} (level "
            f"{escape(str(doc.get('level')))}, started {escape(str(doc.get('started')))}): "
            "the latest one did not read the topology.</p>"
        )
    tree = obj(topo, "tree")
    title = f"{doc.get('host')}: GPU, NIC and CPU topology ({tree.get('source')})"
    svg, why = _picture(topo, title)
    if svg is not None:
        figure = (
            '<figure id="topology-picture"><div class="scroll" role="region" '
            'aria-label="topology picture" tabindex="0">'
            f"{svg}</div><figcaption>How the GPUs, NICs and NVSwitches sit in the PCI tree "
            "(dolmen topo): CPUs on top, then host bridges and PCIe switches; green, the "
            "NVLinks; dashed, each GPU to its closest NIC.</figcaption></figure>" + _unread(tree)
        )
    else:
        figure = f'<p id="topology-no-picture">No picture: {escape(why)}.</p>'
    if not _has_matrix(topo):
        said = topo.get("reason") or "not read"
        return (
            head + source + figure + "<p>No <code>nvidia-smi topo -m</code> matrix: "
            f"{escape(str(said))}.</p>"
        )
    return head + source + figure + _table(topo) + _notes(topo)


def _unread(tree: Mapping[str, Any]) -> str:
    """What the picture could not place or join, one line each."""
    items = "".join(
        f"<li>{escape(str(k))}: {escape(str(v))}</li>" for k, v in obj(tree, "unread").items()
    )
    return f'<p>Not in the picture:</p><ul id="topology-unread">{items}</ul>' if items else ""


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

"""The topology picture as SVG, written by dolmen itself (no library): pure.

Boxes and PCIe edges from ``layout``; NVLink drawn as one band under the GPUs when every
pair has the same NV# (an NVSwitch board), else one arc per pair; each GPU's closest
NIC joined by a dashed line under the row, labelled with the path (PIX, PXB...).
Every text in it comes from a bundle or a verdict (someone's text: device names, bus ids,
labels, the title): ``_text`` escapes it for XML, and HTML where the fleet dashboard
embeds the picture inline, with control characters shown, never obeyed. The root has
``role="img"`` and an ``aria-label`` (the title), so a screen reader names the picture.
"""

from __future__ import annotations

from xml.sax.saxutils import escape, quoteattr

from dolmen.facts.topology.tree_model import HostTopology
from dolmen.report.topology.layout import Box, Layout, layout
from dolmen.values.text import printable

BOX_W, BOX_H, STEP_X, STEP_Y, MARGIN = 104, 54, 116, 84, 24
COLOURS = {
    "cpu": "#dfe7f2",
    "bridge": "#eeeeee",
    "switch": "#f4ead7",
    "gpu": "#d8efd3",
    "nic": "#f8d9d6",
    "nvswitch": "#e6dcf3",
}
NVLINK, AFFINITY = "#3a7d2c", "#b3403a"


def _x(b: Box) -> float:
    return MARGIN + b.x * STEP_X


def _y(b: Box) -> float:
    return MARGIN + b.y * STEP_Y


def _text(text: str) -> str:
    """Someone's text as XML character data (module docstring)."""
    return escape(printable(text))


def render_svg(topo: HostTopology, title: str = "") -> str:
    """The picture of ``topo`` as an SVG document."""
    name = printable(title or "dolmen topo")
    lay = layout(topo)
    width = int(2 * MARGIN + lay.width * STEP_X)
    bottom = MARGIN + (lay.depth - 1) * STEP_Y + BOX_H
    height = int(bottom + 60 + 14 * max(1, len(lay.affinity) > 0))
    out = [
        f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height + 20}"'
        f' viewBox="0 0 {width} {height + 20}" font-family="sans-serif" font-size="10"'
        f' role="img" aria-label={quoteattr(name)}>',
        f"<title>{escape(name)}</title>",
        f'<rect width="{width}" height="{height + 20}" fill="white"/>',
    ]
    for parent, child in lay.edges:
        a, b = lay.boxes[parent], lay.boxes[child]
        out.append(
            f'<line x1="{_x(a) + BOX_W / 2:.1f}" y1="{_y(a) + BOX_H:.1f}"'
            f' x2="{_x(b) + BOX_W / 2:.1f}" y2="{_y(b):.1f}" stroke="#777"/>'
        )
    out += _nvlink(lay, bottom)
    out += _affinity(lay, bottom)
    for b in lay.boxes.values():
        out.append(
            f'<rect x="{_x(b):.1f}" y="{_y(b):.1f}" width="{BOX_W}" height="{BOX_H}" rx="5"'
            f' fill="{COLOURS.get(b.kind, "#fff")}" stroke="#555"/>'
        )
        for i, line in enumerate(b.lines[:3]):
            weight = ' font-weight="bold"' if i == 0 else ""
            out.append(
                f'<text x="{_x(b) + BOX_W / 2:.1f}" y="{_y(b) + 16 + 14 * i:.1f}"'
                f' text-anchor="middle"{weight}>{_text(line)}</text>'
            )
    out.append("</svg>")
    return "\n".join(out) + "\n"


def _nvlink(lay: Layout, bottom: float) -> list[str]:
    band = lay.nvlink_band
    out: list[str] = []
    if band is not None:
        gpus, kind = band
        y = bottom + 14
        x0 = _x(lay.boxes[gpus[0]]) + BOX_W / 2
        x1 = _x(lay.boxes[gpus[-1]]) + BOX_W / 2
        out.append(
            f'<line x1="{x0:.1f}" y1="{y}" x2="{x1:.1f}" y2="{y}" stroke="{NVLINK}"'
            ' stroke-width="4"/>'
        )
        for g in gpus:
            x = _x(lay.boxes[g]) + BOX_W / 2
            out.append(
                f'<line x1="{x:.1f}" y1="{bottom}" x2="{x:.1f}" y2="{y}"'
                f' stroke="{NVLINK}" stroke-width="2"/>'
            )
        out.append(
            f'<text x="{x0:.1f}" y="{y + 14}" fill="{NVLINK}">'
            f"NVLink {_text(kind)} between every GPU pair</text>"
        )
        return out
    for a, b, kind in lay.nvlink:
        xa, xb = _x(lay.boxes[a]) + BOX_W / 2, _x(lay.boxes[b]) + BOX_W / 2
        out.append(
            f'<path d="M{xa:.1f},{bottom} Q{(xa + xb) / 2:.1f},{bottom + 40} {xb:.1f},{bottom}"'
            f' fill="none" stroke="{NVLINK}" stroke-width="2"><title>{_text(kind)}</title></path>'
        )
    return out


def _affinity(lay: Layout, bottom: float) -> list[str]:
    out: list[str] = []
    for gpu, nic, path in lay.affinity:
        a, b = lay.boxes[gpu], lay.boxes[nic]
        xa, xb = _x(a) + BOX_W * 0.3, _x(b) + BOX_W * 0.7
        out.append(
            f'<path d="M{xa:.1f},{bottom} Q{(xa + xb) / 2:.1f},{bottom + 50} {xb:.1f},{bottom}"'
            f' fill="none" stroke="{AFFINITY}" stroke-dasharray="4 3">'
            f"<title>{_text(gpu)} closest NIC {_text(nic)} ({_text(path)})</title></path>"
        )
    if lay.affinity:
        out.append(
            f'<text x="{MARGIN}" y="{bottom + 70}" fill="{AFFINITY}">'
            "dashed: each GPU to its closest NIC (hover: the path, as nvidia-smi names it)</text>"
        )
    return out

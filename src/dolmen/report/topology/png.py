"""The topology picture as PNG, through matplotlib (the ``plots`` extra; the test extras
have it): the same layout as the SVG, drawn on a figure of its own (no pyplot state)."""

from __future__ import annotations

from dolmen.facts.topology.tree_model import HostTopology
from dolmen.report.bench.plots import matplotlib_missing, render
from dolmen.report.topology.layout import layout
from dolmen.report.topology.svg import AFFINITY, COLOURS, NVLINK
from dolmen.values.text import printable

MISSING = "matplotlib is not installed (pip install 'dolmen[plots]'); --svg needs nothing"


def render_png(topo: HostTopology, title: str = "") -> bytes | None:
    """The picture as PNG bytes; None when matplotlib is missing."""
    if matplotlib_missing():
        return None
    import matplotlib
    from matplotlib.figure import Figure
    from matplotlib.patches import FancyBboxPatch

    lay = layout(topo)
    fig = Figure(figsize=(max(6.0, 1.15 * lay.width + 0.6), 1.0 + 0.9 * (lay.depth + 1)))
    ax = fig.add_axes((0.0, 0.0, 1.0, 1.0))
    ax.set_xlim(-0.6, lay.width - 0.4)
    ax.set_ylim(lay.depth + 0.6, -0.8)
    ax.axis("off")
    with matplotlib.rc_context({"text.parse_math": False}):
        if title:
            ax.text(-0.5, -0.6, printable(title), fontsize=9, weight="bold")
        for parent, child in lay.edges:
            a, b = lay.boxes[parent], lay.boxes[child]
            ax.plot([a.x, b.x], [a.y + 0.3, b.y - 0.3], color="#777", linewidth=0.8)
        bottom = lay.depth - 1 + 0.3
        band = lay.nvlink_band
        if band is not None:
            xs = [lay.boxes[g].x for g in band[0]]
            ax.plot([xs[0], xs[-1]], [bottom + 0.25] * 2, color=NVLINK, linewidth=3)
            for x in xs:
                ax.plot([x, x], [bottom, bottom + 0.25], color=NVLINK, linewidth=1.5)
            ax.text(
                xs[0],
                bottom + 0.45,
                f"NVLink {band[1]} between every GPU pair",
                color=NVLINK,
                fontsize=7,
            )
        for g, h, _ in [] if band is not None else lay.nvlink:
            xa, xb = lay.boxes[g].x, lay.boxes[h].x
            ax.plot([xa, (xa + xb) / 2, xb], [bottom, bottom + 0.5, bottom], color=NVLINK)
        for gpu, nic, _ in lay.affinity:
            xa, xb = lay.boxes[gpu].x, lay.boxes[nic].x
            ax.plot(
                [xa, (xa + xb) / 2, xb],
                [bottom, bottom + 0.7, bottom],
                color=AFFINITY,
                linestyle="--",
                linewidth=1,
            )
        for b in lay.boxes.values():
            ax.add_patch(
                FancyBboxPatch(
                    (b.x - 0.44, b.y - 0.3),
                    0.88,
                    0.6,
                    boxstyle="round,pad=0.02",
                    facecolor=COLOURS.get(b.kind, "white"),
                    edgecolor="#555",
                )
            )
            ax.text(
                b.x,
                b.y,
                "\n".join(printable(x) for x in b.lines[:3]),
                ha="center",
                va="center",
                fontsize=6,
            )
    return render(fig, "png")

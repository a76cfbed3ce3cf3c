"""PNG and SVG charts of a bench run, written beside its bench.json.

matplotlib is optional (``pip install 'dolmen[plots]'``): where it is missing the run
still writes its JSON and terminal view and says the plots were skipped. It is imported
here only, lazily, with the Agg backend (no display, no GUI toolkit). Each chart goes
through ``fsutil.write_output`` from memory, so a chart is whole or absent, and a path
that is a FIFO or a folder is refused like any other output.
"""

from __future__ import annotations

import io
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

from dolmen.fsutil import write_output
from dolmen.values.text import printable

if TYPE_CHECKING:
    from matplotlib.figure import Figure

MISSING = "plots skipped: matplotlib not installed (pip install 'dolmen[plots]')"
FORMATS = ("png", "svg")
# chart file stem -> (the result it draws, the builder's name in charts.py)
CHARTS = {
    "gemm": ("gemm", "gemm_chart"),
    "peer": ("memory", "peer_chart"),
    "busbw": ("collective", "busbw_chart"),
    "storage": ("storage", "storage_chart"),
}


def matplotlib_missing() -> bool:
    """Whether matplotlib cannot be imported (the optional extra is not installed)."""
    try:
        import matplotlib
    except ImportError:
        return True
    matplotlib.use("Agg")
    return False


def write_plots(doc: Mapping[str, Any], folder: Path) -> list[Path]:
    """Every chart the run has data for, as ``<stem>.png`` and ``<stem>.svg`` in ``folder``
    (which must exist). Call only after ``matplotlib_missing()`` said False."""
    import matplotlib

    # A mount, subject or host name is someone's text: "$...$" in it must not be read as
    # mathtext (which draws it as a formula, or raises on one it cannot parse).
    with matplotlib.rc_context({"text.parse_math": False}):
        return _write_plots(doc, folder)


def _write_plots(doc: Mapping[str, Any], folder: Path) -> list[Path]:
    from dolmen.report.bench import charts

    smoke = ", smoke sizes" if doc.get("smoke") else ""
    title = f"{printable(str(doc.get('host')))} ({doc.get('device')}{smoke})"
    results: Mapping[str, Any] = doc.get("results", {})
    written: list[Path] = []
    for stem, (result, builder) in CHARTS.items():
        if result not in results:
            continue
        make: Callable[[Mapping[str, Any], str], Figure | None] = getattr(charts, builder)
        fig = make(results[result], title)
        if fig is None:
            continue
        for fmt in FORMATS:
            path = folder / f"{stem}.{fmt}"
            write_output(path, render(fig, fmt), what="plot")
            written.append(path)
    return written


def render(fig: Figure, fmt: str) -> bytes:
    """A figure's bytes in ``fmt``; the SVG without a date and with fixed ids, so the
    same run draws the same file."""
    out = io.BytesIO()
    if fmt == "svg":
        import matplotlib

        with matplotlib.rc_context({"svg.hashsalt": "dolmen", "svg.fonttype": "none"}):
            fig.savefig(out, format="svg", metadata={"Date": None})
    else:
        fig.savefig(out, format="png", dpi=120, metadata={"Software": None})
    return out.getvalue()

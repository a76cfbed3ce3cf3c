"""The four charts of a bench run, as matplotlib figures (plots.py saves them).

Imported only by plots.py, after matplotlib was found and set to its Agg backend, so no
display is needed and ``import dolmen.report.bench`` never pays for matplotlib.
Each builder returns None when the run has nothing for its chart.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from matplotlib.figure import Figure
from matplotlib.ticker import EngFormatter

from dolmen.report.bench.figures import human_bytes

_COLOURS = ("#4c72b0", "#dd8452", "#55a868", "#c44e52", "#8172b3", "#937860")


def _figure(width: float = 8.0, height: float = 4.5) -> Figure:
    # matplotlib.figure.Figure, not pyplot: no global state, nothing left open between runs
    return Figure(figsize=(width, height), layout="constrained")


def gemm_chart(body: Mapping[str, Any], title: str) -> Figure | None:
    """Bars of TFLOP/s per GPU, one per dtype, and each dtype's published peak as a line."""
    rows = body.get("gpus") or []
    if not rows:
        return None
    subjects = list(dict.fromkeys(r["subject"] for r in rows))
    dtypes = list(dict.fromkeys(r["dtype"] for r in rows))
    fig = _figure(min(12.0, max(6.0, 2 + 1.2 * len(subjects) * len(dtypes) ** 0.5)))
    ax = fig.add_subplot()
    width = 0.8 / len(dtypes)
    for d, dtype in enumerate(dtypes):
        colour = _COLOURS[d % len(_COLOURS)]
        xs, ys = [], []
        for r in rows:
            if r["dtype"] == dtype:
                xs.append(subjects.index(r["subject"]) + (d - (len(dtypes) - 1) / 2) * width)
                ys.append(r["tflops"])
        bars = ax.bar(xs, ys, width * 0.92, label=dtype, color=colour)
        ax.bar_label(bars, fmt=_short, fontsize=7, padding=2)
        peaks = {r["peak_tflops"] for r in rows if r["dtype"] == dtype and r["peak_tflops"]}
        for peak in sorted(peaks):
            ax.axhline(peak, color=colour, linestyle="--", linewidth=1.2)
            ax.annotate(
                f"{dtype} peak {peak:g}",
                (1.0, peak),
                xycoords=("axes fraction", "data"),
                xytext=(-4, 3),
                textcoords="offset points",
                ha="right",
                fontsize=8,
                color=colour,
            )
    gpu_of = {r["subject"]: r["gpu"] for r in rows}
    ax.set_xticks(range(len(subjects)), [_gpu_label(s, gpu_of[s]) for s in subjects], fontsize=8)
    ax.set_ylabel("TFLOP/s")
    ax.set_ylim(bottom=0, top=ax.get_ylim()[1] * 1.08)
    ax.set_title(f"GEMM per GPU: {title}")
    fig.legend(title="dtype", fontsize=8, loc="outside right upper")
    ax.grid(axis="y", alpha=0.3)
    if not any(r["peak_tflops"] for r in rows):
        ax.set_xlabel("no published peak for this device: measured only", color="grey")
    return fig


def _short(v: float) -> str:
    """A bar's value label: whole numbers from 100 up, three digits below."""
    if abs(v) >= 1e6:
        return f"{v / 1e6:.3g}M"
    return f"{v:.0f}" if abs(v) >= 100 else f"{v:.3g}"


def _gpu_label(subject: str, gpu: int | None) -> str:
    """``gpu3`` over its bus id (what nvidia-smi -i and the findings say), or the subject."""
    if gpu is None:
        return subject
    return f"gpu{gpu}\n{subject.removeprefix('gpu:').removeprefix('0000:')}"


def peer_chart(body: Mapping[str, Any], title: str) -> Figure | None:
    """The GPU-to-GPU bandwidth matrix as a heatmap, every value written in its cell."""
    peer = body.get("peer")
    if not peer or not peer.get("gpus"):
        return None
    import numpy as np

    gpus = peer["gpus"]
    grid = np.array([[np.nan if v is None else v for v in row] for row in peer["gbps"]], float)
    n = len(gpus)
    fig = _figure(min(12.0, 2.5 + 0.75 * n), min(10.0, 1.8 + 0.65 * n))
    ax = fig.add_subplot()
    import matplotlib as mpl

    cmap = mpl.colormaps["viridis"].with_extremes(bad="#dddddd")
    image = ax.imshow(np.ma.masked_invalid(grid), cmap=cmap, vmin=0)
    finite = grid[np.isfinite(grid)]
    middle = float(finite.max()) / 2 if finite.size else 0.0
    for i in range(n):
        for j in range(n):
            v = grid[i, j]
            text = "-" if np.isnan(v) else f"{v:.3g}"
            ax.text(
                j,
                i,
                text,
                ha="center",
                va="center",
                fontsize=8 if n <= 8 else 6,
                color="black" if np.isnan(v) or v > middle else "white",
            )
    labels = [f"gpu{g}" for g in gpus]
    ax.set_xticks(range(n), labels)
    ax.set_yticks(range(n), labels)
    ax.set_xlabel("to")
    ax.set_ylabel("from")
    ax.set_title(f"Peer bandwidth (GB/s): {title}")
    fig.colorbar(image, ax=ax, label="GB/s", shrink=0.85)
    return fig


def busbw_chart(body: Mapping[str, Any], title: str) -> Figure | None:
    """Bus bandwidth against message size on a log2 axis, one curve per collective run
    (the shape of nccl-tests' all_reduce_perf tables, drawn)."""
    runs = [r for r in body.get("runs") or [] if r["points"]]
    if not runs:
        return None
    fig = _figure()
    ax = fig.add_subplot()
    sizes: set[int] = set()
    for k, run in enumerate(runs):
        points = sorted(run["points"], key=lambda p: p["bytes"])
        xs = [p["bytes"] for p in points]
        sizes.update(xs)
        ax.plot(
            xs,
            [p["busbw_gbps"] for p in points],
            marker="o",
            markersize=3,
            color=_COLOURS[k % len(_COLOURS)],
            label=f"{run['op']} x{run['world']} ({run['backend']})",
        )
    ax.set_xscale("log", base=2)
    ticks = sorted(sizes)
    if len(ticks) > 12:  # one label every few powers of two keeps them readable
        step = -(-len(ticks) // 12)
        ticks = ticks[::step]
    ax.set_xticks(ticks, [human_bytes(t) for t in ticks], rotation=45 if len(ticks) > 8 else 0)
    ax.minorticks_off()
    ax.set_xlabel("message size (bytes)")
    ax.set_ylabel("busbw (GB/s)")
    ax.set_ylim(bottom=0)
    ax.set_title(f"Collective bus bandwidth: {title}")
    ax.grid(alpha=0.3)
    ax.legend(fontsize=8, loc="upper left")
    return fig


def storage_chart(body: Mapping[str, Any], title: str) -> Figure | None:
    """Sequential throughput per mount, and random IOPS beside it where measured."""
    mounts = body.get("mounts") or []
    if not mounts:
        return None
    has_iops = any(
        m["rand_read_iops"] is not None or m["rand_write_iops"] is not None for m in mounts
    )
    fig = _figure(9.0 if has_iops else 6.5, 4.0)
    axes = fig.subplots(1, 2 if has_iops else 1, squeeze=False)[0]
    names = [m["mount"] for m in mounts]
    for ax, fields, unit in (
        (axes[0], (("seq_read_mbps", "read"), ("seq_write_mbps", "write")), "MB/s"),
        *(
            ((axes[1], (("rand_read_iops", "read"), ("rand_write_iops", "write")), "IOPS"),)
            if has_iops
            else ()
        ),
    ):
        for f, (field, label) in enumerate(fields):
            xs = [i + (f - 0.5) * 0.4 for i in range(len(mounts))]
            # a figure the engine did not measure (the built-in one has no random I/O) is
            # no bar and says so: a bar of zero would read as a dead disk
            measured = [(x, m[field]) for x, m in zip(xs, mounts) if m[field] is not None]
            bars = ax.bar(
                [x for x, _ in measured],
                [v for _, v in measured],
                0.37,
                label=label,
                color=_COLOURS[f],
            )
            ax.bar_label(bars, fmt=_short, fontsize=7, padding=2)
            for x, m in zip(xs, mounts):
                if m[field] is None:
                    ax.text(
                        x, 0, "not\nmeasured", ha="center", va="bottom", fontsize=7, color="grey"
                    )
        if unit == "IOPS":
            ax.yaxis.set_major_formatter(EngFormatter())
        ax.set_xticks(range(len(mounts)), names)
        ax.set_xlim(-0.6, len(mounts) - 0.4)
        ax.set_ylabel(unit)
        ax.set_ylim(bottom=0, top=ax.get_ylim()[1] * 1.1)
        ax.grid(axis="y", alpha=0.3)
        ax.legend(fontsize=8)
        ax.set_title("sequential" if unit == "MB/s" else "random")
    fig.suptitle(f"Storage: {title}")
    return fig

"""The terminal view of a bench run: tables, bars against the peak line, sparklines.

Plain text lines (the command echoes them), so the view is the same in a terminal, a
log and a CI job's output. Text that came from the host (subjects, mounts, DCGM's test
names and messages) goes through ``values.text.printable``.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from itertools import pairwise
from typing import Any

from dolmen.report.bench.figures import human_bytes
from dolmen.values.text import printable

TICKS = "▁▂▃▄▅▆▇█"
BAR = 30  # characters of a bar at the scale's top


def sparkline(values: Sequence[float], *, top: float | None = None, width: int = 24) -> str:
    """One character per value, from ▁ (zero) to █ (``top``, the largest by default); more
    values than ``width`` are averaged in ``width`` equal runs (a minute of samples)."""
    if not values:
        return ""
    if len(values) > width:
        cuts = [round(i * len(values) / width) for i in range(width + 1)]
        values = [sum(values[a:b]) / (b - a) for a, b in pairwise(cuts)]
    hi = top if top is not None else max(values)
    if hi <= 0:
        return TICKS[0] * len(values)
    last = len(TICKS) - 1
    return "".join(TICKS[max(0, min(last, round(v / hi * last)))] for v in values)


def bar(value: float, scale: float, *, mark: float | None = None) -> str:
    """A bar of ``value`` on a ``scale`` of BAR characters, ``|`` at ``mark`` (the peak)."""
    if scale <= 0:
        return ""
    filled = round(min(value, scale) / scale * BAR)
    cells = ["█"] * filled + ["·"] * (BAR - filled)
    if mark is not None and 0 < mark <= scale:
        cells[min(BAR - 1, round(mark / scale * BAR) - 1)] = "|"
    return "".join(cells)


def render_bench(doc: Mapping[str, Any]) -> list[str]:
    """The whole view of one checked ``dolmen.bench/1`` document."""
    host = printable(str(doc.get("host")))
    lines = [f"dolmen bench: {host}, {doc.get('device')}, {doc.get('wall_s', 0):.1f} s"]
    if doc.get("device") == "cpu":
        lines.append(
            "on the CPU (--device cpu): measured only, no GPU peak or link to hold them to"
        )
    if doc.get("smoke"):
        lines.append("smoke sizes: these figures test the machinery, not the machine")
    results: Mapping[str, Any] = doc.get("results", {})
    for name, render in _SECTIONS:
        if name in results:
            lines.append("")
            lines.extend(render(results[name]))
    for name, why in sorted(doc.get("errors", {}).items()):
        lines.append(f"{printable(name)}: not measured: {printable(why)}")
    return lines


def _gemm(body: Mapping[str, Any]) -> list[str]:
    rows = body["gpus"]
    on_cpu = all(r.get("gpu") is None for r in rows)
    lines = [
        "GEMM  TFLOP/s per dtype on the CPU"
        if on_cpu
        else "GEMM  TFLOP/s per GPU; | marks the published dense peak"
    ]
    scale = max([r["tflops"] for r in rows] + [r["peak_tflops"] or 0 for r in rows] + [0])
    width = max([len(printable(r["subject"])) for r in rows] + [4])
    subjects = list(dict.fromkeys(r["subject"] for r in rows))
    for subject in subjects:
        mine = [r for r in rows if r["subject"] == subject]
        for r in mine:
            peak = r["peak_tflops"]
            share = f"{r['tflops'] / peak:6.1%} of peak" if peak else "no published peak"
            lines.append(
                f"  {printable(subject):<{width}} {printable(r['dtype']):<6} "
                f"{_num(r['tflops']):>9}  {bar(r['tflops'], scale, mark=peak)}  {share}"
            )
        # what the GPU did during its runs, every dtype in order: a clock that sags under
        # load is where throttling shows
        sampled = []
        for key, unit in (("clock_mhz", "MHz"), ("power_w", "W"), ("temp_c", "C")):
            series = [v for r in mine for v in (r.get("samples") or {}).get(key) or []]
            if series:
                sampled.append(
                    f"{key.split('_')[0]} {sparkline(series)} {min(series):.0f}-{max(series):.0f} "
                    f"{unit}"
                )
        if any(r.get("throttled") for r in mine):
            sampled.append("throttled under load")
        if sampled:
            lines.append(f"  {'':<{width}} " + "  ".join(sampled))
    for skip in body.get("skipped") or ():
        gpu = "host" if skip.get("gpu") is None else f"gpu{skip['gpu']}"
        lines.append(f"  {gpu} {printable(skip['dtype'])}: not run: {printable(skip['reason'])}")
    return lines


def _memory(body: Mapping[str, Any]) -> list[str]:
    if all(g.get("gpu") is None for g in body["gpus"]):  # a CPU run: one host memory copy
        lines = ["Memory  GB/s: host memory copy (no device link on the CPU)"]
        return lines + [
            f"  {printable(g['subject']):<14} {_num(g['d2d_gbps']):>9}" for g in body["gpus"]
        ]
    lines = ["Memory  GB/s: device copy, host to device, device to host (published; PCIe link)"]
    for g in body["gpus"]:
        pcie = g.get("pcie")
        link = f"Gen{pcie['gen']} x{pcie['width']}" if pcie else "link not read"
        pub = g.get("published_gbps")
        lines.append(
            f"  {printable(g['subject']):<14} {_num(g['d2d_gbps']):>9} {_opt(g['h2d_gbps']):>9} "
            f"{_opt(g['d2h_gbps']):>9}  ({_opt(pub)}; {link})"
        )
    peer = body.get("peer")
    if peer and peer.get("gpus"):
        lines.append("  peer GB/s (row: from, column: to)")
        lines.append("       " + "".join(f"{f'gpu{i}':>8}" for i in peer["gpus"]))
        for i, row in zip(peer["gpus"], peer["gbps"]):
            lines.append(f"  {f'gpu{i}':<5}" + "".join(f"{_opt(v):>8}" for v in row))
    return lines


def _collective(body: Mapping[str, Any]) -> list[str]:
    lines = ["Collective  bus bandwidth against message size (nccl-tests busbw)"]
    for run in body["runs"]:
        points = sorted(run["points"], key=lambda p: p["bytes"])
        name = f"{run['op']} x{run['world']} {run['backend']}"
        if not points:
            lines.append(f"  {name:<26} no points")
            continue
        busbw = [p["busbw_gbps"] for p in points]
        lines.append(
            f"  {name:<26} {human_bytes(points[0]['bytes']):>5} {sparkline(busbw)} "
            f"{human_bytes(points[-1]['bytes'])}  peak {_num(max(busbw))} GB/s"
        )
    if body.get("stopped"):
        lines.append(f"  stopped early: {printable(body['stopped'])}")
    return lines


def _storage(body: Mapping[str, Any]) -> list[str]:
    lines = ["Storage  MB/s sequential read / write, IOPS random read / write"]
    mounts = body["mounts"]
    scale = max([m["seq_read_mbps"] for m in mounts] + [m["seq_write_mbps"] for m in mounts] + [0])
    for m in mounts:
        where = f"{printable(m['mount'])} ({m['engine']})"
        lines.append(
            f"  {where:<22} read  {m['seq_read_mbps']:9.1f} {bar(m['seq_read_mbps'], scale)}"
        )
        lines.append(
            f"  {'':<22} write {m['seq_write_mbps']:9.1f} {bar(m['seq_write_mbps'], scale)}"
        )
        lines.append(
            f"  {'':<22} IOPS  {_opt(m['rand_read_iops'], 0)} read, "
            f"{_opt(m['rand_write_iops'], 0)} write"
        )
        if m.get("note"):
            lines.append(f"  {'':<22} {printable(m['note'])}")
    for mount, why in sorted((body.get("refused") or {}).items()):
        lines.append(f"  {printable(mount)}: not measured: {printable(why)}")
    return lines


def _dcgm(body: Mapping[str, Any]) -> list[str]:
    lines = [f"DCGM  dcgmi diag -r {body['level']}"]
    for t in body["tests"]:
        gpu = "" if t["gpu"] is None else f" gpu{t['gpu']}"
        info = f": {printable(t['info'])}" if t["info"] else ""
        lines.append(f"  {printable(t['status']):<8} {printable(t['name'])}{gpu}{info}")
    return lines


def _opt(v: float | None, digits: int = 1) -> str:
    return "-" if v is None else f"{v:.{digits}f}"


def _num(v: float) -> str:
    """Two decimals from 10 up, three significant digits below (a CPU's 0.000230)."""
    return f"{v:.2f}" if abs(v) >= 10 or v == 0 else f"{v:.3g}"


_SECTIONS = (
    ("gemm", _gemm),
    ("memory", _memory),
    ("collective", _collective),
    ("storage", _storage),
    ("dcgm", _dcgm),
)

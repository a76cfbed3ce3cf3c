"""What a verdict says about a node that its peers should share, and who differs.

Read from what the verdict carries: the inventory (driver, CUDA, GPU model and count,
kernel, IB rates) and findings' evidence (NCCL's version from
``stack.libraries.consistent``, GEMM TFLOP/s per dtype from ``workload.gemm`` at level
full). A figure a verdict does not carry is absent, never a value: such a node is
neither in the majority nor an outlier (it is listed as not known).

A text figure's outliers are the nodes whose value differs from a strict majority's; a
measured one's (GEMM) are the nodes more than ``SLOW_FRACTION`` below the fleet median.
"""

from __future__ import annotations

import statistics
from collections import Counter
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from dolmen.fleet.doc import obj

SLOW_FRACTION = 0.10  # as workload.gemm's max_below_median among one node's GPUs
TEXT_FIGURES = ("driver", "cuda", "nccl", "gpu_model", "gpu_count", "kernel", "ib_rates")


@dataclass(frozen=True)
class Outlier:
    """A node whose ``figure`` is ``value`` where the fleet's is ``expected``."""

    figure: str
    node: str
    value: str
    expected: str
    why: str


def node_figures(doc: Mapping[str, Any]) -> dict[str, str | float]:
    """Pure: the figures one verdict document carries (absent ones left out)."""
    inv = obj(doc, "inventory")
    out: dict[str, str | float] = {}
    gpus = obj(inv, "gpus")
    for key in ("driver", "cuda"):
        if isinstance(gpus.get(key), str) and gpus[key]:
            out[key] = gpus[key]
    models = {
        m: n for m, n in obj(gpus, "models").items() if isinstance(n, int) and "not read" not in m
    }
    if models:
        out["gpu_model"] = max(models, key=lambda m: (models[m], m))
    if gpus.get("state") == "read" and isinstance(gpus.get("count"), int):
        out["gpu_count"] = str(gpus["count"])
    kernel = obj(inv, "host").get("kernel")
    if isinstance(kernel, str) and kernel:
        out["kernel"] = kernel
    ib = obj(inv, "ib")
    rates = {r: n for r, n in obj(ib, "rates").items() if isinstance(n, int) and r != "unread"}
    if rates:  # no port read is "not known", not "no IB"
        out["ib_rates"] = ", ".join(f"{r} x{rates[r]}" for r in sorted(rates))
    gemm: dict[str, list[float]] = {}
    for f in doc.get("findings") or ():
        if not isinstance(f, dict):
            continue
        ev = obj(f, "evidence")
        if f.get("check") == "stack.libraries.consistent" and f.get("subject") == "lib:nccl":
            if isinstance(ev.get("version"), str):
                out["nccl"] = ev["version"]
        elif f.get("check") == "workload.gemm":
            for dtype, row in ev.items():
                if isinstance(row, dict) and isinstance(row.get("tflops"), int | float):
                    gemm.setdefault(dtype, []).append(float(row["tflops"]))
    for dtype, values in sorted(gemm.items()):
        out[f"gemm_{dtype}_tflops"] = round(statistics.median(values), 3)
    return out


def outliers(
    figures: Mapping[str, Mapping[str, str | float]],
) -> tuple[list[Outlier], dict[str, list[str]]]:
    """Who differs from the fleet, per figure; and, per figure, the nodes that do not carry
    it (only listed where some node does)."""
    found: list[Outlier] = []
    unknown: dict[str, list[str]] = {}
    names = sorted({k for f in figures.values() for k in f})
    for name in names:
        have = {n: f[name] for n, f in figures.items() if name in f}
        missing = sorted(n for n in figures if n not in have)
        if missing:
            unknown[name] = missing
        if len(have) < 2:
            continue
        if all(isinstance(v, float) for v in have.values()):
            found += _slow(name, {n: float(v) for n, v in have.items()})
        else:
            found += _differs(name, {n: str(v) for n, v in have.items()})
    return found, unknown


def _differs(name: str, have: dict[str, str]) -> list[Outlier]:
    counts = Counter(have.values())
    value, n = max(counts.items(), key=lambda kv: (kv[1], kv[0]))
    if n * 2 <= len(have):  # no strict majority: every value is named
        split = "; ".join(f"{v} on {c}" for v, c in sorted(counts.items()))
        return [
            Outlier(name, node, v, "no majority", f"{name} differs across the fleet ({split})")
            for node, v in sorted(have.items())
        ]
    return [
        Outlier(name, node, v, value, f"{name} {v}, where {n} of {len(have)} nodes have {value}")
        for node, v in sorted(have.items())
        if v != value
    ]


def _slow(name: str, have: dict[str, float]) -> list[Outlier]:
    median = statistics.median(have.values())
    floor = median * (1 - SLOW_FRACTION)
    return [
        Outlier(
            name,
            node,
            f"{v:g}",
            f"{median:g}",
            f"{name} {v:g} is {1 - v / median:.0%} below the fleet median {median:g}",
        )
        for node, v in sorted(have.items())
        if median > 0 and v < floor
    ]

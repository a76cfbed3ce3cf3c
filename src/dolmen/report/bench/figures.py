"""The figures of a bench run, flattened: one named number per thing a person compares.

``--compare`` and ``--baseline`` pair two runs by each figure's ``key`` (stable across
runs of the same node: the subject, the dtype, the mount, the collective's op and world),
so a GPU missing from one run shows as missing instead of shifting every row. Every
figure is "higher is better" (rates and throughputs), so a ratio B/A above 1 is better.
"""

from __future__ import annotations

import statistics
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class Figure:
    """One number of a run: ``key`` pairs it across runs, ``label`` is what a person reads."""

    key: str
    workload: str
    label: str
    unit: str
    value: float | None  # None: the run measured the thing but not this figure (no PCIe read)


def figures(doc: Mapping[str, Any]) -> list[Figure]:
    """Every figure of a checked ``dolmen.bench/1`` document, in the order of its results."""
    out: list[Figure] = []
    results: Mapping[str, Any] = doc.get("results", {})
    for name, body in results.items():
        maker = _MAKERS.get(name)
        if maker is not None:
            out.extend(maker(body))
    return out


def _gemm(body: Mapping[str, Any]) -> list[Figure]:
    return [
        Figure(
            f"gemm/{g['subject']}/{g['dtype']}",
            "gemm",
            f"{g['subject']} {g['dtype']}",
            "TFLOP/s",
            g["tflops"],
        )
        for g in body["gpus"]
    ]


def _memory(body: Mapping[str, Any]) -> list[Figure]:
    out: list[Figure] = []
    for g in body["gpus"]:
        for field, what in (
            ("d2d_gbps", "device copy"),
            ("h2d_gbps", "host to device"),
            ("d2h_gbps", "device to host"),
        ):
            out.append(
                Figure(
                    f"memory/{g['subject']}/{field}",
                    "memory",
                    f"{g['subject']} {what}",
                    "GB/s",
                    g[field],
                )
            )
    peer = body.get("peer")
    values = [v for row in (peer or {}).get("gbps", []) for v in row if v is not None]
    if values:
        out.append(Figure("memory/peer/min", "memory", "peer pairs, slowest", "GB/s", min(values)))
        out.append(
            Figure(
                "memory/peer/median",
                "memory",
                "peer pairs, median",
                "GB/s",
                statistics.median(values),
            )
        )
    return out


def _collective(body: Mapping[str, Any]) -> list[Figure]:
    out: list[Figure] = []
    for run in body["runs"]:
        points = run["points"]
        if not points:
            continue
        name = f"{run['op']} x{run['world']} {run['backend']}"
        key = f"collective/{run['op']}/{run['world']}/{run['backend']}"
        largest = max(points, key=lambda p: p["bytes"])
        out.append(
            Figure(
                f"{key}/peak",
                "collective",
                f"{name} peak busbw",
                "GB/s",
                max(p["busbw_gbps"] for p in points),
            )
        )
        out.append(
            Figure(
                f"{key}/largest",
                "collective",
                f"{name} busbw at {human_bytes(largest['bytes'])}",
                "GB/s",
                largest["busbw_gbps"],
            )
        )
    return out


def _storage(body: Mapping[str, Any]) -> list[Figure]:
    out: list[Figure] = []
    for m in body["mounts"]:
        for field, what, unit in (
            ("seq_read_mbps", "sequential read", "MB/s"),
            ("seq_write_mbps", "sequential write", "MB/s"),
            ("rand_read_iops", "random read", "IOPS"),
            ("rand_write_iops", "random write", "IOPS"),
        ):
            out.append(
                Figure(
                    f"storage/{m['mount']}/{field}",
                    "storage",
                    f"{m['mount']} {what}",
                    unit,
                    m[field],
                )
            )
    return out


_MAKERS = {"gemm": _gemm, "memory": _memory, "collective": _collective, "storage": _storage}


def human_bytes(n: int) -> str:
    """A message size as nccl-tests' users say it: 8B, 64K, 1M, 1G (powers of two)."""
    for unit, shift in (("G", 30), ("M", 20), ("K", 10)):
        if n >= 1 << shift and n % (1 << shift) == 0:
            return f"{n >> shift}{unit}"
    return f"{n}B"

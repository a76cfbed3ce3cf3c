"""``workload.storage_io``: sequential read and write with direct I/O on each data mount,
against the site's figure for that mount.

A figure is the site's (``[thresholds."workload.storage_io"]``, MB/s per mount point:
``min_seq_read_mbps = {"/raid" = 20000}``, ``"*"`` for every mount). The KB has no NVMe
table yet, so there is no published default: a mount without a site figure reports what
it measured and skips (never a pass without a criterion). A mount the workload refused
(no room for its test file) skips with that line. Which mounts are tested:
``dolmen.workloads.storage`` (``[workloads] scratch``, else the data mounts of the
storage facts).
"""

from __future__ import annotations

from typing import Any

from dolmen.checks.context import Context
from dolmen.checks.model import Level, Outcome, check, failed, passed, skipped
from dolmen.checks.workload.common import result_of

READ, WRITE = "min_seq_read_mbps", "min_seq_write_mbps"


@check(
    "workload.storage_io",
    title="Each data mount sustains the site's sequential read and write throughput",
    level=Level.FULL,
    remedy=(
        "Check the RAID/mount options, the NVMe's health (nvme smart-log) and its PCIe link; "
        "compare with fio on the same mount."
    ),
    limits={READ: {}, WRITE: {}},
    source="site-set per mount (DGX /raid practice); fio or dolmen's direct-I/O engine",
)
def storage_io(ctx: Context) -> list[Outcome]:
    """Reads the ``storage`` workload: seq read/write MB/s per mount, random IOPS."""
    result, why = result_of(ctx, "storage")
    if result is None:
        return why
    out = [skipped(f"mount:{m}", f"not measured: {why}") for m, why in result.refused.items()]
    reads, writes = ctx.limit(READ), ctx.limit(WRITE)
    for m in result.mounts:
        out.append(_judge(m, _for(reads, m.mount), _for(writes, m.mount)))
    return out or [skipped("host", "no mount was measured")]


def _for(limits: dict[str, float], mount: str) -> float | None:
    value = limits.get(mount, limits.get("*"))
    return None if value is None else float(value)


def _judge(m: Any, read_min: float | None, write_min: float | None) -> Outcome:
    subject = f"mount:{m.mount}"
    ev: dict[str, Any] = {
        "engine": m.engine,
        "direct": m.direct,
        "file_bytes": m.file_bytes,
        "seq_read_mbps": round(m.seq_read_mbps, 1),
        "seq_write_mbps": round(m.seq_write_mbps, 1),
        "rand_read_iops": None if m.rand_read_iops is None else round(m.rand_read_iops),
        "rand_write_iops": None if m.rand_write_iops is None else round(m.rand_write_iops),
        "min_seq_read_mbps": read_min,
        "min_seq_write_mbps": write_min,
    }
    said = (
        f"{m.engine}{'' if m.direct else ' (buffered)'}: read {m.seq_read_mbps:.0f} MB/s, "
        f"write {m.seq_write_mbps:.0f} MB/s"
    )
    if m.rand_read_iops is not None and m.rand_write_iops is not None:
        said += f", 4 KiB random {m.rand_read_iops:.0f}/{m.rand_write_iops:.0f} IOPS"
    if m.note:
        said += f" ({m.note})"
        ev["note"] = m.note
    if read_min is None and write_min is None:
        return skipped(subject, f"{said}; no site figure for this mount", **ev)
    low = [
        f"{what} below {limit:g} MB/s"
        for what, got, limit in (
            ("read", m.seq_read_mbps, read_min),
            ("write", m.seq_write_mbps, write_min),
        )
        if limit is not None and got < limit
    ]
    if low:
        return failed(subject, f"{said}: {', '.join(low)}", **ev)
    return passed(subject, f"{said}, at or above the site's figure", **ev)

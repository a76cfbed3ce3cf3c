"""Pure parsers of Slurm client output (22.05): text in, values out, never a traceback.

Malformed input gives None or an empty result, never an exception: the caller
turns "could not parse" into one clear error.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from dolmen.compat import StrEnum


class Phase(StrEnum):
    """Where a Slurm job is, in words shared by every job state Slurm prints."""

    PENDING = "pending"
    RUNNING = "running"
    REQUEUED = "requeued"  # between a requeue and PENDING again
    COMPLETED = "completed"
    FAILED = "failed"
    CANCELLED = "cancelled"

    @property
    def done(self) -> bool:
        """Nothing of the job runs any more (a --requeue job may still come back)."""
        return self in (Phase.COMPLETED, Phase.FAILED, Phase.CANCELLED)


# squeue/sacct/scontrol job states. REQUEUED/REQUEUE_* are the short window between a
# requeue and PENDING; NODE_FAIL and PREEMPTED end a run that a --requeue job comes
# back from.
_JOB_STATES: dict[str, Phase] = {
    "PENDING": Phase.PENDING,
    "CONFIGURING": Phase.PENDING,
    "RUNNING": Phase.RUNNING,
    "COMPLETING": Phase.RUNNING,
    "SUSPENDED": Phase.RUNNING,
    "STAGE_OUT": Phase.RUNNING,
    "RESIZING": Phase.RUNNING,
    "REQUEUED": Phase.REQUEUED,
    "REQUEUE_FED": Phase.REQUEUED,
    "REQUEUE_HOLD": Phase.REQUEUED,
    "RESV_DEL_HOLD": Phase.PENDING,
    "COMPLETED": Phase.COMPLETED,
    "FAILED": Phase.FAILED,
    "TIMEOUT": Phase.FAILED,
    "OUT_OF_MEMORY": Phase.FAILED,
    "NODE_FAIL": Phase.FAILED,
    "BOOT_FAIL": Phase.FAILED,
    "DEADLINE": Phase.FAILED,
    "PREEMPTED": Phase.FAILED,
    "SPECIAL_EXIT": Phase.FAILED,
    "REVOKED": Phase.CANCELLED,
    "CANCELLED": Phase.CANCELLED,
}

_SBATCH_ID = re.compile(r"^(?:Submitted batch job )?(\d+)(?:;\S+)?\s*$", re.MULTILINE)
_KEY = re.compile(r"^([A-Za-z][A-Za-z0-9_/:.]*)=(.*)$")
_RANGE = re.compile(r"^(\d+)(?:-(\d+))?$")
# One host or bracketed pattern ("gpu[01-04]-ib"), and a comma-separated list of them.
_ITEM = r"[^,\[\]]+(?:\[[^\[\]]*\][^,\[\]]*)*"
_HOSTLIST = re.compile(rf"{_ITEM}(?:,{_ITEM})*")


def job_state(text: str) -> Phase | None:
    """The phase of a Slurm job state word (``RUNNING``, ``CANCELLED by 0``), or None."""
    word = text.strip().split(" ", 1)[0].upper()
    return _JOB_STATES.get(word)


def sbatch_job_id(text: str) -> str | None:
    """The job id sbatch printed (``Submitted batch job 12`` or ``--parsable``'s ``12;c``)."""
    m = _SBATCH_ID.search(text)
    return m.group(1) if m else None


def kv_record(line: str, *, tail_key: str | None = "Reason") -> dict[str, str]:
    """One ``scontrol show -o`` record as a dict.

    Values may hold spaces (``Reason=admin: replace fan [root@...]``): a word
    without ``=`` continues the previous value. ``tail_key`` (node records end
    with ``Reason=``) takes everything after it verbatim, ``=`` signs included.
    """
    record: dict[str, str] = {}
    text = line.strip()
    if tail_key:
        marker = f" {tail_key}="
        at = text.find(marker)
        if at >= 0:
            record[tail_key] = text[at + len(marker) :].strip()
            text = text[:at]
    last: str | None = None
    for word in text.split():
        m = _KEY.match(word)
        if m:
            last = m.group(1)
            record[last] = m.group(2)
        elif last is not None:
            record[last] = f"{record[last]} {word}"
    return record


def records(text: str, *, tail_key: str | None = "Reason") -> list[dict[str, str]]:
    """Every non-empty line of ``scontrol show ... -o`` output as a record."""
    return [kv_record(line, tail_key=tail_key) for line in text.splitlines() if "=" in line]


@dataclass(frozen=True)
class NodeInfo:
    """A node as slurmctld sees it."""

    name: str
    state: str  # IDLE, ALLOCATED, MIXED, DOWN... (the base state)
    flags: frozenset[str]  # DRAIN, NOT_RESPONDING, FAIL, COMPLETING...
    reason: str  # without the trailing "[user@time]"
    gpus: int | None
    addr: str | None

    @property
    def drained(self) -> bool:
        """Drained or draining: no new jobs start here."""
        return "DRAIN" in self.flags

    @property
    def down(self) -> bool:
        """DOWN, failed or not answering slurmctld."""
        return self.state == "DOWN" or bool(self.flags & {"FAIL", "NOT_RESPONDING"})


def node_info(record: dict[str, str]) -> NodeInfo | None:
    """A NodeInfo from a ``scontrol show node -o`` record; None without name or state."""
    name, state = record.get("NodeName"), record.get("State")
    if not name or not state:
        return None
    parts = state.replace("*", "+NOT_RESPONDING").split("+")
    base = parts[0].upper()
    flags = frozenset(p.upper() for p in parts[1:] if p)
    return NodeInfo(
        name=name,
        state=base,
        flags=flags,
        reason=strip_reason_stamp(record.get("Reason", "")),
        gpus=gres_gpus(record.get("Gres", "")),
        addr=record.get("NodeAddr") or None,
    )


def strip_reason_stamp(reason: str) -> str:
    """``dolmen: x [root@2026-11-30T03:10:39]`` -> ``dolmen: x``."""
    text = reason.strip()
    if text.endswith("]") and " [" in text:
        text = text[: text.rindex(" [")]
    return "" if text == "(null)" else text


def gres_gpus(gres: str) -> int | None:
    """GPUs in a GRES string (``gpu:4``, ``gpu:a100:8(S:0-1)``, ``gpu:2,shard:8``); None if none."""
    total: int | None = None
    for item in re.split(r",(?![^()]*\))", gres.strip()):
        fields = re.sub(r"\(.*\)$", "", item.strip()).split(":")
        if fields[0] not in ("gpu", "gres/gpu") or len(fields) < 2:
            continue
        count = fields[-1]
        if count.isdigit():
            total = (total or 0) + int(count)
    return total


def expand_hostlist(text: str) -> list[str]:
    """``n[1-3,5],gpu01`` -> ``[n1, n2, n3, n5, gpu01]``, zero padding kept; [] if malformed."""
    hosts: list[str] = []
    text = text.strip()
    if _HOSTLIST.fullmatch(text) is None:
        return []
    for item in re.findall(_ITEM, text):
        expanded = _expand_one(item)
        if expanded is None:
            return []
        hosts.extend(expanded)
    return hosts


def _expand_one(item: str) -> list[str] | None:
    m = re.match(r"^([^\[]*)\[([^\]]*)\](.*)$", item)
    if not m:
        return [item] if item and "]" not in item else None
    prefix, ranges, rest = m.groups()
    tails = _expand_one(rest) if rest else [""]
    if tails is None:
        return None
    out: list[str] = []
    for part in ranges.split(","):
        r = _RANGE.match(part)
        if not r:
            return None
        lo, hi = r.group(1), r.group(2) or r.group(1)
        if int(hi) < int(lo) or int(hi) - int(lo) > 100_000:
            return None
        width = len(lo)
        out.extend(f"{prefix}{n:0{width}d}{t}" for n in range(int(lo), int(hi) + 1) for t in tails)
    return out


@dataclass(frozen=True)
class QueueRow:
    """One line of ``squeue -o SQUEUE_FORMAT``."""

    job_id: str
    state: str
    reason: str
    nodes: tuple[str, ...]
    name: str
    restarts: int


# squeue's %T state, %r reason, %N nodes, %j name; restarts come from scontrol.
SQUEUE_FORMAT = "%i|%T|%r|%N|%j"


def squeue_rows(text: str) -> list[QueueRow]:
    """Rows of ``squeue -h -o SQUEUE_FORMAT``; lines that do not fit are left out."""
    rows: list[QueueRow] = []
    for line in text.splitlines():
        parts = line.split("|")
        if len(parts) != 5 or not parts[0].strip():
            continue
        jid, state, reason, nodes, name = (p.strip() for p in parts)
        rows.append(QueueRow(jid, state, reason, tuple(expand_hostlist(nodes)), name, 0))
    return rows


SACCT_FIELDS = "JobID,JobName,State,ExitCode,NodeList"


@dataclass(frozen=True)
class AcctRow:
    """One allocation line of ``sacct -X -P -n -o SACCT_FIELDS``."""

    job_id: str
    name: str
    state: str
    exit_code: str
    nodes: tuple[str, ...]


def sacct_rows(text: str) -> list[AcctRow]:
    """Rows of ``sacct -X -P -n -o SACCT_FIELDS``; malformed lines are left out."""
    rows: list[AcctRow] = []
    for line in text.splitlines():
        parts = line.split("|")
        if len(parts) != 5 or not parts[0].strip():
            continue
        jid, name, state, code, nodes = parts
        nodelist = () if nodes in ("", "None assigned") else tuple(expand_hostlist(nodes))
        rows.append(AcctRow(jid.strip(), name, state.strip(), code.strip(), nodelist))
    return rows

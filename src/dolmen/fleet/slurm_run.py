"""``dolmen fleet validate --slurm``: the checks on every node through Slurm, then the drain
contract on what fails.

Slurm is the distributed engine: one ``srun`` step, one task per node
(``--ntasks-per-node=1``), each task running ``dolmen validate --json`` on its node and
printing its node's name first; ``--label`` tells the tasks' lines apart. No SSH loop.
Nodes Slurm will not start a task on (drained, down) are not validated: they are listed
with their state and reason, never judged. The verdicts go into the fleet store as one
collection; then ``dolmen.slurm.drain.decide`` (the same contract as the health check)
plans what to do per node: a dry run prints the plan, ``--drain`` applies it through
``drain_if_unhealthy`` (audit events included).
"""

from __future__ import annotations

import base64
import binascii
import shlex
import sys
import zlib
from collections.abc import Sequence
from dataclasses import dataclass, field

from dolmen.errors import UsageError
from dolmen.slurm.client import SlurmClient, command_error
from dolmen.slurm.parse import NodeInfo

MARK = "dolmen-fleet-node"
# A node whose every CPU is allocated (ALLOCATED) cannot take the task: srun would wait
# for it, and --immediate then fail the whole step. It is left out, named, instead.
ALLOCATABLE = ("IDLE", "MIXED")


@dataclass(frozen=True)
class Plan:
    """Pure: the srun argv for ``nodes``, and the nodes left out with why."""

    argv: tuple[str, ...]
    nodes: tuple[str, ...]
    left_out: tuple[tuple[str, str], ...] = ()


@dataclass
class TaskOutput:
    """What one srun task printed: its node (from MARK) and the rest of its stdout."""

    node: str | None = None
    stdout: list[str] = field(default_factory=list)
    stderr: list[str] = field(default_factory=list)


def remote_script(dolmen: Sequence[str], level: str, source: str | None) -> str:
    """The shell line each task runs: its node's name, then validate --json, gzipped and
    in base64 lines (srun --label cuts lines of over 1 KiB into labelled pieces, and a
    verdict is ~200 KB of JSON; gzip makes it ~15 KB). ``{node}`` in ``source`` becomes
    the node's name (a host tree per node, as the tests use)."""
    cmd = [shlex.quote(a) for a in (*dolmen, "validate", "--json", "--level", level)]
    if source:
        parts = [shlex.quote(p) if p else "" for p in source.split("{node}")]
        cmd += ["--from", '"$SLURMD_NODENAME"'.join(parts)]
    return f'echo "{MARK} $SLURMD_NODENAME"; ' + " ".join(cmd) + " | gzip -c | base64 -w 76"


def decode_task(lines: Sequence[str], limit: int = 64 << 20) -> bytes:
    """Pure: a task's base64 lines back to the verdict bytes; ValueError naming why not
    (the size bound stops a decompression bomb)."""
    try:
        packed = base64.b64decode("".join(line.strip() for line in lines), validate=True)
    except (binascii.Error, ValueError):
        raise ValueError("its output is not the base64 the task prints") from None
    z = zlib.decompressobj(wbits=31)  # gzip framing
    try:
        data = z.decompress(packed, limit + 1)
    except zlib.error as e:
        raise ValueError(f"its output is not gzip ({e})") from None
    if len(data) > limit:
        raise ValueError(f"its verdict is over {limit >> 20} MiB")
    if not z.eof:
        raise ValueError("its output was cut off (gzip stream incomplete)")
    return data


def allocatable(n: NodeInfo) -> bool:
    """Whether Slurm starts a task on ``n`` now: neither drained nor down, and IDLE or MIXED."""
    return not n.drained and not n.down and n.state in ALLOCATABLE


def srun_step(
    nodes: Sequence[str],
    *,
    per_node: int,
    kill_on_bad_exit: bool,
    wait_s: int,
    minutes: int,
    job_name: str,
    partition: str | None,
    gpus_per_node: int | None,
) -> list[str]:
    """Pure: the srun options of a fleet step (``fleet validate``, ``fleet collective``):
    ``per_node`` tasks on each of ``nodes``, their lines ``--label``-ed, ended by Slurm
    after ``minutes``. A busy or vanished node must not hold the whole fleet's run: srun
    gives up after ``wait_s``."""
    argv = ["srun", f"--nodes={len(nodes)}", f"--ntasks={len(nodes) * per_node}"]
    argv += [f"--ntasks-per-node={per_node}", f"--nodelist={','.join(nodes)}", "--label"]
    argv += [f"--kill-on-bad-exit={int(kill_on_bad_exit)}", f"--immediate={wait_s}"]
    argv += [f"--time={minutes}", f"--job-name={job_name}"]
    if partition:
        argv.append(f"--partition={partition}")
    if gpus_per_node:
        argv.append(f"--gpus-per-node={gpus_per_node}")
    return argv


def plan(
    nodes: Sequence[NodeInfo],
    *,
    partition: str | None,
    level: str = "quick",
    source: str | None = None,
    dolmen: Sequence[str] | None = None,
    gpus_per_node: int | None = None,
    wait_s: int = 30,
    time_limit_min: int = 10,
) -> Plan:
    """Pure: which nodes get a task, and the srun command that starts them."""
    run, left = [], []
    for n in sorted(nodes, key=lambda n: n.name):
        if not allocatable(n):
            state = "+".join([n.state, *sorted(n.flags)])
            left.append((n.name, f"{state}" + (f" ({n.reason})" if n.reason else "")))
        else:
            run.append(n.name)
    if not run:
        return Plan((), (), tuple(left))
    argv = srun_step(
        run,
        per_node=1,
        kill_on_bad_exit=False,
        wait_s=wait_s,
        minutes=time_limit_min,
        job_name="dolmen-fleet",
        partition=partition,
        gpus_per_node=gpus_per_node,
    )
    cmd = list(dolmen or (sys.executable, "-m", "dolmen.cli.main"))
    argv += ["sh", "-c", remote_script(cmd, level, source)]
    return Plan(tuple(argv), tuple(run), tuple(left))


def split_tasks(stdout: str, stderr: str) -> dict[int, TaskOutput]:
    """Pure: srun --label output, per task id (lines without a label are dropped)."""
    out: dict[int, TaskOutput] = {}
    for text, err in ((stdout, False), (stderr, True)):
        for line in text.splitlines():
            label, sep, rest = line.partition(": ")
            if not sep or not label.strip().isdigit():
                continue
            task = out.setdefault(int(label.strip()), TaskOutput())
            if err:
                task.stderr.append(rest)
            elif task.node is None and rest.startswith(MARK + " "):
                task.node = rest[len(MARK) + 1 :].strip() or None
            else:
                task.stdout.append(rest)
    return out


def partition_nodes(client: SlurmClient, partition: str | None) -> list[NodeInfo]:
    """The nodes of ``partition`` (default: the default partition), as slurmctld sees them."""
    cmd = ["sinfo", "-h", "-N", "-o", "%N %P"]
    res = client.run(cmd)
    if not res.ok:
        raise command_error(cmd, res)
    names: set[str] = set()
    parts: set[str] = set()
    for line in res.stdout.splitlines():
        name, _, part = line.strip().partition(" ")
        parts.add(part.rstrip("*"))
        if (partition and part.rstrip("*") == partition) or (not partition and part.endswith("*")):
            names.add(name)
    if partition and partition not in parts:
        raise UsageError(
            f"no partition {partition!r} in this cluster; valid: {', '.join(sorted(parts))}"
        )
    if not names:
        raise UsageError("this cluster has no default partition: give --partition P")
    return [n for n in client.nodes(sorted(names)) if n.name in names]

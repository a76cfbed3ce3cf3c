"""Health-aware recovery of a running Slurm job: detect a node fault, drain, requeue at once.

While the job runs, every ``poll_s`` seconds (``python -m dolmen.slurm.watch
JOBID``, or ``SlurmBackend.watcher(job_id).run()``, which ``dolmen jobs`` runs
beside a Slurm job):

1. ``scontrol show job``: the job's state, nodes and restart count;
2. ``scontrol show node``: a node of the job that is DOWN or not responding, or
   that dolmen's health check drained (reason ``dolmen: ...``), is a fault. A
   node an administrator drained is not: drain means "let running jobs finish";
3. a TCP connect to each node's slurmd (``probe``): refused (or two timeouts in
   a row) means slurmd died. The watcher sets that node DOWN with reason
   ``dolmen: slurmd not responding``: DOWN, not DRAIN, because a node whose
   slurmd is gone cannot run the job's epilog, and the job would stay
   COMPLETING until slurmctld declared the node down by itself (SlurmdTimeout);
4. on a fault: ``scontrol requeue``. The job keeps its id and comes back on the
   healthy nodes (``--requeue``), where the ranks resume from their last
   complete checkpoint (``dolmen.jobs.checkpoint``).

Plain Slurm would notice a dead node only after SlurmdTimeout, and never
requeues a job whose node its health check merely drained.
"""

from __future__ import annotations

import argparse
import sys
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from functools import partial

from dolmen.errors import DolmenError
from dolmen.report.reason import PREFIX
from dolmen.slurm import events, parse, probe
from dolmen.slurm.client import SlurmClient
from dolmen.slurm.drain import held_by_someone_else
from dolmen.slurm.events import T

SLURMD_PORT = 6818
SLURMD_DEAD = f"{PREFIX} slurmd not responding"


@dataclass(frozen=True)
class Fault:
    """A node of the job that cannot go on, and why."""

    node: str
    why: str


@dataclass(frozen=True)
class Recovery:
    """One requeue the watcher did."""

    at: float  # time.time()
    faults: tuple[Fault, ...]
    restarts_before: int
    requeued: bool  # False when Slurm had already requeued it (a DOWN node does that)


@dataclass
class RecoveryWatcher:
    """Watches one job; see the module docstring."""

    client: SlurmClient
    job_id: str
    poll_s: float = 1.0
    slurmd_port: int = SLURMD_PORT
    python: str = sys.executable
    probe_slurmd: bool = True
    max_restarts: int | None = None
    max_errors: int = 30  # consecutive failed polls before giving up
    log: Callable[[str], None] = field(default=lambda line: None)
    recoveries: list[Recovery] = field(default_factory=list)
    last: dict[str, str] = field(default_factory=dict)  # the job's latest scontrol record
    _handled: int | None = None  # restart count of the run already requeued
    _timeouts: dict[str, int] = field(default_factory=dict)

    def run(self, timeout: float | None = None) -> str:
        """Watch until the job ends (or ``timeout`` s pass); its final Slurm state."""
        deadline = None if timeout is None else time.monotonic() + timeout
        errors = 0
        while True:
            try:
                state = self.check_once()
                errors = 0
            except DolmenError as e:
                # slurmctld restarting, a command killed under load: try again, but a
                # controller gone for good ends the watch with its error.
                errors += 1
                self.log(f"poll failed ({errors}/{self.max_errors}): {e.message}")
                if errors >= self.max_errors:
                    raise
                state = None
            if state is not None:
                return state
            if deadline is not None and time.monotonic() > deadline:
                return "WATCH_TIMEOUT"
            time.sleep(self.poll_s)

    def check_once(self) -> str | None:
        """One poll: the job's final state when it has ended, else None."""
        record = self.client.job_record(self.job_id)
        if record is None:
            return "UNKNOWN"
        self.last = record
        raw = record.get("JobState", "")
        state = parse.job_state(raw)
        # NODE_FAIL and PREEMPTED end a run, not a --requeue job: it comes back PENDING.
        coming_back = raw in ("NODE_FAIL", "PREEMPTED") and record.get("Requeue") == "1"
        if state is not None and state.done and not coming_back:
            return raw
        restarts = int(record.get("Restarts", "0") or 0)
        if raw != "RUNNING" or self._handled == restarts:
            return None
        nodes = parse.expand_hostlist(record.get("NodeList", ""))
        faults = self.faults(nodes)
        if faults:
            self.recover(faults, restarts)
        return None

    def faults(self, nodes: Sequence[str]) -> list[Fault]:
        """The job's nodes that cannot go on."""
        infos = self.client.nodes(nodes) if nodes else []
        found: dict[str, Fault] = {}
        for n in infos:
            if n.down:
                found[n.name] = Fault(n.name, n.reason or "not responding to slurmctld")
            elif n.drained and n.reason.startswith(PREFIX):
                found[n.name] = Fault(n.name, n.reason)
        if self.probe_slurmd:
            for n in infos:
                if n.name in found or not n.addr:
                    continue
                result = self._probe(n.addr)
                if result == "ok":
                    self._timeouts.pop(n.name, None)
                    continue
                self._timeouts[n.name] = self._timeouts.get(n.name, 0) + 1
                # A refused connect is certain; a timeout may be a loaded network.
                if result == "refused" or self._timeouts[n.name] >= 2:
                    found[n.name] = Fault(n.name, SLURMD_DEAD)
                    if not held_by_someone_else(n):
                        self._act(
                            "nodes.drain",
                            events.node_target(n.name),
                            {"state": "down", "reason": SLURMD_DEAD, "job": self.job_id},
                            partial(self.client.set_node, n.name, "down", SLURMD_DEAD),
                        )
                        self.log(f"set {n.name} DOWN: {SLURMD_DEAD}")
        return list(found.values())

    def recover(self, faults: Sequence[Fault], restarts: int) -> Recovery | None:
        """Requeue the job after ``faults`` (unless max_restarts is reached)."""
        self._handled = restarts
        what = "; ".join(f"{f.node}: {f.why}" for f in faults)
        if self.max_restarts is not None and restarts >= self.max_restarts:
            self.log(f"job {self.job_id}: {what}; not requeued: {restarts} restarts already")
            return None
        requeued = self._act(
            "jobs.restart",
            f"slurm:{self.job_id}",
            {"faults": [f.__dict__ for f in faults], "restart": restarts + 1},
            lambda: self.client.requeue(self.job_id),
        )
        rec = Recovery(time.time(), tuple(faults), restarts, requeued)
        self.recoveries.append(rec)
        self.log(f"job {self.job_id}: {what}; requeued (restart {restarts + 1})")
        return rec

    def _act(self, action: str, target: str, details: dict[str, object], do: Callable[[], T]) -> T:
        """Ask Slurm through ``do``, recorded as intent then outcome (events.acting)."""
        result, lost = events.acting(action, target, details, do, actor=events.WATCHER)
        if lost:
            self.log(f"{action} {target} not audited: {lost}")
        return result

    def _probe(self, addr: str) -> str:
        target = f"{addr}:{self.slurmd_port}"
        res = self.client.run([self.python, "-m", "dolmen.slurm.probe", target], timeout=10)
        return probe.parse_output(res.stdout).get(target, "error: probe did not run")


def ending(final: str, record: Mapping[str, str]) -> str:
    """How a job ended, in one line: the state, then (from its last ``scontrol show job``
    record) the exit code, the restarts, the nodes of the last run and Slurm's reason.

    A FAILED job's ExitCode says whether a rank failed (``1:0``) or the step was killed
    (``143:0``: srun's --kill-on-bad-exit after another rank died)."""
    parts = [final]
    if record.get("ExitCode"):
        parts.append(f"exit {record['ExitCode']}")
    restarts = record.get("Restarts", "")
    if restarts.isdigit():
        parts.append(f"after {restarts} restart{'' if restarts == '1' else 's'}")
    nodes = record.get("NodeList", "")
    if nodes and nodes != "(null)":
        parts.append(f"on {nodes}")
    reason = record.get("Reason", "")
    if reason and reason not in ("None", "(null)"):
        parts.append(f"reason {reason}")
    return ", ".join(parts)


def main(argv: list[str] | None = None) -> int:
    """``python -m dolmen.slurm.watch JOBID [--prefix ARG]... [--env K=V]...``"""
    p = argparse.ArgumentParser(prog="python -m dolmen.slurm.watch")
    p.add_argument("job_id")
    p.add_argument("--prefix", action="append", default=[], help="argv prefix of Slurm commands")
    p.add_argument("--env", action="append", default=[], help="K=V for Slurm commands")
    p.add_argument("--poll", type=float, default=1.0)
    p.add_argument("--max-restarts", type=int, default=None)
    p.add_argument("--timeout", type=float, default=None)
    args = p.parse_args(argv)
    from dolmen.host import open_host

    env = dict(kv.split("=", 1) for kv in args.env if "=" in kv)
    client = SlurmClient(open_host(None), prefix=args.prefix, env=env)

    def log(line: str) -> None:
        print(f"{time.strftime('%H:%M:%S')} dolmen watch: {line}", flush=True)

    watcher = RecoveryWatcher(
        client, args.job_id, poll_s=args.poll, max_restarts=args.max_restarts, log=log
    )
    try:
        final = watcher.run(args.timeout)
    except DolmenError as e:
        print(f"dolmen watch: error: {e.message}", file=sys.stderr)
        return int(e.exit_code)
    log(f"job {args.job_id} ended: {ending(final, watcher.last)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())

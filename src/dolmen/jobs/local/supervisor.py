"""The local job supervisor: start the ranks, watch them and the GPUs, recover.

``python -m dolmen.jobs.local.supervisor --job ID`` runs detached (``LocalBackend.submit``
starts it with ``dolmen.host.process.spawn_detached``) until the job ends:

1. place the ranks on healthy free GPUs (``placement.place``), waiting while other
   jobs hold them; audit ``jobs.gpu_allocate``;
2. start one process per rank with the rank environment, output appended to
   ``<state dir>/jobs/<id>/rank-<r>.log``;
3. watch: a rank that exits non-zero or dies by a signal, or a GPU the job uses
   that the quick gpu checks find unhealthy (``health.judge`` every
   ``health_interval`` seconds), is a fault; so is the time limit (not retried);
4. on a fault stop every rank (SIGTERM, then SIGKILL after ``stop_grace``), leave
   the bad GPU out for the rest of the job, and restart from the latest complete
   checkpoint with DOLMEN_RESTART_COUNT + 1 (audit ``jobs.restart``), up to
   ``max_restarts`` times; then fail with the reason (audit ``jobs.fail``).

Stopping the ranks stops the job's whole process tree (``tree.py``): the
supervisor is a child subreaper, each rank joins the job's cgroup where the machine
allows and carries the job's marker, so what the ranks forked goes with them; a new
supervisor of the same job first kills what an earlier one left behind.
"""

from __future__ import annotations

import argparse
import os
import signal
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from dolmen.errors import DolmenError
from dolmen.host.process import (
    Child,
    JobTree,
    SpawnError,
    become_subreaper,
    free_port,
    reap_orphans,
    spawn,
)
from dolmen.jobs import checkpoint
from dolmen.jobs.audit import SUPERVISOR, audit
from dolmen.jobs.backend import JobState
from dolmen.jobs.env import rank_env
from dolmen.jobs.local import isolation
from dolmen.jobs.local.health import GpuHealth, judge
from dolmen.jobs.local.placement import NoRoom, Placement, Slot, place
from dolmen.jobs.local.store import JobStore, RankRow
from dolmen.jobs.local.tree import MARKER_ENV, tree
from dolmen.values.duration import human

if TYPE_CHECKING:
    from dolmen.crypt.scratch import Scratch


@dataclass(frozen=True)
class Options:
    """How the supervisor watches; stored with the job (``LocalBackend`` options)."""

    health_from: str | None = None  # a host tree to judge instead of this host (tests)
    health_interval: float = 15.0  # seconds between gpu health checks
    poll: float = 0.1  # seconds between looks at the ranks
    stop_grace: float = 10.0  # seconds between SIGTERM and SIGKILL
    wait_poll: float = 1.0  # seconds between tries while GPUs are busy

    @classmethod
    def from_mapping(cls, raw: dict[str, Any]) -> Options:
        """Options from the job's stored JSON (unknown keys ignored)."""
        known = {k: raw[k] for k in cls.__dataclass_fields__ if raw.get(k) is not None}
        return cls(**known)


@dataclass(frozen=True)
class Fault:
    """Why an attempt ended early; ``bad`` GPUs are left out of the next one."""

    reason: str
    bad: dict[int, str]
    retry: bool = True


class Supervisor:
    """Runs one job to its end (module docstring)."""

    def __init__(self, store: JobStore, job_id: int) -> None:
        self.store = store
        self.id = job_id
        job = store.get(job_id)
        self.spec = job.spec
        self.user = job.user
        self.opts = Options.from_mapping(dict(job.options))
        self.children: list[tuple[Slot, Child]] = []
        self.signalled: int | None = None
        self.noted: set[str] = set()
        self.tree: JobTree | None = tree(job)
        self.marker = str(job.options.get("marker") or "")
        self.isolation: isolation.Isolation | None = None
        self.scratch: Scratch | None = None  # an encrypted checkpoint folder (docs/crypt.md)

    # --- the loop --------------------------------------------------------------------
    def run(self) -> JobState:
        """Run the job until it completes, fails or is cancelled; returns the final state."""
        for sig in (signal.SIGTERM, signal.SIGINT):
            signal.signal(sig, self._on_signal)
        signal.signal(signal.SIGHUP, signal.SIG_IGN)
        become_subreaper()
        self.store.update(self.id, supervisor_pid=os.getpid())
        self._event("supervisor", f"pid {os.getpid()}")
        if self.tree is not None:  # what an earlier supervisor of this job left behind
            earlier = self.tree.pids()
            if earlier:
                self._event("cleanup", f"killing {len(earlier)} processes left by an earlier run")
                self.tree.kill(self.opts.stop_grace)
        # No rank starts before the job's network isolation is in place (net/jobs.py).
        self.isolation = isolation.begin(self.store, self.id, self._event)
        if self.spec.scratch is not None:  # an encrypted checkpoint folder (docs/crypt.md)
            from dolmen.crypt.scratch import open_job_scratch

            try:
                self.scratch = open_job_scratch(
                    self.spec.scratch, self.spec.checkpoint_dir, str(self.id)
                )
            except DolmenError as e:
                return self._finish(JobState.FAILED, f"encrypted scratch: {e}")
        while True:
            placement = self._allocate()
            if placement is None:
                return self.store.get(self.id).state
            restarts = self.store.get(self.id).restarts
            fault = self._start(placement, restarts)
            if fault is None:
                fault = self._watch(placement)
            self._stop_ranks()
            if fault is None:
                return self._finish(JobState.COMPLETED, "all ranks exited 0")
            if self._cancelled():
                return self._finish(JobState.CANCELLED, self._cancel_reason())
            job = self.store.get(self.id)
            if fault.bad:
                self.store.update(self.id, excluded={**job.excluded, **fault.bad})
            if not fault.retry or job.restarts >= self.spec.max_restarts:
                left = "" if not fault.retry else f"; no restarts left (max {job.restarts})"
                return self._finish(JobState.FAILED, fault.reason + left)
            self._restart(job.restarts + 1, fault)

    def _allocate(self) -> Placement | None:
        waited = ""
        while True:
            if self._cancelled():
                self._finish(JobState.CANCELLED, self._cancel_reason())
                return None
            job = self.store.get(self.id)
            healthy: list[int] = []
            if self.spec.gpus_per_node:
                health = self._health()
                healthy = [g for g in health.healthy if g not in job.excluded]
            result: Placement | NoRoom = NoRoom("not placed", wait=True)

            def choose(busy: Any, healthy: list[int] = healthy) -> tuple[int, ...] | None:
                nonlocal result
                result = place(self.spec, healthy, busy)
                return result.gpus if isinstance(result, Placement) else None

            self.store.claim(self.id, choose)
            if isinstance(result, Placement):
                if result.nodes != job.nodes:
                    self._event("elastic", f"running on {result.nodes} of {self.spec.nodes} nodes")
                    self.store.update(self.id, nodes=result.nodes)
                if result.gpus:
                    gpus = ",".join(map(str, result.gpus))
                    self._event("allocate", f"GPUs {gpus}")
                    self._audit("jobs.gpu_allocate", gpus=list(result.gpus))
                return result
            if not result.wait:
                why = "; ".join(f"GPU {g} left out: {r}" for g, r in sorted(job.excluded.items()))
                self._finish(JobState.FAILED, result.reason + (f" ({why})" if why else ""))
                return None
            if result.reason != waited:
                waited = result.reason
                self.store.update(self.id, state=JobState.PENDING, reason=result.reason)
                self._event("waiting", result.reason)
            time.sleep(self.opts.wait_poll)

    def _nccl_env(self) -> dict[str, str]:
        """This host's NCCL variables for GPU ranks (none with /etc/nccl.conf; the job's
        and the environment's own win): ``dolmen.nccl.site.launch_env``."""
        if not self.spec.gpus_per_node:
            return {}
        from dolmen.host import open_host
        from dolmen.nccl.site import launch_env

        with open_host() as host:
            return launch_env(host)

    def _start(self, placement: Placement, restarts: int) -> Fault | None:
        port = free_port()
        folder = self.store.job_dir(self.id)
        folder.mkdir(parents=True, exist_ok=True)
        base = {**self._nccl_env(), **os.environ, **self.spec.env}
        if self.marker:
            base[MARKER_ENV] = self.marker
        cgroup = self.tree.make_cgroup() if self.tree is not None else None
        rows: list[RankRow] = []
        for slot in placement.slots:
            # Starting many ranks takes time: a cancel must not wait for the last one.
            if self.signalled is not None or (slot.rank % 16 == 15 and self._cancelled()):
                self.store.set_ranks(self.id, rows)
                return Fault(self._cancel_reason(), {}, retry=False)
            env = rank_env(
                job_id=str(self.id),
                rank=slot.rank,
                local_rank=slot.local_rank,
                node_rank=slot.node,
                world_size=placement.world_size,
                local_world_size=self.spec.ranks_per_node,
                num_nodes=placement.nodes,
                master_addr="127.0.0.1",
                master_port=port,
                restart_count=restarts,
                checkpoint_dir=self.spec.checkpoint_dir,
                gpus=slot.gpus,
            )
            log = folder / f"rank-{slot.rank}.log"
            gpus = ",".join(map(str, slot.gpus)) or "none"
            with open(log, "a") as f:
                f.write(
                    f"--- dolmen: job {self.id} rank {slot.rank} attempt {restarts}"
                    f" node {slot.node} GPUs {gpus} at {time.strftime('%Y-%m-%dT%H:%M:%S')} ---\n"
                )
            try:
                child = spawn(
                    self.spec.command,
                    env={**base, **env},
                    cwd=self.spec.workdir,
                    log=log,
                    cgroup=cgroup,
                )
            except SpawnError as e:
                return Fault(f"rank {slot.rank} could not start: {e.strerror}", {}, retry=False)
            self.children.append((slot, child))
            rows.append(
                RankRow(slot.rank, slot.node, slot.local_rank, slot.gpus, child.pid, None, restarts)
            )
        self.store.set_ranks(self.id, rows)
        self.store.update(self.id, state=JobState.RUNNING, reason="")
        self._event("running", f"{len(rows)} ranks, attempt {restarts}")
        return None

    def _watch(self, placement: Placement) -> Fault | None:
        started = time.monotonic()
        next_health = started + self.opts.health_interval
        next_reap = started + 1.0
        limit = self.spec.time_limit_s
        while True:
            if self._cancelled():
                return Fault(self._cancel_reason(), {}, retry=False)
            codes = [(slot, child.poll()) for slot, child in self.children]
            failed = [(s, c) for s, c in codes if c is not None and c != 0]
            if failed:
                # Ranks usually fail together (a peer's death breaks the collective); the one
                # killed by a signal is the cause, the ones that exited with an error its echo.
                slot, code = min(failed, key=lambda f: (f[1] >= 0, f[0].rank))
                assert code is not None
                return Fault(f"rank {slot.rank} {_describe_exit(code)}", {})
            if all(c == 0 for _, c in codes):
                return None
            now = time.monotonic()
            if now >= next_reap:  # adopted orphans that exited: a subreaper collects them
                next_reap = now + 1.0
                reap_orphans({child.pid for _, child in self.children})
            if limit is not None and now - started >= limit:
                return Fault(f"time limit {human(limit)} reached", {}, retry=False)
            if placement.gpus and now >= next_health:
                next_health = now + self.opts.health_interval
                health = self._health()
                bad = {g: r for g, r in health.bad.items() if g in placement.gpus}
                if bad:
                    what = "; ".join(f"GPU {g}: {r}" for g, r in sorted(bad.items()))
                    return Fault(f"unhealthy GPU in use: {what}", bad)
            time.sleep(self.opts.poll)

    def _stop_ranks(self) -> None:
        """SIGTERM every rank's process group, then SIGKILL what is left after the grace."""
        live = [(s, c) for s, c in self.children if c.poll() is None]
        for _, child in live:
            child.signal(signal.SIGTERM)
        deadline = time.monotonic() + self.opts.stop_grace
        while live and time.monotonic() < deadline:
            live = [(s, c) for s, c in live if c.poll() is None]
            time.sleep(0.02)
        for _, child in live:
            child.signal(signal.SIGKILL)
            child.wait(5)
        if self.tree is not None:  # what the ranks forked, wherever it went
            ranks = [c.pid for _, c in self.children]
            left = self.tree.kill(0.0 if live else self.opts.stop_grace, keep=ranks)
            if left:
                self._event("stop", f"processes still alive after SIGKILL: {sorted(left)}")
        if self.children:
            attempt = self.store.get(self.id).restarts
            self.store.set_ranks(
                self.id,
                [
                    RankRow(s.rank, s.node, s.local_rank, s.gpus, c.pid, c.poll(), attempt)
                    for s, c in self.children
                ],
            )
        self.children = []

    def _restart(self, count: int, fault: Fault) -> None:
        ckpt = checkpoint.latest(self.spec.checkpoint_dir) if self.spec.checkpoint_dir else None
        where = f"checkpoint step {ckpt.step}" if ckpt else "the start (no complete checkpoint)"
        self._audit("jobs.restart", restart=count, fault=fault.reason, resume_from=where)
        self.store.update(
            self.id,
            restarts=count,
            state=JobState.RESTARTING,
            reason=fault.reason,
            gpus=[],
        )
        self._event(
            "restart", f"{count}/{self.spec.max_restarts} after: {fault.reason}; from {where}"
        )

    def _finish(self, state: JobState, reason: str) -> JobState:
        if self.scratch is not None:  # the key goes whatever the outcome: crypto-shredding
            from dolmen.crypt.scratch import close_job_scratch

            close_job_scratch(self.scratch)
        # The audit event first: whoever sees the final state can find its event.
        if state is JobState.FAILED:
            self._audit("jobs.fail", reason=reason, outcome="failure")
        self.store.update(self.id, state=state, reason=reason, gpus=[])
        self._event(state.value, reason)
        return state

    # --- helpers -----------------------------------------------------------------------
    def _health(self) -> GpuHealth:
        from dolmen.host import open_host

        try:
            with open_host(self.opts.health_from) as host:
                health = judge(host)
        except Exception as e:  # an unreadable tree must not kill the job
            health = GpuHealth((), {}, (f"cannot read the host: {e}",))
        for why in health.undecided:
            if why not in self.noted:
                self.noted.add(why)
                self._event("health", f"cannot decide, keep running: {why}")
        return health

    def _cancelled(self) -> bool:
        return self.signalled is not None or self.store.get(self.id).cancel_requested

    def _cancel_reason(self) -> str:
        if self.store.get(self.id).cancel_requested:
            return "cancelled by the user"
        return f"supervisor stopped by {signal.Signals(self.signalled or 15).name}"

    def _on_signal(self, signum: int, frame: object) -> None:
        self.signalled = signum

    def _event(self, kind: str, message: str) -> None:
        self.store.event(self.id, kind, message)
        print(f"{time.strftime('%H:%M:%S')} job {self.id} {kind}: {message}", flush=True)

    def _audit(self, action: str, outcome: str = "success", **details: Any) -> None:
        why = audit(
            action,
            f"job {self.id}",
            outcome=outcome,
            details={"backend": "local", "user": self.user, "name": self.spec.name, **details},
            actor=SUPERVISOR,
            fail_closed=False,
        )
        if why:
            self._event("audit", f"{action} not recorded: {why}")


def _describe_exit(code: int) -> str:
    if code < 0:
        try:
            return f"killed by {signal.Signals(-code).name}"
        except ValueError:
            return f"killed by signal {-code}"
    return f"exited with code {code}"


def main(argv: list[str] | None = None) -> int:
    """Entry point of the detached supervisor."""
    parser = argparse.ArgumentParser(prog="python -m dolmen.jobs.local.supervisor")
    parser.add_argument("--job", type=int, required=True)
    parser.add_argument("--state-dir", type=Path, default=None)
    args = parser.parse_args(argv)
    store = JobStore(args.state_dir)
    sup = Supervisor(store, args.job)
    try:
        state = sup.run()
    except DolmenError as e:  # the network isolation refused (no rank ran), or the store
        sup._stop_ranks()
        sup._finish(JobState.FAILED, e.message)
        return int(e.exit_code)
    except BaseException as e:  # leave a reason behind, then let the traceback show in the log
        sup._stop_ranks()
        sup._finish(JobState.FAILED, f"supervisor error: {e.__class__.__name__}: {e}")
        raise
    finally:
        isolation.end(sup.isolation, sup._event)
        if sup.tree is not None:  # the ranks are reaped now: their cgroup can go
            sup.tree.release()
    return 0 if state is JobState.COMPLETED else 1


if __name__ == "__main__":
    sys.exit(main())

"""The local backend: ranks as processes on this host, watched by a detached supervisor.

A job's "nodes" are rank groups on this one host (``placement``), each with its
share of the host's GPUs, or CPU-only ranks on a host without GPUs
(``--gpus-per-node 0 --procs-per-node N``). State lives in SQLite
(``store.JobStore``); the supervisor (``supervisor.py``) survives the CLI.
"""

from __future__ import annotations

import json
import os
import signal
import sys
import time
from collections.abc import Iterator
from dataclasses import replace
from pathlib import Path
from typing import Any, NoReturn

from dolmen.errors import ServiceUnavailable, UsageError
from dolmen.jobs.backend import Backend, JobState, JobStatus, Option, Plan
from dolmen.jobs.env import rank_env
from dolmen.jobs.local.placement import Placement, place
from dolmen.jobs.local.store import ACTIVE, JobRow, JobStore
from dolmen.jobs.quota import QuotaStore, check, current_user
from dolmen.jobs.spec import JobSpec

HEALTH_FROM_ENV = "DOLMEN_JOBS_HEALTH_FROM"
START_TIMEOUT_S = 15.0
# One host forks every rank: past this, a typo in --procs-per-node or --nodes forks
# without limit (issue 9 case 9). Far above the GPUs (and data loaders) of one host.
MAX_LOCAL_RANKS = 512


class LocalBackend(Backend):
    """Runs jobs on this host (module docstring)."""

    name = "local"
    OPTIONS = (
        Option(
            "state_dir", "the job store's folder (default: $DOLMEN_STATE_DIR/jobs)", config="state"
        ),
        Option(
            "health_from",
            "judge GPU health from this host tree instead of this host (drills, tests)",
            flag="--health-from",
            metavar="PATH",
        ),
    )

    def __init__(
        self,
        state_dir: str | Path | None = None,
        *,
        health_from: str | None = None,
        health_interval: float | None = None,
        poll: float | None = None,
        stop_grace: float | None = None,
    ) -> None:
        self.state_dir = Path(state_dir) if state_dir else None
        self.options: dict[str, Any] = {
            "health_from": health_from or os.environ.get(HEALTH_FROM_ENV) or None,
            "health_interval": health_interval,
            "poll": poll,
            "stop_grace": stop_grace,
        }
        self._store: JobStore | None = None

    @property
    def store(self) -> JobStore:
        """The job store, opened on first use (EnvironmentProblem if the folder is unusable)."""
        if self._store is None:
            self._store = JobStore(self.state_dir)
        return self._store

    # --- plan ------------------------------------------------------------------------
    def plan(self, spec: JobSpec) -> Plan:
        spec.check()
        if spec.world_size > MAX_LOCAL_RANKS:
            raise UsageError(
                f"the job asks for {spec.world_size} ranks ({spec.nodes} nodes x"
                f" {spec.ranks_per_node}); the local backend starts at most {MAX_LOCAL_RANKS}",
                hint="ask for fewer --nodes or --procs-per-node, or use the slurm backend",
            )
        layout = place(spec, list(range(spec.total_gpus)), {})
        assert isinstance(layout, Placement)
        rows = [f"{'RANK':>4} {'NODE':>4} {'LOCAL':>5}  {'GPUS':<10} COMMAND"]
        command = " ".join(_quote(a) for a in spec.command)
        for slot in layout.slots:
            gpus = ",".join(map(str, slot.gpus)) or "none"
            rows.append(f"{slot.rank:>4} {slot.node:>4} {slot.local_rank:>5}  {gpus:<10} {command}")
        env = rank_env(
            job_id="<id>",
            rank="<RANK>",
            local_rank="<LOCAL>",
            node_rank="<NODE>",
            world_size=spec.world_size,
            local_world_size=spec.ranks_per_node,
            num_nodes=spec.nodes,
            master_addr="127.0.0.1",
            master_port="<free port, chosen at each start>",
            restart_count="<restarts so far>",
            checkpoint_dir=spec.checkpoint_dir,
            gpus=() if not spec.gpus_per_node else None,
        )
        if spec.gpus_per_node:
            env["CUDA_VISIBLE_DEVICES"] = "<GPUS>"
            env["CUDA_DEVICE_ORDER"] = "PCI_BUS_ID"
        env.update(spec.env)
        env_text = "".join(f"{k}={v}\n" for k, v in sorted(env.items()))
        gpus = (
            f"{spec.total_gpus} GPUs (shown for an idle host; the supervisor picks healthy free"
            " ones at each start)"
            if spec.gpus_per_node
            else "no GPU"
        )
        summary = (
            f"local: {spec.world_size} processes in {spec.nodes} rank group(s) on this host,"
            f" {gpus}; restarts up to {spec.max_restarts}"
        )
        return Plan(
            self.name,
            spec,
            {"process-table.txt": "\n".join(rows) + "\n", "environment.txt": env_text},
            summary,
        )

    # --- submit (Backend.submit runs these in order) ---------------------------------
    def resolve(self, spec: JobSpec) -> JobSpec:
        """The submitting user and working directory, kept with the job."""
        return replace(spec, user=spec.user or current_user(), workdir=spec.workdir or os.getcwd())

    def preflight(self, plan: Plan) -> None:
        spec = plan.spec
        _check_command(spec, spec.workdir or os.getcwd())
        self._check_gpus(spec)

    def schedule(self, plan: Plan) -> JobStatus:
        """Store the job (the quota check in the same transaction: two submissions cannot
        both slip under a limit), then start its supervisor."""
        from dolmen.jobs.local.tree import new_marker

        spec = plan.spec
        user = spec.user or current_user()
        quotas = self.quotas()
        options = {k: v for k, v in self.options.items() if v is not None}
        job_id = self.store.create(
            spec,
            user,
            {**options, "marker": new_marker()},
            before=lambda: check(quotas, spec, user),
        )
        self._start_supervisor(job_id, spec.workdir or os.getcwd())
        return self.status(str(job_id))

    def _check_gpus(self, spec: JobSpec) -> None:
        if not spec.gpus_per_node:
            return
        from dolmen.host import open_host
        from dolmen.jobs.local.health import inventory

        with open_host(self.options["health_from"]) as host:
            gpus, why = inventory(host)
        need = (spec.min_nodes if spec.elastic else spec.nodes) * spec.gpus_per_node
        if need > len(gpus):
            have = f"{len(gpus)}" + (f" ({why})" if why else "")
            raise UsageError(
                f"the job needs {need} GPUs ({spec.nodes} nodes x {spec.gpus_per_node});"
                f" this host has {have}",
                hint="ask for fewer GPUs, or run a CPU job: --gpus-per-node 0 --procs-per-node N",
            )

    def _start_supervisor(self, job_id: int, workdir: str) -> None:
        from dolmen.host.process import SpawnError, spawn_detached

        store = self.store
        log = store.job_dir(job_id) / "supervisor.log"
        argv = [sys.executable, "-m", "dolmen.jobs.local.supervisor", "--job", str(job_id)]
        argv += ["--state-dir", str(store.root.parent)]
        try:
            pid = spawn_detached(argv, env=dict(os.environ), cwd=workdir, log=log)
        except SpawnError as e:
            self._give_up(job_id, f"supervisor could not start: {e.strerror}")
        deadline = time.monotonic() + START_TIMEOUT_S
        from dolmen.host.process import pid_alive

        while time.monotonic() < deadline:
            if store.get(job_id).supervisor_pid:
                return
            if not pid_alive(pid):
                break
            time.sleep(0.02)
        tail = _tail(log)
        self._give_up(
            job_id, f"supervisor (pid {pid}) did not start" + (f": {tail}" if tail else "")
        )

    def _give_up(self, job_id: int, reason: str) -> NoReturn:
        self.store.update(job_id, state=JobState.FAILED, reason=reason, gpus=[])
        self.store.event(job_id, "failed", reason)
        raise ServiceUnavailable(reason, hint=f"see {self.store.job_dir(job_id)}/supervisor.log")

    # --- status, list, cancel, logs ---------------------------------------------------------
    def status(self, job_id: str) -> JobStatus:
        return self._status(self._reconcile(self.store.get(job_id)))

    def list(self) -> list[JobStatus]:
        return [status for _, status in self.entries()]

    def entries(self) -> Iterator[tuple[JobRow, JobStatus]]:
        """Every job, newest first, from one read of the store: its row and its status."""
        for job in self.store.jobs():
            job = self._reconcile(job)
            yield job, self._status(job)

    def cancel(self, job_id: str) -> JobStatus:
        from dolmen.jobs.audit import change

        job = self._reconcile(self.store.get(job_id))
        if job.state.done:
            return self._status(job)
        details = {"backend": self.name, "user": job.user, "name": job.spec.name}
        with change("jobs.cancel", f"job {job.id}", details) as extra:
            left = self._cancel(job)
            if left:
                extra["survivors"] = sorted(left)
        return self.status(str(job.id))

    def _cancel(self, job: JobRow) -> set[int]:
        """Ask the supervisor to stop the job, wait for it (bounded), then kill whatever of
        the job's tree is left, with or without a supervisor; the pids that survived."""
        from dolmen.host.process import pid_alive, send_signal
        from dolmen.jobs.local.tree import tree

        self.store.request_cancel(job.id)
        grace = float(job.options.get("stop_grace") or 10.0)
        pid = job.supervisor_pid
        if pid and send_signal(pid, signal.SIGTERM):
            deadline = time.monotonic() + grace + 10.0
            while time.monotonic() < deadline and pid_alive(pid):
                if self.store.get(job.id).state.done:
                    break
                time.sleep(0.05)
        procs = tree(job)
        left = procs.kill(grace) if procs is not None else set()
        job = self.store.get(job.id)
        if not job.state.done:  # no supervisor to do it: stop the ranks here
            for r in self.store.ranks(job.id):
                if r.pid and r.exit_code is None:
                    send_signal(r.pid, signal.SIGKILL)
            self.store.update(
                job.id, state=JobState.CANCELLED, reason="cancelled by the user", gpus=[]
            )
            self.store.event(job.id, "cancelled", "cancelled by the user (no live supervisor)")
        return left

    def logs(self, job_id: str, *, rank: int | None = None, follow: bool = False) -> Iterator[str]:
        job = self.store.get(job_id)
        folder = self.store.job_dir(job.id)
        if rank is not None and rank not in range(job.spec.world_size):
            raise UsageError(f"job {job.id} has no rank {rank}; ranks: 0-{job.spec.world_size - 1}")
        ranks = [rank] if rank is not None else list(range(job.spec.world_size))
        offsets = dict.fromkeys(ranks, 0)
        partial = dict.fromkeys(ranks, "")
        while True:
            for r in ranks:
                path = folder / f"rank-{r}.log"
                try:
                    with open(path, "rb") as f:
                        f.seek(offsets[r])
                        data = f.read()
                except FileNotFoundError:
                    continue
                offsets[r] += len(data)
                text = partial[r] + data.decode("utf-8", errors="replace")
                *lines, partial[r] = text.split("\n")
                for line in lines:
                    yield line if rank is not None else f"[rank {r}] {line}"
            if not follow:
                break
            if self._reconcile(self.store.get(job.id)).state.done:
                follow = False  # one more pass for what the ranks wrote last
                continue
            time.sleep(0.2)
        for r in ranks:
            if partial[r]:
                yield partial[r] if rank is not None else f"[rank {r}] {partial[r]}"

    def quotas(self) -> QuotaStore:
        from dolmen.jobs.local.accounts import LocalQuotaStore

        return LocalQuotaStore(self.store)

    # --- helpers -------------------------------------------------------------------------
    def _reconcile(self, job: JobRow) -> JobRow:
        """A job whose supervisor died without a word is failed, and says so."""
        from dolmen.host.process import pid_alive

        if job.state not in ACTIVE:
            return job
        pid = job.supervisor_pid
        if pid is not None and pid_alive(pid):
            return job
        if pid is None and time.time() - job.created < START_TIMEOUT_S:
            return job
        fresh = self.store.get(job.id)  # it may have finished between the two reads
        if fresh.state not in ACTIVE:
            return fresh
        from dolmen.jobs.local.tree import tree

        # Its ranks' children may still run on the GPUs the store is about to free.
        procs = tree(job)
        left = procs.kill(float(job.options.get("stop_grace") or 10.0)) if procs else set()
        reason = f"supervisor (pid {pid}) is gone; see supervisor.log"
        if left:
            reason += f"; processes that would not die: {sorted(left)}"
        self.store.update(job.id, state=JobState.FAILED, reason=reason, gpus=[])
        self.store.event(job.id, "failed", reason)
        return self.store.get(job.id)

    def _status(self, job: JobRow) -> JobStatus:
        ranks = self.store.ranks(job.id)
        details = {
            "user": job.user,
            "created": time.strftime("%Y-%m-%dT%H:%M:%S", time.localtime(job.created)),
            "world_size": str(sum(1 for _ in ranks) or job.spec.world_size),
            "gpus": ",".join(map(str, job.gpus)) or "none",
            "logs": str(self.store.job_dir(job.id)),
            "ranks_running": str(sum(1 for r in ranks if r.pid and r.exit_code is None)),
        }
        if job.excluded:
            details["excluded_gpus"] = json.dumps({str(k): v for k, v in job.excluded.items()})
        if job.supervisor_pid:
            details["supervisor_pid"] = str(job.supervisor_pid)
        return JobStatus(
            job_id=str(job.id),
            name=job.spec.name,
            backend=self.name,
            state=job.state,
            restarts=job.restarts,
            nodes=tuple(f"local:{n}" for n in range(job.nodes)),
            reason=job.reason,
            details=details,
        )


def _check_command(spec: JobSpec, workdir: str) -> None:
    from dolmen.host.process import find_executable

    if not spec.command:
        raise UsageError("no command given", hint="put the command after `--`")
    if not Path(workdir).is_dir():
        why = "does not exist" if not os.path.lexists(workdir) else "is not a folder"
        raise UsageError(f"working directory {workdir} {why}")
    path = spec.env.get("PATH", os.environ.get("PATH", ""))
    name = spec.command[0]
    if find_executable(name, path=path, cwd=workdir) is None:
        where = f"in {workdir}" if "/" in name else "on PATH"
        raise UsageError(
            f"command {name!r} not found {where}, or not executable",
            hint="give the full path of the program, or fix PATH",
        )


def _tail(path: Path, lines: int = 3) -> str:
    try:
        text = path.read_text(errors="replace").strip().splitlines()
    except OSError:
        return ""
    return " | ".join(text[-lines:])


def _quote(arg: str) -> str:
    import shlex

    return shlex.quote(arg)

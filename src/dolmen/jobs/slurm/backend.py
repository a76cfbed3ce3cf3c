"""The Slurm backend: sbatch scripts, squeue/scontrol/sacct status, health-aware recovery.

Options (``get_backend("slurm", **options)``):

- ``prefix`` / ``env``: how Slurm's client commands reach the cluster (nothing on a
  login node; the tests enter the controller's network namespace);
- ``python``: the interpreter that runs ``dolmen.jobs.launch`` on the nodes
  (default: this one; dolmen must be installed there too);
- ``log_dir``: where the output files go (a folder every node sees);
- ``exclude``: nodes known to be bad, added to every job's ``--exclude``;
- ``quotas``: refuse over-quota jobs through Slurm accounting (default: when
  slurm.conf names slurmdbd);
- ``watch``: after sbatch, start the recovery watcher (``dolmen.slurm.watch``)
  as a daemon that outlives the CLI and ends with the job (default: on); its log is
  ``<log_dir>/<name>-<id>.watch.log``;
- ``extra``: more sbatch options for every job (dolmen.toml's ``[slurm] extra``, checked
  as the job file's are: ``extra.py``);
- ``pyxis``: whether the cluster runs ``--image`` jobs through pyxis (default: ask
  ``srun --help``, then plugstack.conf, at submit: ``pyxis.py``);
- ``host``: the machine the commands run on (default: this one).

A multi-node plan whose ``log_dir`` or ``python`` were not given (dolmen.toml's
``slurm_log_dir``/``slurm_python``) says so in its warnings: the defaults are this
machine's paths, which other nodes may not have.

Submission checks first (``preflight``: one ``scontrol show node``): a dead
slurmctld is one ServiceUnavailable (exit 3), more GPUs than any node has is a
UsageError, an over-quota job is QuotaExceeded; in each case nothing is
submitted. ``Backend.submit`` then records the intent, runs sbatch, records the
outcome and starts the watcher.
"""

from __future__ import annotations

import sys
import time
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import replace
from typing import TYPE_CHECKING, Any

from dolmen.errors import UsageError
from dolmen.jobs.audit import change
from dolmen.jobs.backend import Backend, JobState, JobStatus, Option, Plan
from dolmen.jobs.slurm.netpolicy import rendezvous_range
from dolmen.jobs.slurm.sbatch import SbatchOptions, check_options, output_path, render
from dolmen.jobs.spec import JobSpec
from dolmen.slurm import parse
from dolmen.slurm.client import SlurmClient, SlurmCommandError, command_error
from dolmen.slurm.parse import Phase

if TYPE_CHECKING:
    from dolmen.host import Host
    from dolmen.jobs.quota import QuotaStore
    from dolmen.slurm.watch import RecoveryWatcher


class SlurmBackend(Backend):
    """Jobs on a real Slurm cluster (see module docstring for the options)."""

    name = "slurm"
    OPTIONS = (
        Option("log_dir", "output files, in a folder every node sees", config="slurm_log_dir"),
        Option("python", "the interpreter that runs the ranks on the nodes", config="slurm_python"),
        Option("extra", "more sbatch options for every job", config="extra", section="slurm"),
    )

    def __init__(
        self,
        *,
        prefix: Sequence[str] = (),
        env: Mapping[str, str] | None = None,
        python: str | None = None,
        log_dir: str | None = None,
        exclude: Sequence[str] = (),
        extra: Sequence[str] = (),
        pyxis: bool | None = None,
        quotas: bool | None = None,
        watch: bool = True,
        host: Host | None = None,
    ) -> None:
        if host is None:
            from dolmen.host import open_host

            host = open_host(None)
        self.host = host
        self.client = SlurmClient(host, prefix=prefix, env=env)
        self.options = SbatchOptions(
            python=python or sys.executable,
            log_dir=log_dir or _default_log_dir(host),
            exclude=tuple(exclude),
            extra=tuple(extra),
        )
        self._unset = [
            k for k, v in (("slurm_log_dir", log_dir), ("slurm_python", python)) if not v
        ]
        self.pyxis = pyxis
        self._quotas = quotas
        self.watch = watch

    # --- plan and submit -------------------------------------------------------------
    def plan(self, spec: JobSpec) -> Plan:
        spec.check()
        check_options(self.options)
        port_range = rendezvous_range(spec, self.options.env)  # [net] policy's, if any
        script = render(spec, replace(self.options, rendezvous=port_range))
        summary = (
            f"sbatch: {spec.nodes} node(s) x {spec.gpus_per_node} GPU(s), "
            f"{spec.ranks_per_node} rank(s) per node, requeue on faults; "
            f"output {output_path(spec, self.options)}"
        )
        if spec.image:
            summary += f"; ranks in {spec.image} through pyxis"
        warnings: tuple[str, ...] = ()
        if spec.nodes > 1 and self._unset:
            warnings = (
                f"{' and '.join(self._unset)} not set in [jobs] of dolmen.toml: this job of"
                f" {spec.nodes} nodes writes its output to {self.options.log_dir} and runs"
                f" {self.options.python} on every node, paths of this machine that other"
                " nodes may not have",
            )
        return Plan(self.name, spec, {f"{spec.name}.sbatch": script}, summary, warnings)

    # --- submit (Backend.submit runs these in order) ---------------------------------
    def resolve(self, spec: JobSpec) -> JobSpec:
        """The submitting user (whose quotas apply, and who the intent names)."""
        return replace(spec, user=spec.user or self._user())

    def schedule(self, plan: Plan) -> JobStatus:
        """Write the script where the nodes see it, then ``sbatch``."""
        name, script = next(iter(plan.artifacts.items()))
        path = f"{self.options.log_dir.rstrip('/')}/{name}"
        self.host.write(path.lstrip("/"), script, mode=0o644)
        out = self.client.out(["sbatch", "--parsable", path])
        job_id = parse.sbatch_job_id(out)
        if job_id is None:
            raise SlurmCommandError(f"sbatch printed no job id: {out.strip()[:200]!r}")
        return JobStatus(job_id, plan.spec.name, self.name, JobState.PENDING)

    def submitted(self, status: JobStatus, plan: Plan) -> JobStatus:
        """Start the recovery watcher beside the job (``watch``)."""
        if not self.watch:
            return status
        return replace(status, details={**status.details, **self._start_watcher(status, plan)})

    def _start_watcher(self, status: JobStatus, plan: Plan) -> dict[str, str]:
        """The watcher as a daemon (it ends with the job); its pid and log."""
        from pathlib import Path

        from dolmen.host.process import spawn_detached

        job_id, spec = status.job_id, plan.spec
        argv = [sys.executable, "-m", "dolmen.slurm.watch", job_id]
        argv += [a for p in self.client.prefix for a in ("--prefix", p)]
        argv += [a for k, v in sorted(self.client.env.items()) for a in ("--env", f"{k}={v}")]
        argv += ["--max-restarts", str(spec.max_restarts)]
        log = Path(self.options.log_dir) / f"{spec.name}-{job_id}.watch.log"
        pid = spawn_detached(argv, env=self.host.environ(), cwd="/", log=log)
        return {"watcher_pid": str(pid), "watch_log": str(log)}

    def preflight(self, plan: Plan) -> None:
        """Refuse what Slurm would refuse or queue forever; nothing is submitted."""
        spec = plan.spec
        nodes = self.client.nodes()  # ServiceUnavailable when slurmctld is dead
        if spec.image:
            from dolmen.jobs.slurm.pyxis import require

            require(self.client, self.host, self.pyxis)
        excluded = {*spec.exclude_nodes, *self.options.exclude}
        usable = [n for n in nodes if n.name not in excluded]
        if spec.gpus_per_node:
            most = max((n.gpus or 0 for n in usable), default=0)
            if spec.gpus_per_node > most:
                raise UsageError(
                    f"no node has {spec.gpus_per_node} GPUs: the most any node has is {most}",
                    hint="ask for fewer --gpus-per-node and more --nodes",
                )
        fit = [n for n in usable if (n.gpus or 0) >= spec.gpus_per_node]
        if spec.nodes > len(fit):
            raise UsageError(
                f"{spec.nodes} nodes requested, but only {len(fit)} node(s) have "
                f"{spec.gpus_per_node} GPUs ({', '.join(n.name for n in fit) or 'none'})"
            )
        if self._enforce_quotas():
            from dolmen.jobs.slurm.quota import SlurmQuotaStore

            store = SlurmQuotaStore(self.client)
            if spec.account:
                known = store.accounts()
                if spec.account not in known:
                    raise UsageError(
                        f"unknown Slurm account {spec.account!r}; known: {', '.join(known)}",
                        hint="dolmen users add USER --group ACCOUNT creates it",
                    )
            store.check(spec, spec.user or self._user())

    # --- status --------------------------------------------------------------------------
    def status(self, job_id: str) -> JobStatus:
        record = self.client.job_record(job_id)
        if record is not None:
            return job_status(record)
        for row in accounted(self.client, job_id):
            state = job_state(row.state) or JobState.FAILED
            return JobStatus(job_id, row.name, self.name, state, nodes=row.nodes)
        raise UsageError(f"unknown Slurm job {job_id!r}", hint="dolmen jobs list shows the jobs")

    def list(self) -> list[JobStatus]:
        res = self.client.run(["scontrol", "show", "job", "-o"])
        if not res.ok and "no jobs" not in (res.stdout + res.stderr).lower():
            raise command_error(["scontrol", "show", "job"], res)
        found = [job_status(r) for r in parse.records(res.stdout, tail_key=None) if "JobId" in r]
        return sorted(found, key=lambda s: int(s.job_id) if s.job_id.isdigit() else 0, reverse=True)

    def cancel(self, job_id: str) -> JobStatus:
        self.status(job_id)  # UsageError for an unknown id
        with change("jobs.cancel", f"slurm:{job_id}", {"backend": self.name}):
            self.client.out(["scancel", job_id])
        deadline = time.monotonic() + 10
        st = self.status(job_id)
        while not st.state.done and time.monotonic() < deadline:
            time.sleep(0.2)
            st = self.status(job_id)
        return st

    def logs(self, job_id: str, *, rank: int | None = None, follow: bool = False) -> Iterator[str]:
        record = self.client.job_record(job_id)
        if record is None or not record.get("StdOut"):
            raise UsageError(f"no output file known for Slurm job {job_id!r}")
        path = record["StdOut"].replace("%j", job_id).lstrip("/")
        offset = 0
        pending = ""
        while True:
            data = self.host.read_opt(path) or ""
            chunk, offset = data[offset:], len(data)
            pending += chunk
            *lines, pending = pending.split("\n")
            for line in lines:
                if rank is None or line.startswith(f"{rank}: "):
                    yield line
            if not follow or self.status(job_id).state.done:
                if pending and (rank is None or pending.startswith(f"{rank}: ")):
                    yield pending
                return
            time.sleep(0.5)

    # --- quotas and recovery ------------------------------------------------------------------
    def quotas(self) -> QuotaStore:
        from dolmen.jobs.slurm.quota import SlurmQuotaStore

        return SlurmQuotaStore(self.client)

    def watcher(self, job_id: str, **options: Any) -> RecoveryWatcher:
        """The health-aware recovery loop for one job (``dolmen.slurm.watch``)."""
        from dolmen.slurm.watch import RecoveryWatcher

        return RecoveryWatcher(self.client, job_id, **options)

    # --- internals --------------------------------------------------------------------------
    def _enforce_quotas(self) -> bool:
        if self._quotas is None:
            text = self.client.out(["scontrol", "show", "config"])
            self._quotas = "accounting_storage/slurmdbd" in text
        return self._quotas

    def _user(self) -> str:
        env = self.host.environ()
        return env.get("SUDO_USER") or env.get("USER") or env.get("LOGNAME") or "root"


_STATES = {
    Phase.PENDING: JobState.PENDING,
    Phase.RUNNING: JobState.RUNNING,
    Phase.REQUEUED: JobState.RESTARTING,
    Phase.COMPLETED: JobState.COMPLETED,
    Phase.FAILED: JobState.FAILED,
    Phase.CANCELLED: JobState.CANCELLED,
}


def job_state(text: str) -> JobState | None:
    """A Slurm job state word (``RUNNING``, ``CANCELLED by 0``) as dolmen's, or None."""
    phase = parse.job_state(text)
    return None if phase is None else _STATES[phase]


def job_status(record: Mapping[str, str]) -> JobStatus:
    """A JobStatus from a ``scontrol show job -o`` record."""
    raw = record.get("JobState", "")
    state = job_state(raw) or JobState.PENDING
    restarts = record.get("Restarts", "0")
    nodes = record.get("NodeList", "")
    reason = record.get("Reason", "")
    return JobStatus(
        job_id=record.get("JobId", ""),
        name=record.get("JobName", ""),
        backend="slurm",
        state=state,
        restarts=int(restarts) if restarts.isdigit() else 0,
        nodes=tuple(parse.expand_hostlist(nodes)) if nodes and nodes != "(null)" else (),
        reason="" if reason in ("None", "(null)") else reason,
        details={"slurm_state": raw, "stdout": record.get("StdOut", "")},
    )


def accounted(client: SlurmClient, job_id: str) -> list[parse.AcctRow]:
    """The job in Slurm's accounting (sacct), [] without accounting or record."""
    res = client.run(["sacct", "-X", "-P", "-n", "-j", job_id, "-o", parse.SACCT_FIELDS])
    return parse.sacct_rows(res.stdout) if res.ok else []


def _default_log_dir(host: Host) -> str:
    from dolmen.paths import state_dir

    return str(state_dir() / "jobs" / "slurm")

"""The sbatch script of a JobSpec (pure): what ``dolmen jobs plan --backend slurm`` prints.

Every rank runs ``srun ... <python> -m dolmen.jobs.launch -- COMMAND``; the
launcher turns SLURM_* into the torchrun environment. The script asks Slurm for:

- ``--requeue`` and ``--open-mode=append``: a job that comes back after a node
  fault (or dolmen's ``scontrol requeue``) keeps its id and the output of every run;
- ``--signal=B:USR2@<lead>`` with a time limit: the batch shell gets USR2
  ``lead`` seconds before the limit, forwards it to the ranks (which checkpoint
  and exit) and requeues the job, which resumes from that checkpoint. USR2, not
  USR1: NCCL installs its own SIGUSR1 handler (submitit uses USR2 for the same reason);
- ``--exclude`` for nodes known to be bad;
- the site's words: ``--partition``, ``--qos``, ``--constraint``, ``--mem``,
  ``--cpus-per-task``, ``--exclusive``, ``--reservation``, then the checked ``extra``
  options of dolmen.toml's and the job file's ``[slurm]`` tables (``extra.py``).

The script derives the job's rendezvous port (DOLMEN_MASTER_PORT, the ranks' MASTER_PORT)
by ``dolmen.net.rendezvous``'s rule over ``SbatchOptions.rendezvous``: the network
policy's range when one is set (``netpolicy.py``), so that each node's prolog grants it.

With an image the ranks run in it through pyxis (``srun --container-image
--container-mounts``): the image need not hold dolmen, so the script computes the
torchrun environment itself (MASTER_ADDR from ``scontrol show hostnames`` on the batch
host, the per-rank variables from SLURM_PROCID/LOCALID/NODEID in a ``bash -c`` inside
the container), as ``dolmen.jobs.launch`` does outside one. The backend refuses an
image when the cluster has no pyxis (``SlurmBackend.preflight``).
"""

from __future__ import annotations

import shlex
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

from dolmen.errors import UsageError
from dolmen.jobs.slurm.extra import check_extra
from dolmen.jobs.spec import CONTROL, CONTROL_QUOTED, ENV_KEY, JobSpec
from dolmen.net.model import PortRange
from dolmen.net.rendezvous import DEFAULT, bash_rule
from dolmen.values.duration import slurm_time

LAUNCHER = "dolmen.jobs.launch"
SIGNAL = "USR2"
OUTPUT = "%x-%j.out"  # job name and id: one file per job, every run appended


@dataclass(frozen=True)
class SbatchOptions:
    """Site choices that are not part of the job: where logs go, which Python runs ranks."""

    python: str = "python3"
    log_dir: str = "."
    signal_lead_s: int | None = None  # None: a tenth of the time limit, 30 s to 300 s
    exclude: Sequence[str] = ()  # known-bad nodes, added to the spec's
    extra: Sequence[str] = ()  # dolmen.toml's [slurm] extra: more #SBATCH options, checked
    env: Mapping[str, str] = field(default_factory=dict)
    rendezvous: PortRange = DEFAULT  # the network policy's [jobs] rendezvous range, if any


def check_options(opts: SbatchOptions) -> None:
    """Refuse a site option that would write a line of its own into the script (a
    control character; an environment key that is not a variable name), naming it."""
    fields = [("python", opts.python, CONTROL), ("log_dir", opts.log_dir, CONTROL)]
    fields += [(f"exclude[{i}]", x, CONTROL) for i, x in enumerate(opts.exclude)]
    check_extra(opts.extra, "dolmen.toml's [slurm] extra")
    fields += [(f"env.{k}", v, CONTROL_QUOTED) for k, v in opts.env.items()]
    for key in opts.env:
        if not ENV_KEY.match(key):
            raise UsageError(f"[jobs] env key {key!r} is not a variable name")
    for name, value, bad in fields:
        found = bad.search(value)
        if found:
            raise UsageError(
                f"slurm option {name} holds a control character (U+{ord(found.group()):04X})",
                hint="fix it in dolmen.toml: it would write a line into the sbatch script",
            )


# Inside the container, per task: what dolmen.jobs.launch sets outside one.
RANK_SHELL = (
    'export RANK="$SLURM_PROCID" LOCAL_RANK="$SLURM_LOCALID" GROUP_RANK="$SLURM_NODEID"; exec "$@"'
)


def container_args(spec: JobSpec) -> list[str]:
    """pyxis's srun options for ``spec.image``: the image, and the job's folders mounted
    at the same paths (checkpoints, workdir) so that paths in the command mean the same."""
    assert spec.image
    args = [f"--container-image={spec.image}"]
    mounts = sorted({p for p in (spec.checkpoint_dir, spec.workdir) if p})
    if mounts:
        args.append("--container-mounts=" + ",".join(f"{p}:{p}" for p in mounts))
    if spec.workdir:
        args.append(f"--container-workdir={spec.workdir}")
    return args


def _container_env(ranks: int) -> list[str]:
    """The job-wide torchrun variables, computed on the batch host."""
    return [
        'MASTER_ADDR="$(scontrol show hostnames "$SLURM_JOB_NODELIST" | head -n 1)"',
        'MASTER_PORT="$DOLMEN_MASTER_PORT"',
        'export MASTER_ADDR MASTER_PORT WORLD_SIZE="$SLURM_NTASKS"'
        f' LOCAL_WORLD_SIZE={ranks} GROUP_WORLD_SIZE="$SLURM_NNODES"'
        ' DOLMEN_JOB_ID="$SLURM_JOB_ID"',
    ]


def signal_lead(time_limit_s: int, lead: int | None = None) -> int:
    """Seconds before the limit to send USR2: given, else a tenth of it within 30..300 s,
    and never more than half the limit."""
    chosen = lead if lead is not None else min(300, max(30, time_limit_s // 10))
    return max(1, min(chosen, time_limit_s // 2))


def output_path(spec: JobSpec, opts: SbatchOptions) -> str:
    """The output file pattern of the job (``%x`` name, ``%j`` id)."""
    return f"{opts.log_dir.rstrip('/')}/{OUTPUT}"


def render(spec: JobSpec, opts: SbatchOptions) -> str:
    """The batch script submitted for ``spec`` (no I/O)."""
    ranks = spec.ranks_per_node
    lines = [
        "#!/bin/bash",
        f"#SBATCH --job-name={spec.name}",
        f"#SBATCH --nodes={spec.nodes}",
        f"#SBATCH --ntasks-per-node={ranks}",
    ]
    if spec.gpus_per_node:
        lines.append(f"#SBATCH --gpus-per-node={spec.gpus_per_node}")
    # Always --requeue: without it a failed prolog (a node dolmen found unhealthy before
    # the job started) cancels the job instead of starting it elsewhere. max_restarts
    # bounds dolmen's own requeues (the watcher's and the time-limit one).
    lines += [
        "#SBATCH --requeue",
        "#SBATCH --open-mode=append",
        f"#SBATCH --output={output_path(spec, opts)}",
    ]
    if spec.time_limit_s:
        lines.append(f"#SBATCH --time={slurm_time(spec.time_limit_s)}")
        if spec.max_restarts:  # checkpoint, then come back: a restart like any other
            lead = signal_lead(spec.time_limit_s, opts.signal_lead_s)
            lines.append(f"#SBATCH --signal=B:{SIGNAL}@{lead}")
    exclude = sorted({*spec.exclude_nodes, *opts.exclude})
    if exclude:
        lines.append(f"#SBATCH --exclude={','.join(exclude)}")
    if spec.account:
        lines.append(f"#SBATCH --account={spec.account}")
    if spec.partition:
        lines.append(f"#SBATCH --partition={spec.partition}")
    if spec.workdir:
        lines.append(f"#SBATCH --chdir={spec.workdir}")
    for flag, value in (
        ("qos", spec.qos),
        ("constraint", spec.constraint),
        ("mem", spec.mem),
        ("cpus-per-task", spec.cpus_per_task),
        ("reservation", spec.reservation),
    ):
        if value is not None:
            lines.append(f"#SBATCH --{flag}={value}")
    if spec.exclusive:
        lines.append("#SBATCH --exclusive")
    lines += [f"#SBATCH {x}" for x in (*opts.extra, *spec.slurm_extra)]
    lines += ["", "# Written by dolmen (dolmen.jobs.slurm.sbatch); docs/slurm.md explains it."]
    if spec.gpus_per_node:  # before the job's own variables, which win
        lines.append(
            "# NCCL for this node's fabric where it has no /etc/nccl.conf (dolmen nccl env)"
        )
        lines.append(f'eval "$({shlex.quote(opts.python)} -m dolmen.nccl 2>/dev/null)"')
    env = {**opts.env, **spec.env}
    if spec.checkpoint_dir:
        env["DOLMEN_CHECKPOINT_DIR"] = spec.checkpoint_dir
    lines += [f"export {k}={shlex.quote(v)}" for k, v in sorted(env.items())]
    lines.append('export DOLMEN_RESTART_COUNT="${SLURM_RESTART_COUNT:-0}"')
    # The rendezvous port, by dolmen.net.rendezvous's rule (the port each node's prolog
    # grants under a network policy); the ranks' launcher and the image path read it.
    lines.append(
        f'export DOLMEN_MASTER_PORT="${{DOLMEN_MASTER_PORT:-{bash_rule(opts.rendezvous)}}}"'
    )
    # --label prefixes every output line with its rank ("3: ..."): `logs --rank` filters on it.
    srun = ["srun", "--label", "--kill-on-bad-exit=1"]
    if spec.image:
        lines += _container_env(ranks)
        srun += [*container_args(spec), "bash", "-c", RANK_SHELL, "dolmen-rank", *spec.command]
    else:
        srun += [opts.python, "-m", LAUNCHER, "--", *spec.command]
    lines += [
        'echo "dolmen: run $DOLMEN_RESTART_COUNT of job $SLURM_JOB_ID on $SLURM_JOB_NODELIST"',
        "near_limit=0",
        "on_signal() {",
        "  near_limit=1",
        '  echo "dolmen: time limit near: ranks checkpoint, then the job is requeued"',
        f'  kill -{SIGNAL} "$ranks" 2>/dev/null',
        "}",
        f"trap on_signal {SIGNAL}",
        # srun in the background: bash runs a trap only between commands or in `wait`.
        f"{' '.join(shlex.quote(a) for a in srun)} &",
        "ranks=$!",
        'wait "$ranks"; rc=$?',
        'while kill -0 "$ranks" 2>/dev/null; do wait "$ranks"; rc=$?; done',
        'if [ "$near_limit" = 1 ]; then scontrol requeue "$SLURM_JOB_ID"; fi',
        'exit "$rc"',
    ]
    return "\n".join(lines) + "\n"

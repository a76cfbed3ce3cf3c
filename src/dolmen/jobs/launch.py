"""``python -m dolmen.jobs.launch [--procs-per-node P] -- COMMAND...``: become a rank.

Two ways in:

- Inside a Slurm job step (``srun``, SLURM_PROCID set), as the sbatch script that
  ``backends/slurm.py`` renders calls it: computes the rank environment from the
  SLURM_* variables (``env.slurm_rank_env``; MASTER_ADDR is the first host of
  SLURM_JOB_NODELIST through ``scontrol show hostnames``) and execs the command,
  which thus receives Slurm's signals (``--signal``) directly.
- In a Kubernetes pod of an Indexed Job with ``--procs-per-node P`` (GROUP_RANK,
  GROUP_WORLD_SIZE, MASTER_ADDR and MASTER_PORT already set by the manifest):
  starts the P ranks of this node, waits, and exits with the first failure.

Exit codes: the command's own; 2 bad environment or arguments; 3 scontrol missing.
"""

from __future__ import annotations

import os
import signal
import sys
import time
from collections.abc import Mapping, Sequence

from dolmen.errors import DolmenError, InputError, UsageError
from dolmen.jobs.env import first_host, rank_env, slurm_rank_env, split_gpus


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point; see the module docstring."""
    args = list(sys.argv[1:] if argv is None else argv)
    try:
        per_node, command = _parse(args)
        environ = dict(os.environ)
        if "SLURM_PROCID" in environ:
            return _exec(command, {**environ, **slurm_rank_env(environ, _master(environ))})
        if per_node is None:
            raise UsageError(
                "not inside a Slurm job step, and no --procs-per-node given",
                hint="the sbatch script runs this under srun; pods pass --procs-per-node",
            )
        return run_node(command, per_node, environ)
    except DolmenError as e:
        print(f"dolmen launch: error: {e.message}", file=sys.stderr)
        if e.hint:
            print(f"hint: {e.hint}", file=sys.stderr)
        return int(e.exit_code)


def _parse(args: list[str]) -> tuple[int | None, list[str]]:
    per_node: int | None = None
    while args and args[0] != "--":
        opt = args.pop(0)
        if opt == "--procs-per-node" and args and args[0].isdigit() and int(args[0]) > 0:
            per_node = int(args.pop(0))
        elif opt.startswith("-"):
            raise UsageError(f"unknown option {opt!r}; valid: --procs-per-node N, then -- COMMAND")
        else:
            args.insert(0, opt)
            break
    if args and args[0] == "--":
        args.pop(0)
    if not args:
        raise UsageError("no command given", hint="python -m dolmen.jobs.launch -- COMMAND...")
    return per_node, args


def _master(environ: Mapping[str, str]) -> str:
    nodelist = environ.get("SLURM_JOB_NODELIST") or environ.get("SLURM_NODELIST") or ""
    if not nodelist:
        raise InputError("SLURM_JOB_NODELIST is missing", hint="run inside a Slurm job")
    direct = first_host(nodelist)
    if direct is not None:
        return direct
    from dolmen.errors import EnvironmentProblem
    from dolmen.host import open_host

    res = open_host().run(["scontrol", "show", "hostnames", nodelist], timeout=10)
    hosts = res.stdout.split()
    if not res.ok or not hosts:
        raise EnvironmentProblem(f"cannot expand SLURM_JOB_NODELIST: {res.describe()}")
    return hosts[0]


def _exec(command: list[str], env: Mapping[str, str]) -> int:
    from dolmen.host.process import SpawnError, exec_replace

    try:
        exec_replace(command, env)
    except SpawnError as e:
        raise UsageError(str(e.strerror or e)) from None


def run_node(command: list[str], per_node: int, environ: Mapping[str, str]) -> int:
    """Start this node's ranks with their environment, wait, return the first failure's code."""
    from dolmen.host.process import SpawnError, spawn

    def num(name: str) -> int:
        text = environ.get(name, "")
        if not text.isdigit():
            raise InputError(f"{name} is {text!r}, not a number", hint="set by the manifest")
        return int(text)

    node, nodes = num("GROUP_RANK"), num("GROUP_WORLD_SIZE")
    visible = environ.get("CUDA_VISIBLE_DEVICES") or environ.get("NVIDIA_VISIBLE_DEVICES") or ""
    gpus = [int(g) for g in visible.split(",") if g.strip().isdigit()]
    children = []
    try:
        for local, share in enumerate(split_gpus(list(range(len(gpus))), per_node)):
            env = rank_env(
                job_id=environ.get("DOLMEN_JOB_ID", ""),
                rank=node * per_node + local,
                local_rank=local,
                node_rank=node,
                world_size=nodes * per_node,
                local_world_size=per_node,
                num_nodes=nodes,
                master_addr=environ.get("MASTER_ADDR", "127.0.0.1"),
                master_port=environ.get("MASTER_PORT", "29500"),
                restart_count=environ.get("DOLMEN_RESTART_COUNT") or 0,
                checkpoint_dir=environ.get("DOLMEN_CHECKPOINT_DIR"),
                gpus=share if gpus else None,
            )
            children.append(spawn(command, env={**environ, **env}, die_with_parent=True))
    except SpawnError as e:
        for c in children:
            c.signal(signal.SIGKILL)
        raise UsageError(str(e.strerror or e)) from None
    while True:
        codes = [c.poll() for c in children]
        bad = [c for c in codes if c not in (None, 0)]
        if bad or all(c == 0 for c in codes):
            for c in children:
                c.signal(signal.SIGTERM)
            code = bad[0] if bad else 0
            return 128 - code if code < 0 else code
        time.sleep(0.2)


if __name__ == "__main__":
    sys.exit(main())

"""Slurm backend figures, from one run on the test harness's real cluster (not a test).

    .venv/bin/python bench/jobs_slurm_bench.py [--repeat N] [--latency-runs N] [--torch]

Needs root, slurm-wlm and munge (the same as tests/slurm); starts its own cluster
(tests/slurm/cluster.py: slurmctld + 3 slurmd in network namespaces, 4 GRES GPUs
each, SlurmdTimeout 30 s, cred_expire 5 s) and tears it down.

- recovery: a 2-node x 4-GPU training job (tests/slurm/train.py, 8 ranks, TCP
  all-reduce, a checkpoint each 0.5 s step) loses its second node at step 3 (slurmd
  and every process of the node killed, as in a crash). Time from the kill until
  rank 0 of the next run has loaded the checkpoint ("resumed from step K
  restart=1"), with dolmen's watcher (probe, DOWN, scontrol requeue) versus plain
  Slurm with --requeue (which waits for slurmctld to declare the node down after
  SlurmdTimeout), in the same cluster, same run; the ratio is printed.
- submission latency: the same 2-node x 4-GPU job submitted by dolmen's
  SlurmBackend.submit versus submitit's SlurmExecutor (pip install submitit; the
  bench extra): the submit call (until the job id is known) and until squeue says
  RUNNING; medians over N runs, alternating.
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import sys
import tempfile
import threading
import time
from collections.abc import Callable
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(REPO), str(REPO / "src")]

from tests.slurm.cluster import SlurmCluster, missing_prerequisites  # noqa: E402
from tests.slurm.config import SLURMD_TIMEOUT_S  # noqa: E402
from tests.slurm.helpers import RESUMED, backend, output, train_spec  # noqa: E402


def wait(pred: Callable[[], object], timeout: float = 300.0, step: float = 0.05) -> float:
    """Poll ``pred``; the monotonic time it first held."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if pred():
            return time.monotonic()
        time.sleep(step)
    raise TimeoutError(f"not done in {timeout:g} s")


def recovery(c: SlurmCluster, mode: str, allreduce: str) -> dict[str, float]:
    """Seconds from the crash to: node DOWN, job RUNNING again, ranks resumed."""
    c.restore()
    b = backend(c)
    name = f"rec-{mode}-{int(time.time() * 1000) % 100000}"
    job = b.submit(train_spec(c, name, steps=400, allreduce=allreduce))
    wait(lambda: "0: step 3 " in output(c, name, job.job_id), 180)
    watcher = None
    if mode == "dolmen":
        watcher = b.watcher(job.job_id, poll_s=0.5)
        threading.Thread(target=watcher.run, kwargs={"timeout": 300}, daemon=True).start()
    victim = b.status(job.job_id).nodes[1]
    t0 = time.monotonic()
    c.crash_node(victim)
    down = wait(lambda: c.node_states().get(victim, "").startswith("down"), 300, 0.1)
    running = wait(
        lambda: (
            b.status(job.job_id).details["slurm_state"] == "RUNNING"
            and b.status(job.job_id).restarts >= 1
        ),
        300,
        0.1,
    )
    resumed = wait(lambda: any(r[1] == "1" for r in RESUMED.findall(output(c, name, job.job_id))))
    if watcher is not None:
        watcher.max_errors = 0
    c.sl("scancel", job.job_id, check=False)
    return {"down": down - t0, "running": running - t0, "resumed": resumed - t0}


def latency(c: SlurmCluster, runs: int) -> dict[str, list[tuple[float, float]]]:
    """(submit call, until RUNNING) per run, for dolmen and submitit."""
    results: dict[str, list[tuple[float, float]]] = {"dolmen": [], "submitit": []}
    try:
        import submitit
    except ImportError:
        submitit = None
        print("submitit is not installed (pip install submitit): dolmen alone")
    shims = Path(tempfile.mkdtemp(prefix="slurm-shims-", dir=c.lab))
    for tool in ("sbatch", "squeue", "sacct", "scancel", "scontrol"):
        real = shutil.which(tool) or f"/usr/bin/{tool}"  # absolute: the shim is first on PATH
        (shims / tool).write_text(f'#!/bin/sh\nexec {c.client} {real} "$@"\n')
        (shims / tool).chmod(0o755)
    os.environ["PATH"] = f"{shims}:{os.environ['PATH']}"
    b = backend(c)
    from dolmen.jobs.spec import JobSpec

    spec = JobSpec(
        name="latency",
        command=(sys.executable, "-c", "import time; time.sleep(1)"),
        nodes=2,
        gpus_per_node=4,
    )

    def until_running(job_id: str) -> float:
        return wait(
            lambda: (
                c.sl("squeue", "-h", "-j", job_id, "-o", "%T", check=False).stdout.strip()
                in ("RUNNING", "COMPLETING", "")
            ),
            60,
            0.02,
        )

    for _ in range(runs):
        for who in ("dolmen", "submitit"):
            if who == "submitit" and submitit is None:
                continue
            c.restore()
            t0 = time.monotonic()
            if who == "dolmen":
                job_id = b.submit(spec).job_id
            else:
                ex = submitit.SlurmExecutor(folder=c.lab / "submitit", python=sys.executable)
                ex.update_parameters(nodes=2, ntasks_per_node=4, gpus_per_node=4, time=10)
                job_id = ex.submit(time.sleep, 1).job_id
            t1 = time.monotonic()
            t2 = until_running(job_id)
            results[who].append((t1 - t0, t2 - t0))
            c.sl("scancel", job_id, check=False)
    return results


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    p.add_argument("--repeat", type=int, default=1, help="recovery runs per mode")
    p.add_argument("--latency-runs", type=int, default=5)
    p.add_argument("--torch", action="store_true", help="gloo all-reduce instead of TCP")
    args = p.parse_args()
    why = missing_prerequisites()
    if why:
        print(f"skipped: {why}")
        return 0
    lab = Path(tempfile.mkdtemp(prefix="dolmen-slurm-bench-"))
    # submissions are audit events: never into the real /var/lib/dolmen
    os.environ["DOLMEN_STATE_DIR"] = str(lab / "state")
    os.environ["DOLMEN_CONFIG_DIR"] = str(lab / "etc")
    c = SlurmCluster(lab / "lab")
    try:
        c.start()
        print(
            f"cluster up in {c.bringup_s:.2f} s "
            f"(3 nodes x 4 GPUs, SlurmdTimeout {SLURMD_TIMEOUT_S} s)"
        )
        allreduce = "auto" if args.torch else "tcp"
        rec: dict[str, list[dict[str, float]]] = {"dolmen": [], "plain": []}
        for _ in range(args.repeat):
            for mode in ("dolmen", "plain"):
                r = recovery(c, mode, allreduce)
                rec[mode].append(r)
                print(
                    f"recovery {mode:6}: node down {r['down']:6.2f} s, job running "
                    f"{r['running']:6.2f} s, resumed from checkpoint {r['resumed']:6.2f} s",
                    flush=True,
                )
        d = statistics.median(r["resumed"] for r in rec["dolmen"])
        s = statistics.median(r["resumed"] for r in rec["plain"])
        print(
            f"recovery (crash -> resumed from checkpoint): dolmen {d:.2f} s, plain Slurm "
            f"--requeue {s:.2f} s: dolmen {s / d:.1f}x faster (target >= 5x)"
        )
        lat = latency(c, args.latency_runs)
        for who, rows in lat.items():
            if rows:
                call = statistics.median(r[0] for r in rows) * 1000
                run = statistics.median(r[1] for r in rows) * 1000
                print(
                    f"submission {who:8}: submit call {call:6.0f} ms, until RUNNING {run:6.0f} ms "
                    f"(median of {len(rows)})"
                )
        if lat["dolmen"] and lat["submitit"]:
            dc = statistics.median(r[0] for r in lat["dolmen"])
            sc = statistics.median(r[0] for r in lat["submitit"])
            print(f"submit call: submitit/dolmen = {sc / dc:.2f} (above 1: dolmen is faster)")
    finally:
        c.stop()
        shutil.rmtree(lab, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())

"""Local job backend figures, from one run (not a test).

    .venv/bin/python bench/jobs_local_bench.py [--repeat N] [--torch]

- recovery: a two-"node", four-rank data-parallel job (tests/jobs/workloads/train_tcp.py,
  a checkpoint after every step) has rank 2 SIGKILLed; time from the kill until every
  rank of the new attempt runs again from the checkpoint (each has printed "resumed from
  step N", N > 0), split into detection + stop (until the supervisor logs the restart)
  and restart (until the ranks have loaded the checkpoint). With --torch, the same with
  the PyTorch/gloo workload (its import time dominates).
- submission latency: from the submit call until all four ranks of the same job run user
  code (each has created its marker file), dolmen's local backend versus submitit's
  LocalExecutor (tasks_per_node=4) when submitit is installed (pip install submitit),
  medians over N runs, printed as a ratio.

The supervisor runs with its defaults (poll 0.1 s, SIGTERM grace 10 s).
"""

from __future__ import annotations

import argparse
import os
import shutil
import signal
import statistics
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
WORKLOADS = REPO / "tests" / "jobs" / "workloads"
MARK = (
    "import os, pathlib, sys, time\n"
    "pathlib.Path(sys.argv[1], 'started-' + os.environ['RANK']).touch()\n"
    "time.sleep(0.5)\n"
)


def wait(probe: object, timeout: float = 120.0) -> float:
    """Poll ``probe`` every 2 ms; the monotonic time it first returned true."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if probe():  # type: ignore[operator]
            return time.monotonic()
        time.sleep(0.002)
    raise TimeoutError(f"{probe} did not happen in {timeout} s")


def recovery(workload: str, root: Path) -> tuple[float, float]:
    """(kill -> restart logged, restart logged -> all ranks resumed) in seconds."""
    from dolmen.jobs import checkpoint
    from dolmen.jobs.local.backend import LocalBackend
    from dolmen.jobs.spec import JobSpec

    local = LocalBackend()
    ckdir = Path(tempfile.mkdtemp(dir=root, prefix="ckpt-"))
    spec = JobSpec(
        name="bench-recovery",
        command=(sys.executable, str(WORKLOADS / workload), "200", str(root / "r.json"), "0.05"),
        nodes=2,
        procs_per_node=2,
        checkpoint_dir=str(ckdir),
        max_restarts=1,
        env={"GLOO_SOCKET_IFNAME": "lo"},
    )
    job = local.submit(spec)
    jid = int(job.job_id)
    wait(lambda: local.status(job.job_id).details["ranks_running"] == "4")
    wait(lambda: (c := checkpoint.latest(ckdir)) is not None and c.step >= 5)
    victim = next(r for r in local.store.ranks(jid) if r.rank == 2)
    assert victim.pid is not None
    t0 = time.monotonic()
    os.kill(victim.pid, signal.SIGKILL)
    t1 = wait(lambda: any(e.kind == "restart" for e in local.store.events(jid)))

    def resumed() -> bool:
        for r in range(4):
            text = (local.store.job_dir(jid) / f"rank-{r}.log").read_text()
            tail = text.rpartition("attempt 1")[2]
            if "restart 1 resumed from step" not in tail or "step 0\n" in tail:
                return False
        return True

    t2 = wait(resumed)
    local.cancel(job.job_id)
    return t1 - t0, t2 - t1


def dolmen_submit(root: Path) -> float:
    from dolmen.jobs.local.backend import LocalBackend
    from dolmen.jobs.spec import JobSpec

    marks = Path(tempfile.mkdtemp(dir=root))
    local = LocalBackend()
    spec = JobSpec(
        name="bench-submit", command=(sys.executable, "-c", MARK, str(marks)), procs_per_node=4
    )
    t0 = time.monotonic()
    job = local.submit(spec)
    t1 = wait(lambda: len(list(marks.glob("started-*"))) == 4)
    wait(lambda: local.status(job.job_id).state.done)
    return t1 - t0


def _submitit_task(marks: str) -> None:
    import submitit

    rank = submitit.JobEnvironment().global_rank
    Path(marks, f"started-{rank}").touch()
    time.sleep(0.5)


def submitit_submit(root: Path) -> float:
    import submitit

    marks = Path(tempfile.mkdtemp(dir=root))
    executor = submitit.LocalExecutor(folder=root / "submitit")
    executor.update_parameters(tasks_per_node=4, nodes=1, timeout_min=5)
    t0 = time.monotonic()
    job = executor.submit(_submitit_task, str(marks))
    t1 = wait(lambda: len(list(marks.glob("started-*"))) == 4)
    job.results()
    return t1 - t0


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--torch", action="store_true", help="also time the torch workload")
    args = parser.parse_args()
    root = Path(tempfile.mkdtemp(prefix="dolmen-jobs-bench-"))
    os.environ["DOLMEN_STATE_DIR"] = str(root / "state")
    os.environ["DOLMEN_CONFIG_DIR"] = str(root / "etc")
    try:
        workloads = ["train_tcp.py"] + (["train_torch.py"] if args.torch else [])
        print("recovery, SIGKILL of rank 2 of 4 -> every rank running again from its checkpoint")
        for w in workloads:
            runs = [recovery(w, root) for _ in range(args.repeat)]
            det = statistics.median(r[0] for r in runs)
            rst = statistics.median(r[1] for r in runs)
            tot = statistics.median(r[0] + r[1] for r in runs)
            print(
                f"  {w:<16} median {tot:6.3f} s  (detect+stop {det:.3f} s,"
                f" restart+resume {rst:.3f} s; {args.repeat} runs)"
            )
        print("submission latency, submit -> 4 ranks running user code (median)")
        ours = statistics.median(dolmen_submit(root) for _ in range(args.repeat))
        print(f"  dolmen local      {ours:6.3f} s")
        try:
            import submitit  # noqa: F401
        except ImportError:
            print("  submitit          not installed (pip install submitit): no ratio")
            return 0
        theirs = statistics.median(submitit_submit(root) for _ in range(args.repeat))
        print(f"  submitit local    {theirs:6.3f} s")
        print(f"  ratio submitit/dolmen: {theirs / ours:.2f}x")
    finally:
        shutil.rmtree(root, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())

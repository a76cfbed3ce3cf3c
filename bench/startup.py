"""Start-up cost of the quick tier: whole `dolmen validate --level quick` processes on an
8-GPU host tree against a bare `python -c pass`, same run, bytecode cached.

    .venv/bin/python bench/startup.py [--runs N] [--against OTHER_CHECKOUT]

Slurm's HealthCheckProgram and node-problem-detector start dolmen every few seconds on
every node, so what a run costs before it reads the first file matters as much as the
checks. The tree is the healthy 8x H100 scenario (tests/hosts/h100-hgx-healthy), built
into a temporary folder. Both commands run with the same interpreter and a bytecode cache
of their own (PYTHONPYCACHEPREFIX in that folder, filled by two warm-up runs each), never
with PYTHONDONTWRITEBYTECODE. dolmen starts the way the console script does
(`from dolmen.cli.main import main`), once with --npd (one line, what NPD reads) and once
with --json. Printed: each median (wall clock, N runs, interleaved), its ratio to the bare
start, the same for CPU time (user + system: steadier than the wall clock on a shared
machine), and whether issue 8's target (at most 8x the bare start, wall clock) is met.
Exit 1 when it is missed.
With --against, the same two commands also run from another checkout's src/ (e.g. a
`git worktree add /tmp/base <commit>`), interleaved in the same run: a before/after.
With --instructions, each command also runs once under valgrind's callgrind and its
instruction count (user space) is printed with its ratio to the bare start's: a figure
that does not move with the load of a shared machine, where the wall clock does (eight
people on two cores: medians of 450 ms for a run whose quietest was 140 ms). It leaves
out the kernel's time (file reads), so it is a guide to before/after, not the target.
"""

from __future__ import annotations

import argparse
import os
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))
TARGET_RATIO = 8.0
ENTRY = "import sys; from dolmen.cli.main import main; sys.exit(main())"


def timed(argv: list[str], env: dict[str, str]) -> tuple[float, float]:
    """Wall clock and CPU time (user + system) of one process."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    t0 = time.perf_counter()
    subprocess.run(argv, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    wall = time.perf_counter() - t0
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = after.ru_utime - before.ru_utime + after.ru_stime - before.ru_stime
    return wall, cpu


def start_env(tmp: Path) -> dict[str, str]:
    """The environment of a normal install's start: this checkout's src, bytecode written
    (into ``tmp``, never the checkout)."""
    env = {**os.environ, "PYTHONPATH": str(REPO / "src"), "PYTHONPYCACHEPREFIX": str(tmp / "pyc")}
    env.pop("PYTHONDONTWRITEBYTECODE", None)
    return env


def interleaved(
    commands: dict[str, list[str]], env: dict[str, str], runs: int, warm: int = 2
) -> tuple[dict[str, float], dict[str, float]]:
    """Median wall clock and CPU time of each command, ``runs`` rounds interleaved (load
    that comes and goes falls on all alike), after ``warm`` runs each fill the caches."""
    for argv in commands.values():
        for _ in range(warm):
            timed(argv, env)
    walls: dict[str, list[float]] = {k: [] for k in commands}
    cpus: dict[str, list[float]] = {k: [] for k in commands}
    for _ in range(runs):
        for name, argv in commands.items():
            w, c = timed(argv, env)
            walls[name].append(w)
            cpus[name].append(c)
    return (
        {k: statistics.median(v) for k, v in walls.items()},
        {k: statistics.median(v) for k, v in cpus.items()},
    )


def instructions(argv: list[str], env: dict[str, str]) -> int | None:
    """Instructions one process runs in user space (callgrind), None without valgrind."""
    if shutil.which("valgrind") is None:
        return None
    with tempfile.TemporaryDirectory() as tmp:
        out = subprocess.run(
            ["valgrind", "--tool=callgrind", f"--callgrind-out-file={tmp}/cg", *argv],
            env=env | {"PYTHONHASHSEED": "0"},  # the same dict orders each time
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
            text=True,
            check=False,
        ).stderr
    found = [line.split()[-1] for line in out.splitlines() if "Collected :" in line]
    return int(found[-1]) if found else None


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--runs", type=int, default=20)
    ap.add_argument("--against", type=Path, help="another checkout to time in the same run")
    ap.add_argument(
        "--instructions", action="store_true", help="also count instructions (valgrind)"
    )
    args = ap.parse_args()
    from tests.hosts.scenarios import build

    work = Path(tempfile.mkdtemp(prefix="dolmen-startup-"))
    try:
        tree = build("h100-hgx-healthy", work / "tree")
        env = {k: v for k, v in os.environ.items() if k not in ("PYTHONDONTWRITEBYTECODE",)}
        env.pop("DOLMEN_DEBUG", None)
        quick = [sys.executable, "-c", ENTRY, "validate", "--level", "quick", "--from", str(tree)]
        runs = {
            "python -c pass": ([sys.executable, "-c", "pass"], REPO),
            "dolmen validate --level quick --npd": ([*quick, "--npd"], REPO),
            "dolmen validate --level quick --json": ([*quick, "--json"], REPO),
        }
        if args.against:
            runs["  --npd from --against"] = ([*quick, "--npd"], args.against.resolve())
            runs["  --json from --against"] = ([*quick, "--json"], args.against.resolve())

        def env_of(checkout: Path) -> dict[str, str]:
            pyc = work / "pyc" / checkout.name  # one bytecode cache per checkout
            return env | {"PYTHONPATH": str(checkout / "src"), "PYTHONPYCACHEPREFIX": str(pyc)}

        for argv, checkout in runs.values():  # fill the bytecode cache and the page cache
            for _ in range(2):
                timed(argv, env_of(checkout))
        times: dict[str, list[tuple[float, float]]] = {label: [] for label in runs}
        for _ in range(args.runs):
            for label, (argv, checkout) in runs.items():
                times[label].append(timed(argv, env_of(checkout)))
        wall = {label: statistics.median(w for w, _ in t) for label, t in times.items()}
        cpu = {label: statistics.median(c for _, c in t) for label, t in times.items()}
        bare, bare_cpu = wall["python -c pass"], cpu["python -c pass"]
        print(f"8-GPU H100 host tree, {args.runs} runs each, bytecode cached; medians")
        print(f"  {'':<38}  {'wall clock':<32}  CPU (user + system)")
        for label, med in wall.items():
            low = min(w for w, _ in times[label])
            print(
                f"  {label:<38}: {med * 1000:6.1f} ms (min {low * 1000:6.1f}) {med / bare:5.1f}x"
                f"   {cpu[label] * 1000:6.1f} ms {cpu[label] / bare_cpu:5.1f}x"
            )
        if args.instructions:
            counted = {label: instructions(argv, env_of(c)) for label, (argv, c) in runs.items()}
            floor = counted["python -c pass"]
            print("  instructions (valgrind callgrind, user space, one run each)")
            for label, n in counted.items():
                shown = f"{n / 1e6:7.1f} M  {n / floor:5.1f}x" if n and floor else "not counted"
                print(f"  {label:<38}: {shown}")
        worst = max(m for label, m in wall.items() if label.startswith("dolmen")) / bare
        met = worst <= TARGET_RATIO
        print(
            f"  issue 8's target: at most {TARGET_RATIO:g}x the bare start (wall clock); "
            f"worst here {worst:.1f}x: {'met' if met else 'MISSED'}"
        )
        return 0 if met else 1
    finally:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())

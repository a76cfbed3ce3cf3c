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
start, and issue 8's target (at most 8x the bare start). Exit 1 when the target is missed.
With --against, the same two commands also run from another checkout's src/ (e.g. a
`git worktree add /tmp/base <commit>`), interleaved in the same run: a before/after.
"""

from __future__ import annotations

import argparse
import os
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


def timed(argv: list[str], env: dict[str, str]) -> float:
    t0 = time.perf_counter()
    subprocess.run(argv, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    return time.perf_counter() - t0


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--runs", type=int, default=20)
    ap.add_argument("--against", type=Path, help="another checkout to time in the same run")
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
        times: dict[str, list[float]] = {label: [] for label in runs}
        for _ in range(args.runs):
            for label, (argv, checkout) in runs.items():
                times[label].append(timed(argv, env_of(checkout)))
        medians = {label: statistics.median(t) for label, t in times.items()}
        bare = medians["python -c pass"]
        print(f"8-GPU H100 host tree, {args.runs} runs each, bytecode cached, wall clock")
        for label, med in medians.items():
            t = times[label]
            print(
                f"  {label:<38}: {med * 1000:6.1f} ms  (min {min(t) * 1000:.1f}, "
                f"max {max(t) * 1000:.1f})  {med / bare:5.1f}x bare"
            )
        worst = max(m for label, m in medians.items() if label.startswith("dolmen")) / bare
        print(
            f"  worst ratio to the bare start         : {worst:.1f}x  (target <= {TARGET_RATIO:g}x)"
        )
        return 0 if worst <= TARGET_RATIO else 1
    finally:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())

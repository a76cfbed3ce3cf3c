"""`dolmen fleet validate --slurm` on the test harness's 3-node cluster against one node's
`dolmen validate` (target: at most 1.5x), from one run (not a test).

    .venv/bin/python bench/fleet_validate.py [--repeat N]

Needs root, slurm-wlm and munge (as tests/slurm); starts its own cluster
(tests/fleet/cluster.py: slurmctld + 3 slurmd in network namespaces, hooks off) and
tears it down. Every node validates its own copy of the healthy H100 host tree (n2's
with an Xid 79), level quick, as `--from <trees>/{node}`; the fleet run is the dry run
(nothing drained), so every repeat sees the same cluster.

Printed, medians over N alternating runs:
- one node: `dolmen validate --json --level quick --from <tree>` (a cold process);
- fleet x1: `fleet validate --slurm --nodelist n1` (one srun task: the machinery's cost);
- fleet x3: `fleet validate --slurm` on the three nodes, its ratio to one node, and to
  fleet x1 (three nodes in parallel against one: an SSH loop would be 3x).
On this machine the three "nodes" share 2 cores, so x3 also pays for running three
validates on two cores at once; on a real cluster each node has its own, and fleet x1
is the closer estimate of what a fleet costs over one node.
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(REPO), str(REPO / "src")]

from tests.fleet import cluster as fleet_cluster  # noqa: E402
from tests.slurm.cluster import missing_prerequisites  # noqa: E402

TARGET = 1.5


def timed(argv: list[str], ok: tuple[int, ...]) -> float:
    """Wall seconds of one run of ``argv`` (RuntimeError when its exit code is not ok)."""
    env = dict(os.environ, PYTHONPATH=f"{REPO / 'src'}:{REPO}")
    t0 = time.perf_counter()
    res = subprocess.run(argv, capture_output=True, text=True, env=env, timeout=600)
    seconds = time.perf_counter() - t0
    if res.returncode not in ok:
        raise RuntimeError(f"{' '.join(argv[:6])}: exit {res.returncode}: {res.stderr[-800:]}")
    return seconds


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    p.add_argument("--repeat", type=int, default=5)
    args = p.parse_args()
    why = missing_prerequisites()
    if why:
        print(f"skipped: {why}")
        return 0
    with tempfile.TemporaryDirectory(prefix="dolmen-fleet-bench-") as tmp:
        root = Path(tmp)
        c = fleet_cluster.start(root / "lab")
        try:
            trees = fleet_cluster.node_trees(c, root / "hosts")
            fleet_cluster.inject_xid(trees / "n2")
            dolmen = [sys.executable, "-m", "dolmen.cli.main"]
            one = [*dolmen, "validate", "--json", "--level", "quick", "--from", str(trees / "n1")]
            fleet = [*dolmen, *fleet_cluster.fleet_argv(c, trees, root / "fleet")]
            timed(one, (0,))  # warm the page cache once
            runs: dict[str, list[float]] = {"one node": [], "fleet x1": [], "fleet x3": []}
            for _ in range(args.repeat):
                runs["one node"].append(timed(one, (0,)))
                runs["fleet x1"].append(timed([*fleet, "--nodelist", "n1"], (0,)))
                runs["fleet x3"].append(timed(fleet, (1,)))  # n2 is unhealthy
        finally:
            c.stop()
    med = {k: statistics.median(v) for k, v in runs.items()}
    print(f"fleet validate --slurm, {args.repeat} runs each, medians (cpus here: {os.cpu_count()})")
    for k, v in med.items():
        print(f"  {k:9s} {v:6.2f} s   (min {min(runs[k]):.2f}, max {max(runs[k]):.2f})")
    r1, r3 = med["fleet x1"] / med["one node"], med["fleet x3"] / med["one node"]
    scale = med["fleet x3"] / med["fleet x1"]
    print(f"  fleet x1 / one node:  {r1:.2f}x  (the srun step, the store: the machinery)")
    for name, r in (("fleet x3 / one node", r3), ("fleet x3 / fleet x1", scale)):
        print(f"  {name}: {r:.2f}x  ({'within' if r <= TARGET else 'over'} the {TARGET}x target)")
    return 0


if __name__ == "__main__":
    sys.exit(main())

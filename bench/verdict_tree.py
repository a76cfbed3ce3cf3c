"""What the topology tree costs a standard run: the verdict's ``inventory.topology.tree``
(the part of dolmen.topo/1 the fleet dashboard draws) against the run it is part of.

    .venv/bin/python bench/verdict_tree.py [--runs N]

In-process, on the 8-GPU host trees tests/hosts/h100-hgx-rails (8 GPUs, 9 HCAs, 4
NVSwitches) and h100-hgx-healthy, built into a temporary folder. Per host, medians of N
runs, interleaved: a whole ``validate --level standard`` (fresh host, as a run starts),
and the tree alone, built the way the inventory builds it (``checks.inventory.topology_tree``)
from a store that already holds the facts the run's checks loaded (each run a fresh
host and store, their collection not timed). Printed: both times, the tree's share of
the run (target: at most 5%), and the verdict's JSON size with and without the tree.
The quick tier builds none: its cost is bench/startup.py's (run it with --against a
checkout of the parent commit for a before/after). Exit 1 when the target is missed.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))
TARGET_SHARE = 0.05
HOSTS = ("h100-hgx-rails", "h100-hgx-healthy")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=20)
    args = parser.parse_args()
    import json

    from tests.hosts.scenarios import build, config

    from dolmen.checks.inventory import topology_tree
    from dolmen.checks.model import Level
    from dolmen.checks.suite import validate
    from dolmen.facts import FactStore
    from dolmen.facts.topology.of_run import NEEDS
    from dolmen.host.tree import TreeHost
    from dolmen.report.json import verdict_document

    ok = True
    print(f"standard runs in-process, {args.runs} runs each, interleaved; medians")
    with tempfile.TemporaryDirectory(prefix="dolmen-bench-tree-") as tmp:
        for name in HOSTS:
            tree = build(name, Path(tmp) / name)
            runs, trees = [], []
            doc: dict[str, object] = {}
            for _ in range(args.runs):
                t0 = time.perf_counter()
                verdict = validate(TreeHost(tree), level=Level.STANDARD, config=config(name))
                runs.append(time.perf_counter() - t0)
                doc = verdict_document(verdict)
                store = FactStore(TreeHost(tree))
                store.collect(NEEDS)
                t0 = time.perf_counter()
                topology_tree(store)
                trees.append(time.perf_counter() - t0)
            run, part = statistics.median(runs), statistics.median(trees)
            share = part / run
            ok = ok and share <= TARGET_SHARE
            size = len(json.dumps(doc))
            inv = doc["inventory"]
            assert isinstance(inv, dict)
            without = size - len(json.dumps(inv["topology"]["tree"])) - len(', "tree": ')
            print(
                f"  {name:<17} run {run * 1000:7.1f} ms   tree {part * 1000:5.2f} ms"
                f" ({share:5.1%} of the run)   verdict {size / 1024:5.1f} KiB"
                f" ({without / 1024:5.1f} KiB without the tree)"
            )
    print(f"target: the tree at most {TARGET_SHARE:.0%} of a standard run: ", end="")
    print("met" if ok else "MISSED")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())

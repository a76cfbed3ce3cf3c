"""``dolmen stack`` figures, each against a peer measured in the same run (not a test).

    .venv/bin/python bench/stack_bench.py [--repeat N]

- reading this machine's package database: ``stack.packages.read_packages`` (parse of
  var/lib/dpkg/status) as a ratio to ``dpkg-query -W`` printing the same fields;
- ``dolmen stack diff LOCK --from TREE`` end to end (a process, the 8-GPU H100 scenario
  with a dpkg database, as the ``stack.lock`` check would on a node) as a ratio to a bare
  ``python -c pass`` start of the same interpreter.

Medians of N runs (default 5); the core count is printed with them.
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
from collections.abc import Callable
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(REPO), str(REPO / "src")]

from tests.stack.nodes import node  # noqa: E402

from dolmen.host.live import LiveHost  # noqa: E402
from dolmen.host.tree import TreeHost  # noqa: E402
from dolmen.stack.lockfile import dumps  # noqa: E402
from dolmen.stack.observe import observe  # noqa: E402
from dolmen.stack.packages import read_packages  # noqa: E402

QUERY = ["dpkg-query", "-W", "-f", "${Package}\\t${Version}\\t${db:Status-Abbrev}\\n"]


def median_s(fn: Callable[[], object], n: int) -> float:
    """The median wall time of ``n`` calls of ``fn``."""
    times = []
    for _ in range(n):
        t0 = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t0)
    return statistics.median(times)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--repeat", type=int, default=5)
    n = ap.parse_args().repeat
    print(f"cores: {os.cpu_count()}, repeats: {n}")
    if Path("/var/lib/dpkg/status").exists() and shutil.which("dpkg-query"):
        count = len(read_packages(LiveHost()).installed)
        ours = median_s(lambda: read_packages(LiveHost()), n)
        peer = median_s(lambda: subprocess.run(QUERY, capture_output=True, check=True), n)
        print(
            f"package database ({count} packages): read_packages {ours * 1e3:.1f} ms, "
            f"dpkg-query -W {peer * 1e3:.1f} ms, ratio {ours / peer:.2f}"
        )
    else:
        print("package database: no dpkg here, skipped")
    env = {**os.environ, "PYTHONPATH": f"{REPO / 'src'}:{REPO}"}
    with tempfile.TemporaryDirectory() as tmp:
        tree = node(Path(tmp) / "node")
        lock = Path(tmp) / "stack.toml"
        lock.write_text(dumps(observe(TreeHost(tree))))
        argv = [
            sys.executable,
            "-m",
            "dolmen.cli.main",
            "stack",
            "diff",
            str(lock),
            "--from",
            str(tree),
        ]
        diff_s = median_s(lambda: subprocess.run(argv, env=env, capture_output=True, check=True), n)
        bare = [sys.executable, "-c", "pass"]
        bare_s = median_s(lambda: subprocess.run(bare, capture_output=True, check=True), n)
    print(
        f"stack diff of the 8-GPU tree: {diff_s * 1e3:.0f} ms, bare python start "
        f"{bare_s * 1e3:.0f} ms, ratio {diff_s / bare_s:.1f}"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())

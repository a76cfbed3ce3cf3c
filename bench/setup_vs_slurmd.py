"""``dolmen setup``'s node line against ``slurmd -C``, measured in the same run (not a test).

    .venv/bin/python bench/setup_vs_slurmd.py [--runs N]

- this machine's node line: dolmen (facts read in-process, conf_gen) against
  ``slurmd -C`` (slurmd's own reading), median seconds of N runs each, the ratio, and
  whether every figure agrees;
- the whole flow planned (``dolmen setup --dry-run``) on the 8x H100 scenario tree
  against ``dolmen validate --level quick`` on the same tree (what a node runs every few
  minutes as its health check), in-process, median of N.
"""

from __future__ import annotations

import argparse
import contextlib
import io
import os
import shutil
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(REPO / "src"), str(REPO)]

from dolmen.cli.main import main  # noqa: E402
from dolmen.host import open_host  # noqa: E402
from dolmen.setup.node import node_shape  # noqa: E402
from dolmen.slurm.conf_gen import node_line  # noqa: E402


def median(fn: Callable[[], object], runs: int) -> float:
    times = []
    for _ in range(runs):
        t0 = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t0)
    return statistics.median(times)


def disagree(ours: str, theirs: str) -> list[str]:
    """The figures of two node lines that differ (slurmd -C writes Boards= and
    SocketsPerBoard=, dolmen Sockets=: their product is compared)."""
    a = dict(w.split("=", 1) for w in ours.split() if "=" in w)
    b = dict(w.split("=", 1) for w in theirs.split() if "=" in w)
    if "Sockets" not in b and {"Boards", "SocketsPerBoard"} <= b.keys():
        b["Sockets"] = str(int(b["Boards"]) * int(b["SocketsPerBoard"]))
    keys = ("CPUs", "Sockets", "CoresPerSocket", "ThreadsPerCore", "RealMemory")
    return [f"{k} {a.get(k)} != {b.get(k)}" for k in keys if a.get(k) != b.get(k)]


def quiet(argv: list[str]) -> None:
    with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(io.StringIO()):
        main(argv)


def run(runs: int) -> None:
    slurmd = shutil.which("slurmd") or "/usr/sbin/slurmd"
    name = socket.gethostname().split(".", 1)[0]
    ours = node_line(node_shape(open_host(None), name))
    if Path(slurmd).exists():
        ref = subprocess.run([slurmd, "-C"], capture_output=True, text=True).stdout.split()[:7]
        t_ref = median(lambda: subprocess.run([slurmd, "-C"], capture_output=True), runs)
        t_ours = median(lambda: node_line(node_shape(open_host(None), name)), runs)
        print(f"dolmen : {ours}")
        print(f"slurmd : {' '.join(ref)}")
        differ = disagree(ours, " ".join(ref))
        print(f"figures: {'every one agrees' if not differ else 'differ: ' + ', '.join(differ)}")
        print(
            f"node line: dolmen {t_ours * 1e3:.1f} ms, slurmd -C {t_ref * 1e3:.1f} ms, "
            f"ratio dolmen/slurmd {t_ours / t_ref:.2f}"
        )
    else:
        print("slurmd not installed: no reference line")
    from tests.hosts import scenarios

    with tempfile.TemporaryDirectory() as tmp:
        os.environ["DOLMEN_STATE_DIR"] = f"{tmp}/state"
        os.environ["DOLMEN_CONFIG_DIR"] = tmp
        tree = str(scenarios.build("h100-hgx-healthy", Path(tmp) / "tree"))
        t_plan = median(lambda: quiet(["setup", "--from", tree, "--dry-run"]), runs)
        t_val = median(lambda: quiet(["validate", "--from", tree, "--level", "quick"]), runs)
        print(
            f"8x H100 tree: setup --dry-run {t_plan * 1e3:.0f} ms, validate --level quick "
            f"{t_val * 1e3:.0f} ms, ratio {t_plan / t_val:.2f}"
        )


if __name__ == "__main__":
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--runs", type=int, default=5)
    run(p.parse_args().runs)

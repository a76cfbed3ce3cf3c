"""The warm path of the quick tier: `dolmen validate --level quick --npd` answered by a
running `dolmen serve` (its unix socket), against the same command run cold
(DOLMEN_AGENT=off) and a bare `python -c pass`, interleaved in one run.

    .venv/bin/python bench/agent_quick.py [--runs N]

Issue 14's target: the warm path at most 3x a bare Python start (wall clock, medians).
The host is the 8x H100 tree with GPU 3 fallen off the bus (tests/hosts/h100-xid79),
built into a temporary folder that is also the agent's state folder; the agent reads the
same tree (--from), so the warm and the cold answers can be compared, and are: same
stdout, same exit code, or the bench fails. dolmen starts as the console script does
(`from dolmen.cli.main import main`). Bytecode caches are warm (two runs each first).
Printed: each median (wall and CPU time), the ratios, and whether the target is met.
Exit 1 when it is missed.
"""

from __future__ import annotations

import argparse
import os
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))
sys.path.insert(0, str(REPO / "src"))
TARGET_RATIO = 3.0
ENTRY = "import sys; from dolmen.cli.main import main; sys.exit(main())"

from bench.startup import timed  # noqa: E402


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--runs", type=int, default=30)
    args = ap.parse_args()
    from tests.hosts import scenarios

    with tempfile.TemporaryDirectory(prefix="dab-", dir="/tmp") as tmp:
        root = Path(tmp)
        tree = scenarios.build("h100-xid79", root / "tree")
        env = dict(os.environ, PYTHONPATH=str(REPO / "src"))
        env |= {"DOLMEN_STATE_DIR": str(root / "state"), "DOLMEN_CONFIG_DIR": str(root / "config")}
        env["PYTHONPYCACHEPREFIX"] = str(root / "pyc")
        env.pop("DOLMEN_AGENT", None)
        cold_env = dict(env, DOLMEN_AGENT="off")
        with socket.socket() as s:
            s.bind(("127.0.0.1", 0))
            port = s.getsockname()[1]
        server = subprocess.Popen(
            [sys.executable, "-c", ENTRY, "serve", "--from", str(tree), "--listen",
             f"127.0.0.1:{port}", "--interval", "1h"],
            env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
        )  # fmt: skip
        try:
            sock = root / "state" / "serve" / "agent.sock"
            quick = [sys.executable, "-c", ENTRY, "validate", "--level", "quick", "--from",
                     str(tree), "--npd"]  # fmt: skip
            end = time.monotonic() + 120
            while time.monotonic() < end:
                r = subprocess.run(quick, env=env, capture_output=True, text=True)
                if sock.exists() and "local agent" in r.stderr:
                    break
                time.sleep(0.2)
            else:
                print("the agent never answered", file=sys.stderr)
                return 1
            cold = subprocess.run(quick, env=cold_env, capture_output=True, text=True)
            if (r.stdout, r.returncode) != (cold.stdout, cold.returncode):
                print(f"warm and cold differ: {r.stdout!r} {cold.stdout!r}", file=sys.stderr)
                return 1
            commands = {
                "bare python -c pass": ([sys.executable, "-c", "pass"], env),
                "warm (agent)": (quick, env),
                "cold (DOLMEN_AGENT=off)": (quick, cold_env),
            }
            for argv, e in commands.values():
                timed(argv, e)
                timed(argv, e)
            walls: dict[str, list[float]] = {k: [] for k in commands}
            cpus: dict[str, list[float]] = {k: [] for k in commands}
            for _ in range(args.runs):
                for name, (argv, e) in commands.items():
                    w, c = timed(argv, e)
                    walls[name].append(w)
                    cpus[name].append(c)
        finally:
            os.kill(server.pid, signal.SIGTERM)
            server.wait(15)
    bare_w = statistics.median(walls["bare python -c pass"])
    bare_c = statistics.median(cpus["bare python -c pass"])
    head = f"{'command':<26} {'wall ms':>8} {'x bare':>7} {'cpu ms':>8} {'x bare':>7}"
    print(f"{head}  ({args.runs} runs)")
    for name in commands:
        w, c = statistics.median(walls[name]), statistics.median(cpus[name])
        print(f"{name:<26} {w * 1e3:8.1f} {w / bare_w:7.2f} {c * 1e3:8.1f} {c / bare_c:7.2f}")
    warm = statistics.median(walls["warm (agent)"]) / bare_w
    cold = statistics.median(walls["cold (DOLMEN_AGENT=off)"]) / bare_w
    met = warm <= TARGET_RATIO
    verdict = "met" if met else "MISSED"
    print(f"warm path {warm:.2f}x a bare start (target <= {TARGET_RATIO:g}x): {verdict}")
    print(f"cold path {cold:.2f}x a bare start; the warm path is {cold / warm:.1f}x faster")
    return 0 if met else 1


if __name__ == "__main__":
    sys.exit(main())

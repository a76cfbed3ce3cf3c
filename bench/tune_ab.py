"""A/B harness for ``dolmen tune``: does a profile make a workload faster on this host?

The seed's claim of 5-15% more training throughput than stock Ubuntu has no public
controlled benchmark behind it (../shared/notes/tuning-sources.md, "Evidence"), so dolmen
measures instead of claiming. The harness runs a workload N times with the host as it is
(arm A: no profile; ``dolmen tune rollback`` restores it between runs) and N times with
a profile applied (arm B, through the real ``dolmen tune apply``, journal and audit
included), in ABBA order so slow drifts of the machine cancel, and prints the ratio of
the medians with a bootstrap 95% interval and each arm's min-max.

    # any workload that prints its throughput as the last number of its output:
    python bench/tune_ab.py ab --profile ai-training --runs 10 -- python train_step.py
    # this machine: loopback TCP inside a throwaway network namespace, default
    # net values against ai-training-multinode's per-namespace ones (needs root):
    python bench/tune_ab.py demo-netns --runs 10
    # the workload the demo runs (prints "throughput_MBps <n>"):
    python bench/tune_ab.py tcp --seconds 2

Apply and rollback change the host: run ``ab`` only where that is allowed.
"""

from __future__ import annotations

import argparse
import os
import random
import re
import shutil
import socket
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Sequence
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
NUMBER = re.compile(r"[-+]?\d+(?:\.\d+)?(?:[eE][-+]?\d+)?")
CHUNK = 1 << 20


# --- the workload: loopback TCP throughput ---------------------------------------------------
def tcp_throughput(seconds: float, streams: int) -> float:
    """MB/s sent over loopback by ``streams`` connections for ``seconds`` (a receiver thread
    per stream drains into a preallocated buffer; the sender is this process)."""
    server = socket.create_server(("127.0.0.1", 0))
    port = server.getsockname()[1]
    received = [0] * streams

    def drain(i: int) -> None:
        conn, _ = server.accept()
        buf = bytearray(CHUNK)
        view = memoryview(buf)
        with conn:
            while n := conn.recv_into(view):
                received[i] += n

    threads = [threading.Thread(target=drain, args=(i,), daemon=True) for i in range(streams)]
    for t in threads:
        t.start()
    clients = [socket.create_connection(("127.0.0.1", port)) for _ in range(streams)]
    payload = b"\0" * CHUNK
    t0 = time.perf_counter()
    deadline = t0 + seconds
    while time.perf_counter() < deadline:
        for c in clients:
            c.sendall(payload)
    for c in clients:
        c.shutdown(socket.SHUT_WR)
    for t in threads:
        t.join()
    elapsed = time.perf_counter() - t0
    for c in clients:
        c.close()
    server.close()
    return sum(received) / elapsed / 1e6


# --- statistics -------------------------------------------------------------------------------
def bootstrap_ratio(a: Sequence[float], b: Sequence[float], n: int = 4000) -> tuple[float, float]:
    """95% interval of median(b)/median(a) by resampling both arms (seeded: reproducible)."""
    rng = random.Random(20260808)
    ratios = sorted(
        statistics.median(rng.choices(b, k=len(b))) / statistics.median(rng.choices(a, k=len(a)))
        for _ in range(n)
    )
    return ratios[int(0.025 * n)], ratios[int(0.975 * n) - 1]


def report(profile: str, a: list[float], b: list[float], what: str) -> str:
    """The result block: medians, ranges, ratio and its interval."""
    lo, hi = bootstrap_ratio(a, b)
    ratio = statistics.median(b) / statistics.median(a)
    lines = [
        f"workload: {what}",
        f"A (no profile)  n={len(a)} median {statistics.median(a):.1f}  "
        f"min-max {min(a):.1f}-{max(a):.1f}",
        f"B ({profile})  n={len(b)} median {statistics.median(b):.1f}  "
        f"min-max {min(b):.1f}-{max(b):.1f}",
        f"ratio B/A of medians: {ratio:.3f}  (95% bootstrap interval {lo:.3f}-{hi:.3f})",
        "A: " + " ".join(f"{x:.1f}" for x in a),
        "B: " + " ".join(f"{x:.1f}" for x in b),
    ]
    return "\n".join(lines)


# --- the harness ------------------------------------------------------------------------------
class Runner:
    """Runs dolmen and the workload, optionally inside a network namespace."""

    def __init__(self, root: str, env: dict[str, str], netns: str | None = None) -> None:
        self.root, self.env, self.netns = root, env, netns

    def _wrap(self, argv: Sequence[str]) -> list[str]:
        return (["ip", "netns", "exec", self.netns] if self.netns else []) + list(argv)

    def dolmen(self, *args: str) -> str:
        argv = [sys.executable, "-m", "dolmen.cli.main", "tune", *args, "--root", self.root]
        res = subprocess.run(self._wrap(argv), env=self.env, capture_output=True, text=True)
        if res.returncode != 0:
            raise SystemExit(f"dolmen tune {' '.join(args)} failed:\n{res.stdout}{res.stderr}")
        return res.stdout

    def workload(self, argv: Sequence[str]) -> float:
        t0 = time.perf_counter()
        res = subprocess.run(self._wrap(argv), env=self.env, capture_output=True, text=True)
        elapsed = time.perf_counter() - t0
        if res.returncode != 0:
            raise SystemExit(f"workload failed ({res.returncode}):\n{res.stderr}")
        found = NUMBER.findall(res.stdout.strip().splitlines()[-1]) if res.stdout.strip() else []
        return float(found[-1]) if found else 1.0 / elapsed  # runs per second otherwise


def ab(
    runner: Runner, profile: str, argv: Sequence[str], runs: int
) -> tuple[list[float], list[float]]:
    """ABBA-ordered runs; B applies the profile before and rolls it back after each run."""
    a: list[float] = []
    b: list[float] = []
    order = ["A", "B", "B", "A"]
    for i in range(2 * runs):
        arm = order[i % 4]
        if arm == "B":
            runner.dolmen("apply", profile, "--yes")
            try:
                b.append(runner.workload(argv))
            finally:
                runner.dolmen("rollback", "--yes")
        else:
            a.append(runner.workload(argv))
        print(f"  run {i + 1:>2}/{2 * runs} {arm}: {(a if arm == 'A' else b)[-1]:.1f}", flush=True)
    return a, b


def netns_profile(config: Path) -> tuple[str, list[str]]:
    """A site profile of ai-training-multinode's sysctls that a network namespace can set."""
    sys.path.insert(0, str(REPO / "src"))
    from dolmen.tune.profile import load_profile

    keep, left = [], []
    for e in load_profile("ai-training-multinode").entries:
        if e.setting != "sysctl" or not e.key.startswith("net."):
            continue
        # net.core.* buffers and queues are global: read-only outside the initial namespace.
        (left if e.key.startswith("net.core.") else keep).append(e)
    lines = [f'"{e.key}" = {{ value = "{e.value}", source = "{e.source}" }}' for e in keep]
    (config / "profiles").mkdir(parents=True, exist_ok=True)
    (config / "profiles" / "multinode-netns.toml").write_text(
        '[profile]\ndescription = "per-namespace network values of ai-training-multinode"\n'
        "persist = false\n[sysctl]\n" + "\n".join(lines) + "\n"
    )
    return "multinode-netns", [e.key for e in left]


def demo_netns(runs: int, seconds: float, streams: int) -> None:
    """The demonstration this machine allows (see module docstring)."""
    if os.geteuid() != 0 or shutil.which("ip") is None:
        raise SystemExit("demo-netns needs root and iproute2 (it creates a network namespace)")
    ns = f"dolmen-tune-ab-{os.getpid()}"
    with tempfile.TemporaryDirectory(prefix="dolmen-tune-ab-") as tmp:
        env = {
            **os.environ,
            "PYTHONPATH": str(REPO / "src"),
            "DOLMEN_STATE_DIR": f"{tmp}/state",
            "DOLMEN_CONFIG_DIR": f"{tmp}/config",
        }
        profile, left_out = netns_profile(Path(tmp) / "config")
        subprocess.run(["ip", "netns", "add", ns], check=True)
        try:
            subprocess.run(["ip", "netns", "exec", ns, "ip", "link", "set", "lo", "up"], check=True)
            runner = Runner("/", env, ns)
            print(runner.dolmen("plan", profile))
            print("left out (global, read-only in a namespace): " + ", ".join(left_out))
            argv = [
                sys.executable,
                __file__,
                "tcp",
                "--seconds",
                str(seconds),
                "--streams",
                str(streams),
            ]
            a, b = ab(runner, profile, argv, runs)
        finally:
            subprocess.run(["ip", "netns", "del", ns], check=False)
    what = f"loopback TCP, {streams} stream(s) x {seconds:g} s, MB/s, in a network namespace"
    print(report(profile, a, b, what))
    print(
        "This measures this VM's loopback TCP with larger socket buffers; it says nothing "
        "about GPU training throughput."
    )


def main(argv: Sequence[str] | None = None) -> None:
    """Command line: ``ab``, ``demo-netns`` or the ``tcp`` workload."""
    p = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    sub = p.add_subparsers(dest="cmd", required=True)
    a = sub.add_parser("ab", help="A/B a profile against the host as it is")
    a.add_argument("--profile", required=True)
    a.add_argument("--root", default="/")
    a.add_argument("--runs", type=int, default=10)
    a.add_argument("workload", nargs=argparse.REMAINDER, help="-- CMD ARGS...")
    d = sub.add_parser("demo-netns", help="loopback TCP in a network namespace (root)")
    d.add_argument("--runs", type=int, default=10)
    d.add_argument("--seconds", type=float, default=2.0)
    d.add_argument("--streams", type=int, default=1)
    t = sub.add_parser("tcp", help="the loopback TCP workload")
    t.add_argument("--seconds", type=float, default=2.0)
    t.add_argument("--streams", type=int, default=1)
    args = p.parse_args(argv)
    if args.cmd == "tcp":
        print(f"throughput_MBps {tcp_throughput(args.seconds, args.streams):.1f}")
    elif args.cmd == "demo-netns":
        demo_netns(args.runs, args.seconds, args.streams)
    else:
        cmd = [w for w in args.workload if w != "--"]
        if not cmd:
            raise SystemExit("give the workload after --")
        env = {**os.environ, "PYTHONPATH": str(REPO / "src")}
        x, y = ab(Runner(args.root, env), args.profile, cmd, args.runs)
        print(report(args.profile, x, y, " ".join(cmd)))


if __name__ == "__main__":
    main()

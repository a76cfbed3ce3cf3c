"""/metrics under load: 50 bounded concurrent scrapers against `dolmen serve` and against
a bare prometheus_client HTTP server exposing as many series, in the same run.

    .venv/bin/python bench/serve_metrics.py [--scrapers 50] [--requests 2000]

dolmen serve reads the 8x H100 tree with GPU 3 fallen off the bus (tests/hosts/h100-xid79):
some 250 series with dcgm-exporter's labels. The peer is prometheus_client's own
`start_http_server` (what most exporters written in Python run) with one gauge family
holding the same number of series, each with as many labels; each server is a process of
its own. The scrapers are one asyncio process (httpx), at most --scrapers requests in
flight, --requests in all per server, alternating rounds so that the machine's load
falls on both alike. Printed: p50, p99 and max latency and requests per second for each,
and the p99 ratio dolmen / prometheus_client.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import httpx

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))
ENTRY = "import sys; from dolmen.cli.main import main; sys.exit(main())"

PEER = """
import sys, time
from prometheus_client import CollectorRegistry, Gauge, start_http_server
n, port = int(sys.argv[1]), int(sys.argv[2])
reg = CollectorRegistry()
g = Gauge("dolmen_check_status", "1 for the status", ["Hostname", "level", "check", "subject",
          "gpu", "UUID", "pci_bus_id", "modelName", "status"], registry=reg)
for i in range(n):
    g.labels("node-1", "quick", f"gpu.check_{i % 40}", f"gpu:00000000:{i % 8:02x}:00.0", str(i % 8),
             f"GPU-{i:08d}", f"00000000:{i % 8:02x}:00.0", "NVIDIA H100 80GB HBM3", "pass").set(1)
start_http_server(port, addr="127.0.0.1", registry=reg)
while True:
    time.sleep(3600)
"""


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port: int = s.getsockname()[1]
        return port


def wait_for(url: str, seconds: float = 120) -> str:
    end = time.monotonic() + seconds
    while time.monotonic() < end:
        try:
            r = httpx.get(url, timeout=5)
            if r.status_code == 200 and "dolmen_check_status" in r.text:
                return r.text
        except httpx.TransportError:
            pass
        time.sleep(0.2)
    raise SystemExit(f"{url} never answered")


async def scrape(url: str, total: int, scrapers: int) -> tuple[list[float], float]:
    gate = asyncio.Semaphore(scrapers)
    lat: list[float] = []
    limits = httpx.Limits(max_connections=scrapers, max_keepalive_connections=scrapers)
    async with httpx.AsyncClient(timeout=30, limits=limits) as client:

        async def one() -> None:
            async with gate:
                t0 = time.perf_counter()
                r = await client.get(url)
                r.raise_for_status()
                lat.append(time.perf_counter() - t0)

        t0 = time.perf_counter()
        await asyncio.gather(*(one() for _ in range(total)))
        return lat, time.perf_counter() - t0


def p(values: list[float], q: float) -> float:
    return statistics.quantiles(values, n=100, method="inclusive")[int(q) - 1]


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--scrapers", type=int, default=50)
    ap.add_argument("--requests", type=int, default=2000)
    ap.add_argument("--rounds", type=int, default=4)
    args = ap.parse_args()
    from tests.hosts import scenarios

    procs: list[subprocess.Popen[bytes]] = []
    with tempfile.TemporaryDirectory(prefix="dsm-", dir="/tmp") as tmp:
        root = Path(tmp)
        tree = scenarios.build("h100-xid79", root / "tree")
        env = dict(os.environ, PYTHONPATH=str(REPO / "src"), DOLMEN_STATE_DIR=str(root / "state"),
                   DOLMEN_CONFIG_DIR=str(root / "config"))  # fmt: skip
        try:
            port = free_port()
            procs.append(subprocess.Popen(
                [sys.executable, "-c", ENTRY, "serve", "--from", str(tree), "--listen",
                 f"127.0.0.1:{port}", "--interval", "1h"],
                env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL))  # fmt: skip
            ours = f"http://127.0.0.1:{port}/metrics"
            text = wait_for(ours)
            series = sum(1 for ln in text.splitlines() if ln.startswith("dolmen_check_status"))
            peer_port = free_port()
            procs.append(subprocess.Popen(
                [sys.executable, "-c", PEER, str(series), str(peer_port)], env=env))  # fmt: skip
            theirs = f"http://127.0.0.1:{peer_port}/metrics"
            wait_for(theirs)
            results: dict[str, tuple[list[float], float]] = {
                "dolmen serve": ([], 0.0),
                "prometheus_client": ([], 0.0),
            }
            per_round = max(args.requests // args.rounds, args.scrapers)
            for _ in range(args.rounds):
                for name, url in (("dolmen serve", ours), ("prometheus_client", theirs)):
                    lat, wall = asyncio.run(scrape(url, per_round, args.scrapers))
                    results[name][0].extend(lat)
                    results[name] = (results[name][0], results[name][1] + wall)
        finally:
            for proc in procs:
                os.kill(proc.pid, signal.SIGTERM)
                proc.wait(15)
    print(f"{series} dolmen_check_status series ({len(text)} bytes), {args.scrapers} scrapers, "
          f"{per_round * args.rounds} requests per server")  # fmt: skip
    print(f"{'server':<18} {'p50 ms':>8} {'p99 ms':>8} {'max ms':>8} {'req/s':>8}")
    for name, (lat, wall) in results.items():
        print(f"{name:<18} {p(lat, 50) * 1e3:8.1f} {p(lat, 99) * 1e3:8.1f} "
              f"{max(lat) * 1e3:8.1f} {len(lat) / wall:8.0f}")  # fmt: skip
    ratio = p(results["dolmen serve"][0], 99) / p(results["prometheus_client"][0], 99)
    print(f"p99 ratio dolmen serve / prometheus_client: {ratio:.2f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())

"""Time from a job's start to its isolation being in effect: one set update (dolmen's
``job_started``) against a full ruleset reload, with 1, 100 and 1,000 jobs already
running, inside a network namespace this bench creates and deletes.

    sudo .venv/bin/python bench/net_set_update.py [--runs N] [--jobs 1,100,1000]

For each count N the namespace gets the compiled ``inet dolmen`` table with N+1 job
slots, N of them holding a running job: its (member, protocol, port) keys, two members
and the policy's ports (interval concatenations). Then, timed
until nft has returned (the kernel committed the transaction: the next packet sees it):

- set update: ``job_started`` for one more job (read the slots, one batch of element
  updates), then ``job_ended`` outside the timing; its nft batch alone is timed too;
- full reload: the whole table with the N+1 jobs replaced in one batch (what a design
  that rewrites rules per job would do at every start and end).

Printed: medians per N, reload / set update, and how the set update at the largest N
compares with the smallest (the claim: it stays flat, within 2x, while the reload grows).
Exit 1 when it does not stay flat.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import time
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "src"))

from dolmen.host.netns import NetnsHost, add_namespace, delete_namespace  # noqa: E402
from dolmen.net import nft  # noqa: E402
from dolmen.net.model import Policy, parse_address, parse_policy  # noqa: E402
from dolmen.net.nft_compile import owner_tag, pair_elems, slot_sets  # noqa: E402

FLAT = 2.0  # the set update at 1,000 jobs within this factor of the one at 1 job
POLICY = """\
[policy]
name = "bench"
[management]
from = ["10.250.0.10"]
services = { ssh = 22, slurm = "6817-6819", monitoring = 9100 }
[jobs]
tcp = [29500, "40000-40100"]
udp = "50000-50010"
"""


def _member(k: int, i: int) -> str:
    return f"10.{k // 250}.{k % 250}.{i}"


def _loaded(policy: Policy, n: int) -> dict[str, Any]:
    """The full table with jobs 0..n-1 running: one replace batch. Each job's slot holds
    its (member, port) pairs: two members, the policy's TCP and UDP ports."""
    table = nft.compile_table(policy)
    ports = policy.job_ports
    live: list[dict[str, Any]] = [
        {"set": {"name": "slots", "type": "mark",
                 "elem": [{"elem": {"val": k, "comment": f"job:{k}"}} for k in range(n)]}},
        {"set": {"name": "owners", "type": ["mark", "mark"],
                 "elem": [{"concat": [k, owner_tag(str(k))]} for k in range(n)]}},
    ]  # fmt: skip
    key = ["ipv4_addr", "inet_proto", "inet_service"]
    for k in range(n):
        v4, _ = slot_sets(k)
        members = [parse_address(_member(k, 1)), parse_address(_member(k, 2))]
        live.append({"set": {"name": v4, "type": key, "elem": pair_elems(members, ports)}})
    return nft.replace_batch(table, live=live)


def _median_ms(samples: list[float]) -> float:
    return statistics.median(samples) * 1000


def measure(host: NetnsHost, n: int, runs: int) -> dict[str, float]:
    text = POLICY.replace('name = "bench"', f'name = "bench"\nmax_jobs = {n + 1}')
    policy = parse_policy(text)
    loaded = _loaded(policy, n)
    nft.run_batch(host, loaded)
    started, batch_only = [], []
    for r in range(runs):
        members = ["10.251.0.1", "10.251.0.2"]
        t0 = time.perf_counter()
        up = nft.job_started(host, f"new{r}", members, policy=policy)
        started.append(time.perf_counter() - t0)
        assert up.slot == n, up
        nft.job_ended(host, f"new{r}")
        batch = nft.job_batch(policy.access(f"b{r}", members), n)
        t0 = time.perf_counter()
        nft.run_batch(host, batch)
        batch_only.append(time.perf_counter() - t0)
        nft.job_ended(host, f"b{r}")
    reload = []
    full = _loaded(policy, n + 1)
    for _ in range(max(3, runs // 4)):
        t0 = time.perf_counter()
        nft.run_batch(host, full)
        reload.append(time.perf_counter() - t0)
    return {
        "set_update_ms": _median_ms(started),
        "batch_only_ms": _median_ms(batch_only),
        "reload_ms": _median_ms(reload),
        "objects": float(len(full["nftables"])),
    }


def main() -> int:
    ap = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    ap.add_argument("--runs", type=int, default=12)
    ap.add_argument("--jobs", default="1,100,1000")
    args = ap.parse_args()
    if os.geteuid() != 0:
        print("needs root (it creates a network namespace)", file=sys.stderr)
        return 2
    counts = [int(x) for x in args.jobs.split(",")]
    name = f"dnb{os.getpid()}"
    rows: dict[int, dict[str, float]] = {}
    try:
        host = add_namespace(name)
        for n in counts:
            rows[n] = measure(host, n, args.runs)
    finally:
        delete_namespace(name)
    print(f"{'jobs':>6} {'set update ms':>14} {'(batch only)':>13} {'full reload ms':>15}"
          f" {'reload/update':>14} {'batch objects':>14}")  # fmt: skip
    for n, r in rows.items():
        ratio = r["reload_ms"] / r["set_update_ms"]
        print(f"{n:>6} {r['set_update_ms']:>14.1f} {r['batch_only_ms']:>13.1f}"
              f" {r['reload_ms']:>15.1f} {ratio:>13.1f}x {int(r['objects']):>14}")  # fmt: skip
    lo, hi = rows[counts[0]], rows[counts[-1]]
    growth = hi["set_update_ms"] / lo["set_update_ms"]
    reload_growth = hi["reload_ms"] / lo["reload_ms"]
    flat = growth <= FLAT
    print(f"set update at {counts[-1]} jobs / at {counts[0]}: {growth:.2f}x "
          f"(flat: within {FLAT:g}x: {'yes' if flat else 'NO'}); "
          f"full reload: {reload_growth:.1f}x")  # fmt: skip
    return 0 if flat else 1


if __name__ == "__main__":
    sys.exit(main())

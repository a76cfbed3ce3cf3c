"""Issue 13's probe matrix, counted: every step of the test scenario proved by probes,
and the leaks counted over all of them, against a control run without the tables.

    sudo PYTHONPATH=src python bench/net_probe_matrix.py [--sample N] [--timeout S]

The cluster of tests/net/prove/cluster.py (two jobs of two members, a management host,
an outsider, six namespaces on a bridge inside a seventh). The steps: the policy
applied (through the journaled engine), two jobs running (one with its tenant's
ports), job 1 ended, job 2's slots collected by job 3's start (its epilog never ran),
an apply of a wider policy SIGKILLed after its journal (point 1) and after its batch
(point 2), each rolled back. Each step is the full matrix: every ordered pair, TCP and
UDP, the policy's ports with their edges, the well-known ones, ``--sample`` random
ones. At the crash points a leak is a probe that connected though neither policy allows
it, and the rest is judged by the table each node enforces. Printed: each step's
counts, the total, and the control (the same matrix before any table: the leaks the
prover finds when there is no isolation), as a ratio. Exit 1 when any step leaks,
blocks or cannot tell, or when the control finds nothing.
Needs root (network namespaces); elsewhere it says so and exits 0.
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))
sys.path.insert(0, str(REPO / "src"))


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--sample", type=int, default=8, help="random other ports per matrix")
    ap.add_argument("--timeout", type=float, default=0.5, help="seconds a probe may take")
    args = ap.parse_args()
    if os.geteuid() != 0:
        print("net_probe_matrix: skipped: needs root to create network namespaces")
        return 0
    with tempfile.TemporaryDirectory(prefix="dnpm-") as tmp:
        os.environ["DOLMEN_STATE_DIR"] = f"{tmp}/state"  # journals, audit: this run's own
        os.environ["DOLMEN_CONFIG_DIR"] = f"{tmp}/etc"
        return _run(Path(tmp), args.sample, args.timeout)


def _run(tmp: Path, sample: int, timeout: float) -> int:
    import tests.net.prove.lab as labmod
    from tests.net.prove.cluster import cluster

    from dolmen.net import jobs
    from dolmen.net.model import load_policy
    from dolmen.net.nft_change import rollback_policy
    from dolmen.net.prove import Endpoint, Observation, counts

    labmod.TIMEOUT = timeout
    (tmp / "policy.toml").write_text(labmod.POLICY)
    steps: list[tuple[str, list[Observation], float]] = []

    def step(name: str, obs: list[Observation], started: float) -> None:
        steps.append((name, list(obs), time.monotonic() - started))
        c = counts(obs)
        print(
            f"  {name:44} {c['probes']:5} probes  {c['leak']} leaks  {c['block']} blocks"
            f"  {c['unknown']} unknown  {time.monotonic() - started:5.1f} s",
            flush=True,
        )

    with cluster("b") as c:
        eps = [
            Endpoint(n.name, n.address, ("ip", "netns", "exec", n.netns)) for n in c.nodes.values()
        ]
        lab = labmod.Lab(c, load_policy(tmp / "policy.toml"), tmp / "policy.toml", eps)
        try:
            t = time.monotonic()  # the control: the fresh cluster has no table anywhere
            control = lab.prove(sample=sample).observations
            control_s = time.monotonic() - t

            t = time.monotonic()
            lab.apply_journaled()
            step("policy applied", lab.prove(sample=sample).observations, t)
            k1, k2, k3 = (jobs.job_key("slurm", n) for n in (1, 2, 3))
            t = time.monotonic()
            for name in ("j1a", "j1b"):
                jobs.start(lab.host(name), lab.policy, k1, lab.addresses("j1a", "j1b"), known={k1})
            for name in ("j2a", "j2b"):
                jobs.start(
                    lab.host(name), lab.policy, k2, lab.addresses("j2a", "j2b"),
                    tenant="teamb", known={k1, k2},
                )  # fmt: skip
            running = [lab.access(k1, "j1a", "j1b"), lab.access(k2, "j2a", "j2b", tenant="teamb")]
            step(
                "two jobs running (one with its tenant's)",
                lab.prove(running, sample=sample).observations,
                t,
            )
            t = time.monotonic()
            for name in ("j1a", "j1b"):
                jobs.end(lab.host(name), k1)
            step("job 1 ended", lab.prove(running[1:], sample=sample).observations, t)
            t = time.monotonic()
            for name in ("j2a", "j2b"):
                jobs.start(lab.host(name), lab.policy, k3, lab.addresses("j2a", "j2b"), known={k3})
            job3 = [lab.access(k3, "j2a", "j2b")]
            step("job 2 collected at job 3's start", lab.prove(job3, sample=sample).observations, t)
            wider = lab.wider(tmp)
            for point in ("1", "2"):
                t = time.monotonic()
                died = lab.crash_apply("j1b", wider, point)
                if died.returncode != -9:
                    print(f"the crashed apply did not die at point {point}: {died.stderr}")
                    return 1
                table, matrix = lab.which_table(job3, wider, crashed="j1b", sample=sample)
                step(f"apply SIGKILLed at point {point}: the {table} table", matrix, t)
                rollback_policy(lab.host("j1b"))
            t = time.monotonic()
            step("rolled back", lab.prove(job3, sample=sample).observations, t)
        finally:
            lab.roll_back_all()
    total = [o for _, obs, _ in steps for o in obs]
    tally = counts(total)
    cc = counts(control)
    seconds = sum(s for _, _, s in steps)
    print(
        f"probe matrix: {tally['leak']} leaks in {tally['probes']} probes over {len(steps)} steps"
        f" ({tally['block']} blocks, {tally['unknown']} unknown, {seconds:.1f} s)"
    )
    rate = cc["leak"] / cc["probes"] if cc["probes"] else 0.0
    print(
        f"control without the tables: {cc['leak']} leaks in {cc['probes']} probes ({rate:.0%},"
        f" {control_s:.1f} s): leak rate {tally['leak'] / max(tally['probes'], 1):.0%}"
        f" with the policy against {rate:.0%} without"
    )
    bad = tally["leak"] or tally["block"] or tally["unknown"] or not cc["leak"]
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())

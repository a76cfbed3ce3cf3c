"""A fleet store for the dashboard tests: three nodes (healthy, an Xid 79, a row-remap
failure) and a hostile summary that must show as text, never run; n2's verdict carries the
topology matrix and tree a standard run read; a local jobs store."""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from pathlib import Path
from typing import Any

from dolmen.fleet.collect import collect
from dolmen.fleet.store import FleetStore
from tests.fleet.conftest import as_node, write

HOSTILE = '<script>window.pwned = 1</script><img src=x onerror="window.pwned=2">'


def make_store(root: Path, verdict_texts: dict[str, str]) -> Path:
    """The store folder (one collection)."""
    src = root / "in"
    write(src, "n1.json", as_node(verdict_texts["healthy"], "n1"))
    write(src, "n2.json", with_topology(as_node(verdict_texts["xid79"], "n2"), topology_of(root)))
    remap = json.loads(as_node(verdict_texts["remap"], "n3"))
    bad = next(f for f in remap["findings"] if f["status"] == "fail")
    bad["summary"] = HOSTILE + " " + bad["summary"]
    write(src, "n3.json", json.dumps(remap))
    write(src, "cut.json", "{")
    fleet = root / "fleet"
    collect([str(src)], FleetStore(fleet))
    return fleet


def topology_of(tmp: Path, excerpt: str = "nccl/issues/1453") -> dict[str, Any]:
    """The verdict ``inventory.topology`` of a real run: the sample 8x H100 node with a real
    ``nvidia-smi topo -m`` from a GitHub issue recorded in (cut off after its NIC5 row by the
    index that kept it), validated at level standard: the matrix, and the tree of its 8
    GPUs (the sample records no RDMA device; NVLink peers from that matrix)."""
    from dolmen.checks.model import Level
    from dolmen.checks.suite import validate
    from dolmen.demo import build_sample
    from dolmen.host.command import command_key
    from dolmen.host.tree import TreeHost
    from tests.conftest import recording

    text = recording("nvidia-smi-topo/issues__topo-m-excerpts.md").read_text()
    blocks = dict(re.findall(r"^## (https://\S+).*?```\n(.*?)```", text, re.S | re.M))
    block = next(b for url, b in blocks.items() if excerpt in url)
    tree = build_sample("hgx-h100", tmp / "topo-node")
    (tree / "commands" / command_key(["nvidia-smi", "topo", "-m"])).write_text(block)
    verdict = validate(TreeHost(tree), level=Level.STANDARD)
    topo: dict[str, Any] = verdict.inventory["topology"]
    return topo


def with_topology(text: str, topology: dict[str, Any], level: str = "standard") -> str:
    """A verdict text carrying ``topology``, as a run at ``level`` would."""
    doc = json.loads(text)
    doc["inventory"]["topology"] = topology
    doc["level"] = level
    return json.dumps(doc)


def make_jobs(state: Path) -> Callable[[], list[dict[str, Any]]]:
    """A local jobs store under ``state`` with two jobs (one pending, one failed after two
    restarts), and the rows ``dolmen serve`` hands the dashboard (``/v1/jobs``'s)."""
    from dolmen.jobs.backend import JobState
    from dolmen.jobs.local.store import JobStore
    from dolmen.jobs.spec import JobSpec
    from dolmen.serve.reads import job_rows

    store = JobStore(state)
    store.create(JobSpec(name="llama-ft", command=("python", "train.py"), nodes=1), "alice", {})
    done = store.create(JobSpec(name="nccl-sweep", command=("./sweep",), nodes=1), "bob", {})
    store.update(done, state=JobState.FAILED, restarts=2, reason="rank 3 exited 1")
    store.close()
    return lambda: job_rows(str(state))

"""The fleet tests' own Slurm cluster (tests/slurm/cluster.py) and per-node host trees.

A module-scoped cluster with a tag of its own (``dlmt<pid>-fl``): it never shares
namespaces with the Slurm tests' session cluster, even in one pytest run. Its health
check, prolog and epilog are no-ops: ``fleet validate`` is what judges and drains the
nodes here, and nothing else may race it (the health check would resume a node dolmen
drained from a healthy tree within its 10 s interval). The trees ``fleet validate``
reads are copies of the harness's healthy ones; ``inject_xid`` adds an Xid 79 stamped now.
"""

from __future__ import annotations

import contextlib
import os
import shutil
from collections.abc import Iterator
from datetime import datetime
from pathlib import Path

import pytest

from dolmen.compat import UTC
from tests.slurm.cluster import TAG_PREFIX, SlurmCluster, missing_prerequisites
from tests.slurm.config import HOOKS, XID79


def start(lab: Path) -> SlurmCluster:
    """A running 3-node cluster whose hooks do nothing (the caller stops it)."""
    c = SlurmCluster(lab, tag=f"{TAG_PREFIX}{os.getpid()}-fl")
    c.start()
    for kind in HOOKS:
        (c.lab / "bin" / f"dolmen-slurm-{kind}").write_text("#!/bin/sh\nexit 0\n")
    return c


@contextlib.contextmanager
def running(lab: Path) -> Iterator[SlurmCluster]:
    """The cluster of ``start`` for the length of a test module (skipped, saying why,
    where this machine cannot run one), stopped after it."""
    why = missing_prerequisites()
    if why:
        pytest.skip(why)
    c = start(lab)
    try:
        yield c
    finally:
        c.stop()


def node_trees(c: SlurmCluster, dest: Path) -> Path:
    """A copy of every node's healthy host tree under ``dest/<node>``."""
    for node in c.node_names:
        shutil.copytree(c.tree(node), dest / node, symlinks=True)
    return dest


def inject_xid(tree: Path) -> None:
    """An Xid 79 (GPU fell off the bus) in the tree's kernel log, stamped now."""
    dmesg = tree / "commands" / "dmesg"
    now = datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%S,%f+00:00")
    dmesg.write_text(dmesg.read_text() + f"kern  :warn  : {now} {XID79}\n")


def fleet_argv(c: SlurmCluster, trees: Path, fleet: Path, *more: str) -> list[str]:
    """``dolmen fleet validate --slurm`` on the cluster's nodes, each node read from its
    tree under ``trees`` (the tests and bench/fleet_validate.py run the same command)."""
    return [
        "fleet",
        "validate",
        "--slurm",
        "--prefix",
        str(c.client),
        "--from",
        f"{trees}/{{node}}",
        "-o",
        str(fleet),
        *more,
    ]

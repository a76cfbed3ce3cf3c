"""The real Slurm cluster as session fixtures: ``slurm_cluster`` and ``slurm_accounting``.

Started once per test session, proven idle before a test gets it, torn down by
PID (daemons, job processes, namespaces, lab folder) when the session ends,
when a test fails, on Ctrl-C (pytest's teardown), on SIGTERM and at exit.
Skips with the reason when not root or when slurm-wlm / munge are missing.
"""

from __future__ import annotations

import atexit
import signal
import sys
from collections.abc import Iterator
from types import FrameType

import pytest

from tests.hosts.scenarios import MissingRecording, build
from tests.slurm import accounting
from tests.slurm.cluster import SlurmCluster, missing_prerequisites
from tests.slurm.config import SCENARIO


@pytest.fixture(scope="session")
def slurm_cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[SlurmCluster]:
    """A running 3-node cluster, 4 fake GPUs per node, every node idle."""
    why = missing_prerequisites()
    if why:
        pytest.skip(why)
    try:  # the node trees are built from real recordings
        build(SCENARIO, tmp_path_factory.mktemp("scenario-probe"))
    except MissingRecording as e:
        pytest.skip(f"the node host trees need recordings that are absent: {e}")
    # Submissions are audit events: keep dolmen's state and config in the session's folder.
    mp = pytest.MonkeyPatch()
    mp.setenv("DOLMEN_STATE_DIR", str(tmp_path_factory.mktemp("dolmen-state")))
    mp.setenv("DOLMEN_CONFIG_DIR", str(tmp_path_factory.mktemp("dolmen-etc")))
    cluster = SlurmCluster(tmp_path_factory.mktemp("slurm-lab"))
    atexit.register(cluster.stop)
    previous = signal.getsignal(signal.SIGTERM)

    def on_term(signum: int, frame: FrameType | None) -> None:
        if cluster.stopping:
            return  # already tearing down: let it finish
        cluster.stop()
        sys.exit(128 + signum)

    signal.signal(signal.SIGTERM, on_term)
    try:
        cluster.start()
        print(f"\nslurm cluster up in {cluster.bringup_s:.2f} s ({cluster.lab})")
        yield cluster
    finally:
        cluster.stop()
        signal.signal(signal.SIGTERM, previous)
        atexit.unregister(cluster.stop)
        mp.undo()


@pytest.fixture(scope="session")
def slurm_accounting(slurm_cluster: SlurmCluster) -> SlurmCluster:
    """The same cluster with slurmdbd on MariaDB (only the tests that need it pay for it)."""
    why = accounting.missing()
    if why:
        pytest.skip(why)
    seconds = accounting.enable(slurm_cluster)
    print(f"\nslurm accounting up in {seconds:.2f} s")
    return slurm_cluster


@pytest.fixture
def accounted_cluster(
    slurm_cluster: SlurmCluster, request: pytest.FixtureRequest
) -> Iterator[SlurmCluster]:
    """``idle_cluster``, with accounting when it can run here: sacct then keeps one row per
    run of a requeued job for the failure report (tests/slurm/report.py). Without
    MariaDB/slurmdbd the test still runs, its report says so. In a whole-suite run the
    quota tests have started accounting already: this makes a lone run match it."""
    if accounting.missing() is None:
        request.getfixturevalue("slurm_accounting")
    slurm_cluster.restore()
    yield slurm_cluster
    slurm_cluster.restore()


@pytest.fixture
def idle_cluster(slurm_cluster: SlurmCluster) -> Iterator[SlurmCluster]:
    """The cluster with every node idle and healthy before and after the test."""
    slurm_cluster.restore()
    yield slurm_cluster
    slurm_cluster.restore()

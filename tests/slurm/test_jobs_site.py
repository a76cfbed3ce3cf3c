"""The site options of ``dolmen jobs`` honoured by the real cluster (docs/jobs-slurm.md):
a partition, a node feature, memory, CPUs per task, whole nodes and a reservation, each
made on the cluster by scontrol for the test and removed after it; a QOS when accounting
runs; an image refused on this cluster, which has no pyxis. The rendering of every option
is table-tested without Slurm in tests/jobs/test_slurm_site.py."""

from __future__ import annotations

import sys
from collections.abc import Iterator

import pytest

from dolmen.errors import UsageError
from dolmen.jobs.backend import JobState
from dolmen.jobs.spec import JobSpec
from tests.slurm.cluster import SlurmCluster
from tests.slurm.helpers import backend, output, wait_for

pytestmark = [pytest.mark.slurm]

PROBE = (
    "import os; print('probe', os.environ.get('SLURM_JOB_PARTITION'),"
    " os.environ.get('SLURM_CPUS_PER_TASK'), os.environ.get('SLURM_MEM_PER_NODE'),"
    " os.environ.get('SLURMD_NODENAME'))"
)
PARTITION, FEATURE, RESERVATION, QOS = "dolmsite", "dolmib", "dolmres", "dolmq"


def _probe(name: str, **kw: object) -> JobSpec:
    return JobSpec(name=name, command=(sys.executable, "-c", PROBE), **kw)  # type: ignore[arg-type]


def _run(c: SlurmCluster, spec: JobSpec) -> tuple[dict[str, str], list[str]]:
    """Submit, wait for the end; the job's scontrol record and its probe line's words."""
    b = backend(c)
    job = b.submit(spec)
    wait_for(lambda: b.status(job.job_id).state.done, 60, f"job {spec.name} to finish")
    assert b.status(job.job_id).state is JobState.COMPLETED, output(c, spec.name, job.job_id)
    record = b.client.job_record(job.job_id) or {}
    words = next(line.split()[2:] for line in b.logs(job.job_id) if line.split()[1:2] == ["probe"])
    return record, words


@pytest.fixture
def site(idle_cluster: SlurmCluster) -> Iterator[SlurmCluster]:
    """A partition of n1 and n2, a feature on n2 only, a reservation of n3: made for the
    test by scontrol, removed after it."""
    c = idle_cluster
    c.sl("scontrol", "create", f"PartitionName={PARTITION}", "Nodes=n1,n2", "State=UP")
    c.sl(
        "scontrol",
        "update",
        "NodeName=n2",
        f"AvailableFeatures={FEATURE}",
        f"ActiveFeatures={FEATURE}",
    )
    c.sl(
        "scontrol", "create", "reservation", f"ReservationName={RESERVATION}", "Users=root",
        "Nodes=n3", "StartTime=now", "Duration=10", "Flags=IGNORE_JOBS",
    )  # fmt: skip
    try:
        yield c
    finally:
        c.sl("scontrol", "delete", f"ReservationName={RESERVATION}", check=False)
        c.sl(
            "scontrol",
            "update",
            "NodeName=n2",
            "AvailableFeatures=",
            "ActiveFeatures=",
            check=False,
        )
        c.sl("scontrol", "delete", f"PartitionName={PARTITION}", check=False)


def test_partition_constraint_mem_cpus_and_exclusive_are_honoured(site: SlurmCluster) -> None:
    spec = _probe(
        "site",
        partition=PARTITION,
        constraint=FEATURE,
        mem="1000",
        cpus_per_task=2,
        exclusive=True,
    )
    record, (partition, cpus, mem, node) = _run(site, spec)
    assert (partition, cpus, mem, node) == (PARTITION, "2", "1000", "n2")  # n2: the feature
    assert record["Partition"] == PARTITION and record["Features"] == FEATURE
    assert record["MinMemoryNode"] == "1000M" and record["OverSubscribe"] == "NO"
    assert record["NumCPUs"] == "16"  # the whole node (CPUs=16), not the 2 asked for


def test_a_reservation_is_honoured(site: SlurmCluster) -> None:
    record, words = _run(site, _probe("resv", reservation=RESERVATION))
    assert words[-1] == "n3" and record["Reservation"] == RESERVATION


def test_what_the_cluster_cannot_give_is_refused_by_sbatch(site: SlurmCluster) -> None:
    b = backend(site)
    with pytest.raises(
        UsageError, match=r"Slurm refused the job: .*node configuration is not available"
    ):
        b.submit(_probe("bigmem", mem="999999"))  # nodes have RealMemory=4000
    with pytest.raises(UsageError, match=r"Slurm refused the job: .*[Ii]nvalid partition"):
        b.submit(_probe("nopart", partition="nosuch"))


def test_an_image_is_refused_here_for_want_of_pyxis(idle_cluster: SlurmCluster) -> None:
    c = idle_cluster
    with pytest.raises(UsageError, match=r"lacks \(srun --help lists no --container-image\)"):
        backend(c).submit(_probe("img", image="nvcr.io/nvidia/pytorch:24.05-py3"))
    assert c.sl("squeue", "-h", "-o", "%i").stdout.split() == []  # nothing submitted


def test_a_qos_is_honoured_with_accounting(slurm_accounting: SlurmCluster) -> None:
    c = slurm_accounting
    c.restore()
    c.sl("sacctmgr", "-i", "add", "qos", QOS)
    c.sl("sacctmgr", "-i", "modify", "user", "where", "name=root", "set", f"qos+={QOS}")
    try:
        record, _ = _run(c, _probe("qos", qos=QOS))
        assert record["QOS"] == QOS
        with pytest.raises(UsageError, match=r"Slurm refused the job: .*[Ii]nvalid qos"):
            backend(c).submit(_probe("noqos", qos="nosuchqos"))
    finally:
        c.sl(
            "sacctmgr",
            "-i",
            "modify",
            "user",
            "where",
            "name=root",
            "set",
            f"qos-={QOS}",
            check=False,
        )
        c.sl("sacctmgr", "-i", "delete", "qos", QOS, check=False)
        c.restore()

"""GPU quotas through Slurm accounting (slurmdbd on MariaDB): GrpTRES=gres/gpu=N per
association, over-quota jobs refused up front with the limit and the current use."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from dolmen.errors import ExitCode, UsageError
from dolmen.jobs.backend import JobState
from dolmen.jobs.quota import Kind, QuotaExceeded, Subject, add_user, set_quota
from dolmen.jobs.spec import JobSpec
from tests.jobs.events import REFUSED, submit_events
from tests.slurm.cluster import SlurmCluster
from tests.slurm.helpers import backend, wait_for

pytestmark = [pytest.mark.slurm, pytest.mark.slow]


@pytest.fixture
def accounts(slurm_accounting: SlurmCluster) -> Iterator[SlurmCluster]:
    """The accounting cluster; the test's users, accounts and limits are removed after it."""
    c = slurm_accounting
    c.restore()
    yield c
    c.restore()
    store = backend(c).quotas()
    for q in store.quotas():
        store.remove_quota(q.subject)
    add_user(store, "root", ["root"])


def _sleeper(name: str, nodes: int, gpus: int, account: str | None = "research") -> JobSpec:
    return JobSpec(
        name=name, command=("sleep", "120"), nodes=nodes, gpus_per_node=gpus, account=account
    )


def test_group_and_user_quotas_refuse_over_quota_jobs_up_front(accounts: SlurmCluster) -> None:
    c = accounts
    b = backend(c)
    store = b.quotas()
    set_quota(store, Subject(Kind.GROUP, "research"), 8)
    set_quota(store, Subject(Kind.GROUP, "interns"), 2)
    add_user(store, "root", ["root", "research", "interns"])
    assert store.quota(Subject(Kind.GROUP, "research")).gpus == 8  # type: ignore[union-attr]
    assert "research" in store.groups_of("root")
    # the limit is Slurm's own: sacctmgr shows it on the account's association
    assoc = c.sl("sacctmgr", "-n", "-P", "show", "assoc", "account=research", "format=grptres")
    assert "gres/gpu=8" in assoc.stdout

    # a job charges one account: the interns' limit does not apply to a research job
    first = b.submit(_sleeper("quota-a", 2, 4))
    wait_for(lambda: b.status(first.job_id).state is JobState.RUNNING, 30, "the first job")
    assert store.usage(Subject(Kind.GROUP, "research")) == 8
    before = c.sl("squeue", "-h", "-o", "%i").stdout.split()
    with pytest.raises(QuotaExceeded) as err:
        b.submit(_sleeper("quota-b", 1, 1))
    assert err.value.message == "group research: 1 GPUs requested, 8 in use of a limit of 8"
    assert err.value.exit_code is ExitCode.ENVIRONMENT
    assert c.sl("squeue", "-h", "-o", "%i").stdout.split() == before

    # a user's own limit, checked across all of the user's accounts
    set_quota(store, Subject(Kind.USER, "root"), 9)
    with pytest.raises(
        QuotaExceeded, match="user root: 2 GPUs requested, 8 in use of a limit of 9"
    ):
        b.submit(_sleeper("quota-c", 1, 2, account="root"))
    b.cancel(first.job_id)
    assert store.remove_quota(Subject(Kind.USER, "root"))
    third = b.submit(_sleeper("quota-d", 1, 4))
    wait_for(lambda: b.status(third.job_id).state is JobState.RUNNING, 30, "the third job")
    b.cancel(third.job_id)


def test_slurm_itself_only_queues_an_over_quota_job(accounts: SlurmCluster) -> None:
    """What dolmen's up-front refusal replaces: Slurm accepts the job and keeps it pending."""
    c = accounts
    store = backend(c).quotas()
    set_quota(store, Subject(Kind.GROUP, "interns"), 2)
    add_user(store, "root", ["root", "research", "interns"])
    jid = c.sl(
        "sbatch", "--parsable", "-A", "interns", "-N1", "--gpus-per-node=4", "--wrap", "true"
    ).stdout.strip()
    wait_for(
        lambda: "AssocGrpGRES" in c.sl("squeue", "-h", "-j", jid, "-o", "%r").stdout,
        15,
        "Slurm to hold the job for its GPU limit",
    )
    c.sl("scancel", jid)


def test_unknown_account_is_refused_and_nothing_submitted(accounts: SlurmCluster) -> None:
    c = accounts
    before = c.sl("squeue", "-h", "-o", "%i").stdout.split()
    with pytest.raises(UsageError, match="unknown Slurm account 'nosuch'; known: "):
        backend(c).submit(_sleeper("ghost", 1, 1, account="nosuch"))
    assert c.sl("squeue", "-h", "-o", "%i").stdout.split() == before
    assert submit_events("slurm", "ghost") == []  # refused by the preflight: no event


def test_a_job_sbatch_refuses_is_an_intent_then_refused(accounts: SlurmCluster) -> None:
    """Without dolmen's own account check, sbatch itself says no: the intent was recorded
    before sbatch ran, the outcome after, with Slurm's reason."""
    c = accounts
    with pytest.raises(UsageError, match="Slurm refused the job"):
        backend(c, quotas=False).submit(_sleeper("stray", 1, 1, account="nosuch"))
    assert submit_events("slurm", "stray") == REFUSED

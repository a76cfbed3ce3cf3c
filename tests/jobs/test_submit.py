"""``Backend.submit``: the one flow every backend runs (plan, preflight, audit intent,
schedule, audit outcome), tried on an in-process backend whose hooks a test scripts."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from dolmen.errors import AuditUnavailable, DolmenError, ServiceUnavailable, UsageError
from dolmen.jobs.backend import Backend, JobState, JobStatus, Plan
from dolmen.jobs.quota import QuotaExceeded
from dolmen.jobs.spec import JobSpec
from tests.jobs.events import FAILED, REFUSED, TOOK, submit_events, submit_job_id

SPEC = JobSpec(name="train", command=("python", "train.py"), nodes=2, gpus_per_node=4)


class Scripted(Backend):
    """Each hook appends its name to ``calls``; ``refuse``/``fail`` make one raise."""

    name = "scripted"

    def __init__(
        self, *, refuse: DolmenError | None = None, fail: BaseException | None = None
    ) -> None:
        self.refuse, self.fail = refuse, fail
        self.calls: list[str] = []

    def plan(self, spec: JobSpec) -> Plan:
        self.calls.append("plan")
        return Plan(self.name, spec, {"job.txt": "run\n"}, "one job")

    def preflight(self, plan: Plan) -> None:
        self.calls.append("preflight")
        if self.refuse:
            raise self.refuse

    def schedule(self, plan: Plan) -> JobStatus:
        self.calls.append("schedule")
        if self.fail:
            raise self.fail
        return JobStatus("42", plan.spec.name, self.name, JobState.PENDING)

    def submitted(self, status: JobStatus, plan: Plan) -> JobStatus:
        self.calls.append("submitted")
        return status

    def status(self, job_id: str) -> JobStatus:
        raise NotImplementedError

    def list(self) -> list[JobStatus]:
        return []

    def cancel(self, job_id: str) -> JobStatus:
        raise NotImplementedError

    def logs(self, job_id: str, *, rank: int | None = None, follow: bool = False) -> Iterator[str]:
        return iter(())


def test_success_is_an_intent_then_the_outcome_with_the_job_id(state: Path) -> None:
    b = Scripted()
    assert b.submit(SPEC).job_id == "42"
    assert b.calls == ["plan", "preflight", "schedule", "submitted"]
    assert submit_events("scripted", "train", state) == TOOK
    assert submit_job_id("scripted", "train", state) == "42"


@pytest.mark.parametrize(
    ("error", "events"),
    [
        (UsageError("Slurm refused the job: invalid account"), REFUSED),
        (QuotaExceeded("group a: 8 GPUs requested, 0 in use of a limit of 4"), REFUSED),
        (ServiceUnavailable("slurmctld did not answer sbatch"), FAILED),
        (RuntimeError("a bug in a backend"), FAILED),
    ],
)
def test_a_schedule_that_raises_records_refused_or_failed(
    state: Path, error: BaseException, events: list[tuple[str, str]]
) -> None:
    b = Scripted(fail=error)
    with pytest.raises(type(error)):
        b.submit(SPEC)
    assert submit_events("scripted", "train", state) == events
    assert "submitted" not in b.calls


def test_a_preflight_refusal_records_nothing(state: Path) -> None:
    b = Scripted(refuse=UsageError("no node has 8 GPUs"))
    with pytest.raises(UsageError):
        b.submit(SPEC)
    assert b.calls == ["plan", "preflight"]
    assert submit_events("scripted", "train", state) == []


def test_an_unwritable_audit_log_refuses_before_anything_is_scheduled(state: Path) -> None:
    state.mkdir(parents=True)
    (state / "audit").write_text("not a folder\n")  # the log cannot be written
    b = Scripted()
    with pytest.raises(AuditUnavailable) as err:
        b.submit(SPEC)
    assert err.value.exit_code == 4
    assert b.calls == ["plan", "preflight"]  # intent first: nothing handed to the system

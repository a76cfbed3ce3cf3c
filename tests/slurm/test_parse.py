"""Parsers of Slurm output, on real output and on malformed input.

tests/slurm/outputs/ holds what Slurm 22.05.8 (Debian 12) printed in the
test harness's cluster (tests/slurm): three nodes (n3 drained by an admin), a
running 2-node GPU job, two pending ones, accounting on MariaDB, and the errors
of sbatch and scontrol with slurmctld stopped.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from dolmen.jobs.backend import JobState
from dolmen.jobs.slurm.backend import _STATES, job_state, job_status
from dolmen.slurm import parse

OUT = Path(__file__).with_name("outputs")
JUNK = ["", "\x00\xff\xfe garbage", "NodeName=", "JobId=1 JobState", "|||", "n[1-", "\n\n\n"]


def _read(name: str) -> str:
    return (OUT / name).read_text()


def test_nodes_from_scontrol_show_node() -> None:
    nodes = [parse.node_info(r) for r in parse.records(_read("scontrol-show-node.txt"))]
    assert [(n.name, n.state, sorted(n.flags), n.gpus, n.addr) for n in nodes if n] == [
        ("n1", "MIXED", [], 4, "10.77.0.11"),
        ("n2", "MIXED", [], 4, "10.77.0.12"),
        ("n3", "IDLE", ["DRAIN"], 4, "10.77.0.13"),
    ]
    n3 = nodes[2]
    assert n3 is not None and n3.drained and not n3.down
    assert n3.reason == "admin: replace fan"  # the [root@time] stamp is cut


@pytest.mark.parametrize(
    ("state", "base", "flags", "drained", "down"),
    [
        ("IDLE", "IDLE", set(), False, False),
        ("IDLE+DRAIN", "IDLE", {"DRAIN"}, True, False),
        ("ALLOCATED+DRAIN", "ALLOCATED", {"DRAIN"}, True, False),
        ("DOWN*", "DOWN", {"NOT_RESPONDING"}, False, True),
        ("DOWN+DRAIN+NOT_RESPONDING", "DOWN", {"DRAIN", "NOT_RESPONDING"}, True, True),
        ("IDLE*", "IDLE", {"NOT_RESPONDING"}, False, True),
        ("MIXED+FAIL", "MIXED", {"FAIL"}, False, True),
    ],
)
def test_node_states(state: str, base: str, flags: set[str], drained: bool, down: bool) -> None:
    n = parse.node_info({"NodeName": "n1", "State": state})
    assert n is not None
    assert (n.state, set(n.flags), n.drained, n.down) == (base, flags, drained, down)


def test_a_reason_keeps_equal_signs_and_spaces() -> None:
    rec = parse.kv_record("NodeName=n1 State=IDLE+DRAIN Reason=dolmen: x=1, y [root@2026-01-01]")
    assert parse.strip_reason_stamp(rec["Reason"]) == "dolmen: x=1, y"
    assert parse.strip_reason_stamp("(null)") == ""


def test_jobs_from_scontrol_show_job() -> None:
    recs = parse.records(_read("scontrol-show-job.txt"), tail_key=None)
    got = [job_status(r) for r in recs]
    assert [(s.job_id, s.name, s.state, s.nodes) for s in got] == [
        ("1", "train", JobState.RUNNING, ("n1", "n2")),
        ("2", "small", JobState.PENDING, ()),
        ("3", "done", JobState.PENDING, ()),
    ]
    assert got[1].reason == "Resources"
    assert recs[0]["Account"] == "research" and recs[0]["TresPerNode"] == "gres:gpu:4"


def test_squeue_and_sacct_rows() -> None:
    rows = parse.squeue_rows(_read("squeue.txt"))
    assert [(r.job_id, r.state, r.nodes, r.name) for r in rows] == [
        ("2", "PENDING", (), "small"),
        ("3", "PENDING", (), "done"),
        ("1", "RUNNING", ("n1", "n2"), "train"),
    ]
    acct = parse.sacct_rows(_read("sacct.txt"))
    assert [(a.job_id, a.state, a.nodes) for a in acct] == [
        ("1", "RUNNING", ("n1", "n2")),
        ("2", "PENDING", ()),
        ("3", "PENDING", ()),
    ]


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("Submitted batch job 2\n", "2"),
        ("12\n", "12"),
        ("12;dolmen\n", "12"),
        ("sbatch: error: Batch job submission failed\n", None),
        ("", None),
    ],
)
def test_sbatch_job_id(text: str, expected: str | None) -> None:
    assert parse.sbatch_job_id(text) == expected
    if text == "Submitted batch job 2\n":
        assert parse.sbatch_job_id(_read("sbatch.txt")) == "2"


@pytest.mark.parametrize(
    ("text", "hosts"),
    [
        ("n1", ["n1"]),
        ("n[1-3]", ["n1", "n2", "n3"]),
        ("n[1,3]", ["n1", "n3"]),
        ("gpu[08-10],login1", ["gpu08", "gpu09", "gpu10", "login1"]),
        ("rack[1-2]-n[1-2]", ["rack1-n1", "rack1-n2", "rack2-n1", "rack2-n2"]),
        ("", []),
        ("n[3-1]", []),
        ("n[1-", []),
        ("n[a-b]", []),
        ("n[1-99999999]", []),
    ],
)
def test_expand_hostlist(text: str, hosts: list[str]) -> None:
    assert parse.expand_hostlist(text) == hosts


@pytest.mark.parametrize(
    ("gres", "gpus"),
    [
        ("gpu:4", 4),
        ("gpu:a100:8(S:0-1)", 8),
        ("gpu:a100:2,gpu:v100:2", 4),
        ("gpu:2,shard:8", 2),
        ("gres/gpu:3", 3),
        ("(null)", None),
        ("", None),
        ("gpu", None),
    ],
)
def test_gres_gpus(gres: str, gpus: int | None) -> None:
    assert parse.gres_gpus(gres) == gpus


@pytest.mark.parametrize(
    ("word", "state"),
    [
        ("RUNNING", JobState.RUNNING),
        ("CANCELLED by 0", JobState.CANCELLED),
        ("NODE_FAIL", JobState.FAILED),
        ("REQUEUED", JobState.RESTARTING),
        ("bogus", None),
        ("", None),
    ],
)
def test_job_state(word: str, state: JobState | None) -> None:
    """Slurm's word -> its phase (dolmen.slurm) -> dolmen's JobState (the jobs backend)."""
    assert job_state(word) == state
    phase = parse.job_state(word)
    assert (phase is None) == (state is None)
    assert phase is None or state is None or phase.done == state.done


def test_every_phase_has_a_job_state() -> None:
    assert {job_state(p.name) for p in parse.Phase if p.name in {"PENDING", "RUNNING"}} == {
        JobState.PENDING,
        JobState.RUNNING,
    }
    assert all(_STATES[p] for p in parse.Phase)


@pytest.mark.parametrize("junk", JUNK)
def test_malformed_input_never_raises(junk: str) -> None:
    assert [parse.node_info(r) for r in parse.records(junk)] in ([], [None])
    assert parse.squeue_rows(junk) == []
    assert parse.sacct_rows(junk) == []
    assert parse.sbatch_job_id(junk) is None
    parse.expand_hostlist(junk)
    parse.gres_gpus(junk)
    # a truncated record keeps what it has
    half = _read("scontrol-show-node.txt")[:300]
    assert parse.node_info(parse.records(half)[0]) is None  # cut before State=


def test_the_prolog_reads_the_restart_count_its_port_comes_from() -> None:
    """The prolog derives a job's rendezvous port from slurmctld's ``Restarts`` (the
    batch script's SLURM_RESTART_COUNT); a record without one refuses the job's start
    rather than grant a port its ranks would not use."""
    from dolmen.errors import DolmenError
    from dolmen.slurm.isolation import _restarts

    recs = parse.records(_read("scontrol-show-job.txt"), tail_key=None)
    assert [_restarts(r, r["JobId"]) for r in recs] == [0, 0, 0]
    assert _restarts({**recs[0], "Restarts": "3"}, "1") == 3
    for bad in ({}, {"Restarts": ""}, {"Restarts": "-1"}, {"Restarts": "٣"}):
        with pytest.raises(DolmenError, match=r"job 1 has no restart count .*rendezvous port"):
            _restarts(bad, "1")

"""The jobs layer wired to the isolation: the local supervisor and the Slurm prolog.

The supervisor runs inside a node's namespace (``ip netns exec`` of ``dolmen jobs
submit``: everything it starts inherits the namespace), so its nft calls change that
node and nothing else. Its rank lists the job slots while it runs: the job's slot is
there before the first rank starts, a stale slot of a supervisor that died is gone.
"""

from __future__ import annotations

import subprocess
import sys
import time
from pathlib import Path

import pytest

from dolmen.audit.reader import read_entries
from dolmen.jobs.backend import JobState
from dolmen.jobs.local.backend import LocalBackend
from dolmen.net import jobs, nft
from tests.net.prove.lab import Lab

SRC = Path(__file__).resolve().parents[3] / "src"
# The rank: what the job's node holds in its slots, as nft lists them, into a file.
RANK = (
    "import subprocess, sys; open(sys.argv[1], 'w').write(subprocess.run("
    "['nft', '-j', 'list', 'set', 'inet', 'dolmen', 'slots'], capture_output=True, text=True"
    ").stdout)"
)


@pytest.fixture
def root(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, lab: Lab) -> Path:
    """A state and config folder naming the policy, inherited by what ``submit`` runs."""
    (tmp_path / "etc").mkdir()
    (tmp_path / "etc" / "dolmen.toml").write_text(f'[net]\npolicy = "{lab.policy_path}"\n')
    monkeypatch.setenv("DOLMEN_STATE_DIR", str(tmp_path / "state"))
    monkeypatch.setenv("DOLMEN_CONFIG_DIR", str(tmp_path / "etc"))
    monkeypatch.setenv("PYTHONPATH", str(SRC))
    return tmp_path


def submit(lab: Lab, node: str, root: Path, *command: str) -> LocalBackend:
    """``dolmen jobs submit`` inside ``node``'s namespace (the environment of ``root``)."""
    argv = [sys.executable, "-m", "dolmen.cli.main", "jobs", "submit", "--name", "iso", "--"]
    done = lab.cluster.nodes[node].exec(*argv, *command, timeout=60)
    assert done.returncode == 0, done.stderr
    return LocalBackend(root / "state")


def audit_log(root: Path) -> list[tuple[str, str, str]]:
    """(action, target, outcome) of every event in ``root``'s audit log."""
    log = root / "state" / "audit" / "audit.log"
    return [(e.event.action, e.event.target, e.event.outcome) for e in read_entries(log) if e.event]


def wait_done(backend: LocalBackend, job: str = "1") -> JobState:
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        st = backend.status(job)
        if st.state.done:
            return st.state
        time.sleep(0.05)
    pytest.fail("the job did not end within 60 s")


@pytest.mark.netns
def test_the_supervisor_isolates_before_the_first_rank_and_collects_a_dead_one(
    lab: Lab, root: Path
) -> None:
    lab.reset()
    host = lab.host("j1a")
    stale = jobs.job_key("local", 99)  # a supervisor killed with -9 left this slot
    jobs.start(host, lab.policy, stale, lab.addresses("j1a", "out"), known={stale})
    seen = root / "slots.json"
    backend = submit(lab, "j1a", root, sys.executable, "-c", RANK, str(seen))
    assert wait_done(backend) is JobState.COMPLETED, backend.status("1").reason
    text = seen.read_text()
    assert '"job:local-1"' in text and stale not in text, text  # in place, and collected
    deadline = time.monotonic() + 10
    while nft.active_jobs(host) and time.monotonic() < deadline:  # the supervisor's end
        time.sleep(0.05)
    assert nft.active_jobs(host) == {}
    events = audit_log(root)
    assert ("net.job_gc", f"job:{stale}", "success") in events
    assert ("net.job_isolate", "job:local-1", "success") in events
    assert ("net.job_release", "job:local-1", "success") in events


@pytest.mark.netns
def test_a_local_job_whose_isolation_fails_never_runs(lab: Lab, root: Path) -> None:
    lab.reset()
    host = lab.host("j1b")  # a node without the table: no slot can be filled
    nft.run_batch(host, {"nftables": [{"delete": {"table": {"family": "inet", "name": "dolmen"}}}]})
    ran = root / "ran"
    try:
        backend = submit(lab, "j1b", root, "touch", str(ran))
        assert wait_done(backend) is JobState.FAILED
        reason = backend.status("1").reason
        assert "network isolation is not in place" in reason, reason
        assert not ran.exists()  # no rank ran
        isolate = [e for e in audit_log(root) if e[0] == "net.job_isolate"]
        assert [e[2] for e in isolate] == ["unknown", "failure"]
        assert not any(e[0] == "jobs.gpu_allocate" for e in audit_log(root))
    finally:
        lab.apply(names=["j1b"])


def test_the_prolog_fails_closed_when_the_nodes_cannot_be_told(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """No slurmctld to name the job's nodes (no scontrol here): exit 3, the job does not
    start; the epilog of the same job exits 0 (a failing epilog drains the node)."""
    from tests.net.prove.lab import POLICY

    (tmp_path / "etc").mkdir()
    (tmp_path / "policy.toml").write_text(POLICY)
    (tmp_path / "etc" / "dolmen.toml").write_text(f'[net]\npolicy = "{tmp_path}/policy.toml"\n')
    env = {
        "PATH": "/nonexistent",  # no scontrol, no squeue, no nft: nothing can be told
        "PYTHONPATH": str(SRC),
        "DOLMEN_STATE_DIR": str(tmp_path / "state"),
        "DOLMEN_CONFIG_DIR": str(tmp_path / "etc"),
        "SLURM_JOB_ID": "41",
        "SLURM_JOB_NODELIST": "n[1-2]",
    }
    hooks = [sys.executable, "-m", "dolmen.slurm.hooks"]
    pro = subprocess.run(
        [*hooks, "prolog", "--timeout", "20s"], env=env, capture_output=True, text=True, timeout=120
    )
    assert pro.returncode == 3, pro.stderr
    assert "job isolation:" in pro.stderr and "scontrol" in pro.stderr
    epi = subprocess.run(
        [*hooks, "epilog", "--timeout", "20s"], env=env, capture_output=True, text=True, timeout=120
    )
    assert epi.returncode == 0, epi.stderr
    assert "job isolation:" in epi.stderr
    events = [e.event for e in read_entries(tmp_path / "state" / "audit" / "audit.log") if e.event]
    release = [(e.action, e.outcome) for e in events if e.target == "job:slurm-41"]
    assert release == [("net.job_release", "unknown"), ("net.job_release", "failure")]

"""The drain contract (pure decide), Slurm errors, quota parsing and the slurmd probe."""

from __future__ import annotations

import os
import socket
from pathlib import Path

import pytest

from dolmen.checks.verdict import Health
from dolmen.errors import DolmenError, EnvironmentProblem, ServiceUnavailable, UsageError
from dolmen.host import CommandResult, RunStatus
from dolmen.host.command import command_key
from dolmen.host.tree import TreeHost
from dolmen.slurm import probe
from dolmen.slurm.accounting import assoc_rows, grp_gpus, usage_rows
from dolmen.slurm.client import SlurmClient, command_error
from dolmen.slurm.drain import Action, decide
from dolmen.slurm.parse import NodeInfo
from tests.conftest import make_tree

OUT = Path(__file__).with_name("outputs")
REASON = "dolmen: unhealthy: gpu.xid gpu:00000000:53:00.0"


def _node(state: str = "IDLE", flags: tuple[str, ...] = (), reason: str = "") -> NodeInfo:
    return NodeInfo("n1", state, frozenset(flags), reason, 4, "10.77.0.11")


@pytest.mark.parametrize(
    ("health", "node", "action"),
    [
        (Health.UNHEALTHY, _node(), Action.DRAIN),
        (Health.UNHEALTHY, _node("ALLOCATED"), Action.DRAIN),
        (Health.UNHEALTHY, _node(flags=("DRAIN",), reason=REASON), Action.NONE),
        (Health.UNHEALTHY, _node(flags=("DRAIN",), reason="dolmen: unhealthy: old"), Action.DRAIN),
        (Health.UNHEALTHY, _node(flags=("DRAIN",), reason="admin: replace fan"), Action.NONE),
        (Health.UNHEALTHY, _node("DOWN", ("NOT_RESPONDING",), "Not responding"), Action.NONE),
        (Health.HEALTHY, _node(flags=("DRAIN",), reason=REASON), Action.RESUME),
        (Health.DEGRADED, _node("DOWN", (), "dolmen: slurmd not responding"), Action.RESUME),
        (Health.HEALTHY, _node(flags=("DRAIN",), reason="admin: replace fan"), Action.NONE),
        (Health.HEALTHY, _node("DOWN", ("NOT_RESPONDING",), "Not responding"), Action.NONE),
        (Health.HEALTHY, _node(), Action.NONE),
        (Health.UNDECIDED, _node(flags=("DRAIN",), reason=REASON), Action.NONE),
        (Health.UNDECIDED, _node(), Action.NONE),
    ],
)
def test_decide(health: Health, node: NodeInfo, action: Action) -> None:
    d = decide(health, REASON, node)
    assert d.action is action, d.why
    if action is Action.DRAIN:
        assert d.reason == REASON
    if node.reason and not node.reason.startswith("dolmen:") and health is Health.UNHEALTHY:
        assert "drained by someone else" in d.why


def _failed(stderr: str, argv: tuple[str, ...] = ("sbatch",)) -> CommandResult:
    return CommandResult(argv, RunStatus.FAILED, "", stderr, 1, "exit code 1")


def test_dead_controller_is_service_unavailable() -> None:
    for name in ("sbatch-dead-ctld.err", "scontrol-dead-ctld.err"):
        err = command_error(["sbatch"], _failed((OUT / name).read_text()))
        assert isinstance(err, ServiceUnavailable)
        assert "Unable to contact slurm controller" in err.message
        assert int(err.exit_code) == 3


@pytest.mark.parametrize(
    ("name", "stdout", "kind", "says", "hint"),
    [
        # scontrol ping prints its verdict on stdout and ends with a banner of asterisks
        ("scontrol-ping-down.out", True, ServiceUnavailable, "Slurmctld(primary) at vm is DOWN",
         "start slurmctld"),
        ("scontrol-no-config.err", False, EnvironmentProblem, "no Slurm configuration on this host",
         "set SLURM_CONF"),
        ("scontrol-bad-config.err", False, EnvironmentProblem,
         'configuration does not parse (scontrol: s_p_parse_file: file "/tmp/hostile/slurm-empty',
         "fix the slurm.conf"),
    ],
)  # fmt: skip
def test_a_dead_or_missing_controller_names_what_scontrol_said(
    name: str, stdout: bool, kind: type[Exception], says: str, hint: str
) -> None:
    """Recorded from Slurm 22.05 on this machine: a controller that is down, no slurm.conf
    and no DNS SRV record (configless), an empty slurm.conf."""
    text = (OUT / name).read_text()
    res = CommandResult(("scontrol", "ping"), RunStatus.FAILED, text if stdout else "",
                        "" if stdout else text, 1, "exit code 1")  # fmt: skip
    err = command_error(["scontrol", "ping"], res)
    assert type(err) is kind and says in err.message and "*" not in err.message
    assert (err.hint or "").startswith(hint) and int(err.exit_code) == 3


@pytest.mark.parametrize(
    ("stderr", "kind"),
    [
        (
            "sbatch: error: Batch job submission failed: Invalid account or account/partition "
            "combination specified",
            UsageError,
        ),
        (
            "sbatch: error: Batch job submission failed: Requested node configuration is not "
            "available",
            UsageError,
        ),
        ("sbatch: error: something else entirely", EnvironmentProblem),
        ("", EnvironmentProblem),
    ],
)
def test_sbatch_errors(stderr: str, kind: type[Exception]) -> None:
    err = command_error(["sbatch"], _failed(stderr))
    assert isinstance(err, kind)
    assert "\n" not in str(err)


def test_missing_binary_and_timeout() -> None:
    missing = CommandResult(("sbatch",), RunStatus.MISSING, reason="sbatch not found on PATH")
    assert "apt-get install slurm-client" in (command_error(["sbatch"], missing).hint or "")
    slow = CommandResult(("squeue",), RunStatus.TIMEOUT, reason="timed out after 30 s")
    assert isinstance(command_error(["squeue"], slow), ServiceUnavailable)


def test_client_reads_recorded_commands_from_a_host_tree(tmp_path: Path) -> None:
    tree = make_tree(
        tmp_path,
        commands={"scontrol show node -o": (OUT / "scontrol-show-node.txt").read_text()},
    )
    client = SlurmClient(TreeHost(tree))
    assert [n.name for n in client.nodes()] == ["n1", "n2", "n3"]
    assert client.argv(["sinfo"]) == ["sinfo"]
    wrapped = SlurmClient(TreeHost(tree), prefix=["nsenter", "--net=/x"], env={"SLURM_CONF": "/c"})
    assert wrapped.argv(["sinfo"]) == ["nsenter", "--net=/x", "env", "SLURM_CONF=/c", "sinfo"]


def test_quota_parsers_on_real_output() -> None:
    rows = assoc_rows((OUT / "sacctmgr-assoc.txt").read_text())
    assert ("research", "", "gres/gpu=8") in rows
    assert [grp_gpus(t) for _, _, t in rows] == [None, None, 8, None]
    usage = usage_rows((OUT / "squeue-usage.txt").read_text())
    assert usage == [("root", "root", 1), ("root", "root", 4), ("root", "research", 8)]
    assert grp_gpus("cpu=8,gres/gpu=16,mem=1G") == 16
    assert grp_gpus("gres/gpu:a100=4") is None
    assert usage_rows("root|root|N/A|1\njunk\n\x00|x") == [("root", "root", 0)]


def test_probe_tells_a_listening_port_from_a_closed_one() -> None:
    with socket.create_server(("127.0.0.1", 0)) as srv:
        port = srv.getsockname()[1]
        assert probe.probe("127.0.0.1", port) == "ok"
    assert probe.probe("127.0.0.1", port) == "refused"
    assert probe.parse_output(f"127.0.0.1:{port} refused\njunk\n") == {
        f"127.0.0.1:{port}": "refused"
    }
    assert probe.main(["nonsense"]) == 2


def _watch_tree(tmp_path: Path, job_state: str, n2_state: str, n2_reason: str) -> TreeHost:
    job = (OUT / "scontrol-show-job.txt").read_text().splitlines()[0]
    assert "JobState=RUNNING" in job and "NodeList=n[1-2]" in job
    job = job.replace("JobState=RUNNING", f"JobState={job_state}")
    nodes = (OUT / "scontrol-show-node.txt").read_text().splitlines()[:2]
    nodes[1] = nodes[1].replace("State=MIXED", f"State={n2_state}")
    nodes[1] = nodes[1].split(" Reason=")[0] + (
        f" Reason={n2_reason} [root@x]" if n2_reason else ""
    )
    tree = make_tree(
        tmp_path,
        commands={
            "scontrol show job -o 1": job + "\n",
            "scontrol show node -o n1,n2": "\n".join(nodes) + "\n",
            "scontrol requeue 1": "",
        },
    )
    return TreeHost(tree)


@pytest.mark.parametrize(
    ("job_state", "n2_state", "n2_reason", "final", "requeued"),
    [
        ("RUNNING", "MIXED+DRAIN", REASON, None, True),
        ("RUNNING", "DOWN*", "Not responding", None, True),
        ("RUNNING", "MIXED+DRAIN", "admin: replace fan", None, False),
        ("RUNNING", "MIXED", "", None, False),
        ("PENDING", "MIXED+DRAIN", REASON, None, False),
        ("NODE_FAIL", "DOWN*", "Not responding", None, False),
        ("COMPLETED", "MIXED", "", "COMPLETED", False),
    ],
)
def test_watcher_requeues_on_a_fault_only(
    tmp_path: Path, job_state: str, n2_state: str, n2_reason: str, final: str | None, requeued: bool
) -> None:
    from dolmen.slurm.watch import RecoveryWatcher

    host = _watch_tree(tmp_path, job_state, n2_state, n2_reason)
    w = RecoveryWatcher(SlurmClient(host), "1", probe_slurmd=False)
    assert w.check_once() == final
    assert bool(w.recoveries) is requeued
    if requeued:
        assert [f.node for f in w.recoveries[0].faults] == ["n2"]
        assert w.check_once() is None and len(w.recoveries) == 1  # once per run


def _restart_events() -> list[tuple[str, str | None]]:
    from dolmen.audit.reader import read_entries

    log = Path(os.environ["DOLMEN_STATE_DIR"]) / "audit" / "audit.log"
    found = []
    for e in read_entries(log) if log.exists() else []:
        if e.event is not None and e.event.action == "jobs.restart":
            details = e.event.details
            found.append((str(details.get("phase")), details.get("result")))
    return found


@pytest.mark.parametrize("fails", [False, True], ids=["requeued", "requeue-refused"])
def test_watcher_records_intent_then_what_slurm_did(tmp_path: Path, fails: bool) -> None:
    from dolmen.slurm.watch import RecoveryWatcher

    host = _watch_tree(tmp_path, "RUNNING", "MIXED+DRAIN", REASON)
    if fails:  # slurmctld refuses the requeue: the intent stays, the outcome says failed
        rc = tmp_path / "commands" / f"{command_key(['scontrol', 'requeue', '1'])}.rc"
        rc.write_text("1\n")
        (rc.parent / f"{command_key(['scontrol', 'requeue', '1'])}.err").write_text(
            "scontrol: error: Access/permission denied\n"
        )
    before = len(_restart_events())
    w = RecoveryWatcher(SlurmClient(host), "1", probe_slurmd=False)
    if fails:
        with pytest.raises(DolmenError):
            w.check_once()
    else:
        w.check_once()
    want = [("intent", None), ("outcome", "failed" if fails else "success")]
    assert _restart_events()[before:] == want

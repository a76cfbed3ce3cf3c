"""``dolmen setup`` in-process on host trees: dry run, --yes, resume, skip, bad input."""

from __future__ import annotations

import hashlib
import json
import os
from pathlib import Path

import pytest

from dolmen.cli.main import main
from dolmen.host import open_host
from dolmen.setup import flow
from dolmen.setup.model import Context, Options, StepPlan, StepResult
from dolmen.setup.scheduler import SchedulerStep
from dolmen.setup.state import state_path
from dolmen.setup.steps import STACK
from tests.hosts import scenarios
from tests.report.contract import assert_valid
from tests.setup.conftest import audit_events


def run(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str, str]:
    rc = main(["setup", *args])
    out, err = capsys.readouterr()
    return rc, out, err


def digest(tree: Path) -> str:
    """Every file of a tree, path and bytes: proves a run left it as it was."""
    h = hashlib.sha256()
    for p in sorted(tree.rglob("*")):
        if p.is_file() and not p.is_symlink():
            h.update(str(p.relative_to(tree)).encode() + p.read_bytes())
    return h.hexdigest()


def statuses(out: str) -> dict[str, str]:
    doc = assert_valid(json.loads(out))
    return {s["step"]: s["status"] for s in doc["steps"]}


def test_dry_run_plans_every_step_and_writes_nothing(
    capsys: pytest.CaptureFixture[str], h100: Path, dolmen_dirs: Path, tmp_path: Path
) -> None:
    before = digest(h100)
    conf = tmp_path / "slurm.conf"
    rc, out, _ = run(capsys, "--from", str(h100), "--dry-run", "--json", "--slurm-conf", str(conf))
    assert rc == 0
    got = statuses(out)
    assert got == {
        "validate": "planned",
        "stack": got["stack"],
        "tune": "planned",
        "containers": got["containers"],
        "scheduler": "planned",
        "users": "skipped",
    }
    doc = json.loads(out)
    stack = next(s for s in doc["steps"] if s["step"] == "stack")
    if not STACK.present():  # until dolmen stack is merged (then its own plan shows)
        assert stack["lines"] == ["not in this build: dolmen stack"]
        assert got["stack"] == "unavailable"
    assert digest(h100) == before and not conf.exists() and not dolmen_dirs.exists()


def test_yes_runs_every_step_through_its_own_path_and_a_rerun_does_nothing(
    capsys: pytest.CaptureFixture[str], h100: Path, dolmen_dirs: Path, tmp_path: Path
) -> None:
    conf, gres = tmp_path / "slurm.conf", tmp_path / "gres.conf"
    conf.write_text("ClusterName=lab\nGresTypes=gpu\n")
    args = ["--from", str(h100), "--yes", "--slurm-conf", str(conf), "--gres-conf", str(gres)]
    args += ["--user", "alice:ml", "--quota", "user:alice=4", "--json"]
    rc, out, err = run(capsys, *args)
    assert rc == 0, err
    assert set(statuses(out).values()) <= {"done", "unavailable"}
    assert "NodeName=h100-node-01 CPUs=224 Sockets=2" in conf.read_text()
    assert conf.read_text().startswith("ClusterName=lab\nGresTypes=gpu\n")
    assert (tmp_path / "slurm.conf.dolmen-backup").read_text() == "ClusterName=lab\nGresTypes=gpu\n"
    assert "File=/dev/nvidia7 Cores=56-111" in gres.read_text()
    # tune went through its engine (journal, audit), the files through audited writes
    assert [o for o, _ in audit_events(dolmen_dirs, "tune.apply")] == ["unknown", "success"]
    assert len(audit_events(dolmen_dirs, "setup.write")) == 4
    assert "vm.swappiness = 10" in (h100 / "etc/sysctl.d/90-dolmen-tune.conf").read_text()
    rc, out, _ = run(capsys, "--from", str(h100), "--yes")  # again: every step is done
    assert rc == 0 and out.count("not run again") >= 4  # stack, containers: when built
    assert len(audit_events(dolmen_dirs, "setup.write")) == 4
    state = json.loads(state_path(open_host(h100)).read_text())
    assert state["steps"]["users"]["status"] == "done"


class Interrupted(SchedulerStep):
    """The scheduler step killed halfway (Ctrl-C while it writes)."""

    def apply(self, ctx: Context, plan: StepPlan) -> StepResult:
        raise KeyboardInterrupt


def test_an_interrupted_run_resumes_at_the_step_it_stopped_in(
    capsys: pytest.CaptureFixture[str], h100: Path, dolmen_dirs: Path
) -> None:
    steps = [Interrupted() if s.name == "scheduler" else s for s in flow.STEPS]
    ctx = Context(open_host(h100), Options())
    with pytest.raises(KeyboardInterrupt):
        flow.run(ctx, skip=("tune",), steps=steps)
    rc, out, err = run(capsys, "--from", str(h100), "--yes", "--skip", "tune")
    assert rc == 0, err
    assert "validate: done" in out and "not run again" in out  # not validated twice
    assert "interrupted at" in out and "running it again" in out
    rc, out, _ = run(capsys, "--from", str(h100), "--yes", "--restart", "--skip", "tune,users")
    assert rc == 0 and "not run again" not in out and "healthy" in out


def test_skip_leaves_a_step_out_of_this_run_only(
    capsys: pytest.CaptureFixture[str], h100: Path
) -> None:
    rc, out, _ = run(capsys, "--from", str(h100), "--yes", "--skip", "tune", "--json")
    assert rc == 0 and statuses(out)["tune"] == "skipped"
    assert not (h100 / "etc/sysctl.d/90-dolmen-tune.conf").exists()
    rc, out, _ = run(capsys, "--from", str(h100), "--yes", "--json")
    assert rc == 0 and statuses(out)["tune"] == "done"


@pytest.mark.parametrize(
    ("args", "rc", "message"),
    [
        (["--skip", "nope"], 2, "--skip 'nope': no such step"),
        (["--skip", "tune,nope"], 2, "hint: the steps: validate, stack, tune, containers"),
        (["--quota", "alice=4"], 2, "not KIND:NAME=GPUS"),
        (["--device", "/dev/nvidia"], 2, "not an absolute path with {index}"),
        (["--device", "nvidia{index}"], 2, "not an absolute path with {index}"),
        (["--device", "/x{index}\nNodeName=evil"], 2, "not an absolute path with {index}"),
        (["--device", "/x{index}{other}"], 2, "not an absolute path with {index}"),
        (["--node-name", "n1 Gres=gpu:99"], 2, "is not a node name"),
        (["--user", "bad name"], 2, "bad name"),
        (["--bench-image", "a b"], 2, "'a b' is not an image reference ([registry[:port]/]"),
        (["--bench-image", "UPPER/Case:tag"], 2, "'UPPER/Case:tag' is not an image reference"),
        (["--bench-image", "x;rm -rf /"], 2, "'x;rm -rf /' is not an image reference"),
        (["--quota", "user:alice=99999999"], 2, "--gpus must be between 0 and"),
        ([], 2, "not a terminal"),  # no --yes and no terminal to ask with
    ],
)
def test_bad_usage_is_one_line_before_any_step(
    capsys: pytest.CaptureFixture[str],
    h100: Path,
    dolmen_dirs: Path,
    args: list[str],
    rc: int,
    message: str,
) -> None:
    yes = [] if not args else ["--yes"]
    got, out, err = run(capsys, "--from", str(h100), *yes, *args)
    assert got == rc and message in err and out == ""
    assert not dolmen_dirs.exists()


def test_a_fifo_as_output_is_refused_before_any_step(
    capsys: pytest.CaptureFixture[str], h100: Path, dolmen_dirs: Path, tmp_path: Path
) -> None:
    fifo = tmp_path / "gres.fifo"
    os.mkfifo(fifo)
    rc, out, err = run(capsys, "--from", str(h100), "--yes", "--gres-conf", str(fifo))
    assert rc == 2 and "is a FIFO, not a regular file" in err and out == ""
    assert not dolmen_dirs.exists()


def test_an_unwritable_state_folder_is_refused_before_any_change(
    capsys: pytest.CaptureFixture[str], h100: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    blocker = tmp_path / "blocker"
    blocker.write_text("a file where the state folder should be\n")
    monkeypatch.setenv("DOLMEN_STATE_DIR", str(blocker))
    before = digest(h100)
    rc, out, err = run(capsys, "--from", str(h100), "--yes")
    assert rc == 3 and "is not writable" in err and "--dry-run" in err
    assert digest(h100) == before and out == ""


def test_a_damaged_state_file_names_itself(capsys: pytest.CaptureFixture[str], h100: Path) -> None:
    path = state_path(open_host(h100))
    path.parent.mkdir(parents=True)
    path.write_text('{"schema": "dolmen.setup.state/1", "steps": ')  # cut
    rc, _, err = run(capsys, "--from", str(h100), "--yes")
    assert rc == 2 and str(path) in err and "not JSON" in err and "--restart" in err


def test_an_unhealthy_node_stops_the_flow(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    tree = scenarios.build("h100-xid79", tmp_path / "t")
    rc, out, _ = run(capsys, "--from", str(tree), "--yes", "--level", "quick", "--json")
    assert rc == 1
    s = statuses(out)
    assert s["validate"] == "failed" and s["tune"] == s["scheduler"] == "skipped"
    assert not (tree / "etc/sysctl.d/90-dolmen-tune.conf").exists()


def test_gpus_the_driver_did_not_list_write_nothing(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    tree = scenarios.build("missing-driver", tmp_path / "t")
    conf = tmp_path / "slurm.conf"
    args = ["--from", str(tree), "--yes", "--skip", "validate,tune", "--slurm-conf", str(conf)]
    rc, out, _ = run(capsys, *args)
    assert rc == 2 and "unknown: slurm.conf node line: Gres: the driver did not list" in out
    assert not conf.exists()


def test_kubernetes_labels_and_operator_values(
    capsys: pytest.CaptureFixture[str], h100: Path, tmp_path: Path
) -> None:
    values = tmp_path / "values.yaml"
    args = ["--from", str(h100), "--yes", "--skip", "validate,tune", "--scheduler", "kubernetes"]
    rc, out, err = run(capsys, *args, "--k8s-values", str(values))
    assert rc == 0, err
    assert "kubectl label node h100-node-01 --overwrite nvidia.com/gpu.present=true" in out
    assert "nvidia.com/gpu.deploy.driver=false" in out
    text = values.read_text()
    assert "driver:\n  enabled: false  # the host runs driver 580.105.08" in text
    assert "mig:\n  strategy: none" in text


class Declines(flow.Hooks):
    """A person who answers no to every question."""

    def confirm(self, step: object, plan: StepPlan) -> bool:
        return False


def test_a_declined_step_changes_nothing_and_is_not_remembered(h100: Path) -> None:
    before = digest(h100)
    report = flow.run(Context(open_host(h100), Options()), hooks=Declines(), skip=("users",))
    got = {r.step: r.status.value for r in report.results}
    assert got["tune"] == "skipped" and got["validate"] == "done"
    assert digest(h100) == before  # tune declined; the scheduler wrote nothing (no file)
    state = json.loads(state_path(open_host(h100)).read_text())
    assert "tune" not in state["steps"]


def test_a_part_in_the_build_but_not_wired_names_the_commands(h100: Path) -> None:
    from dolmen.setup.steps import OptionalStep

    step = OptionalStep("nothing", "A part", "dolmen.tune", "run `dolmen tune` by hand")
    plan = step.plan(Context(open_host(h100), Options()))
    assert plan.status is not None and plan.status.value == "unavailable"
    assert plan.lines == (
        "dolmen tune is in this build but not wired into setup: run `dolmen tune` by hand",
    )


def test_a_refused_apply_is_recorded_failed_not_interrupted(
    h100: Path, dolmen_dirs: Path, tmp_path: Path
) -> None:
    from dolmen.errors import AuditUnavailable

    (tmp_path / "config" / "dolmen.toml").write_text(
        f'[audit]\npath = "{tmp_path}/blocker/audit.log"\n'
    )
    (tmp_path / "blocker").write_text("a file where the audit folder should be\n")
    ctx = Context(open_host(h100), Options(slurm_conf=tmp_path / "slurm.conf"))
    with pytest.raises(AuditUnavailable):
        flow.run(ctx, skip=("validate", "tune", "users"))
    assert not (tmp_path / "slurm.conf").exists()  # refused before a byte moved
    state = json.loads(state_path(open_host(h100)).read_text())
    assert state["steps"]["scheduler"]["status"] == "failed"


def test_a_cpu_only_node_skips_tune_and_containers_saying_why(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    # The recommendation on a host without NVIDIA GPU is the read-only baseline: the step
    # says there is nothing to tune (it raised a usage error mid-flow before); the PCI tree
    # was read and shows no GPU, so no NGC GPU container is resolved (unknown: exit 2 before).
    tree = scenarios.build("vm-cpu-only", tmp_path / "t")
    rc, out, _ = run(capsys, "--from", str(tree), "--dry-run", "--json", "--skip", "validate")
    assert rc == 0
    steps = {s["step"]: s for s in assert_valid(json.loads(out))["steps"]}
    assert steps["tune"]["status"] == "skipped"
    assert steps["tune"]["lines"][0].startswith("recommended profile: baseline (no NVIDIA GPU")
    assert "read-only reference" in steps["tune"]["lines"][-1]
    assert steps["containers"]["status"] == "skipped"
    assert steps["containers"]["lines"][0].startswith("no NVIDIA GPU on this host (the PCI tree")
    assert steps["scheduler"]["status"] == "planned"


def test_a_read_only_or_unknown_profile_is_refused_before_any_step(
    capsys: pytest.CaptureFixture[str], h100: Path, dolmen_dirs: Path
) -> None:
    rc, out, err = run(capsys, "--from", str(h100), "--yes", "--profile", "baseline")
    assert rc == 2 and out == "" and "--profile baseline: a read-only reference" in err
    rc, out, err = run(capsys, "--from", str(h100), "--yes", "--profile", "nosuch")
    assert rc == 2 and out == "" and "no profile named 'nosuch'" in err
    assert not dolmen_dirs.exists()  # validate did not run, nothing recorded


def test_a_state_file_that_cannot_be_written_is_fsutils_one_line(tmp_path: Path) -> None:
    from dolmen.errors import UsageError
    from dolmen.setup.state import SetupState

    # /proc is there but takes no new folder (ENOENT): bad input, not "free space"
    state = SetupState(Path(f"/proc/dolmen-test-{os.getpid()}/setup.json"), {"steps": {}})
    with pytest.raises(UsageError) as e:
        state.save()
    assert e.value.message.startswith(f"setup state {state.path}: could not write: ")
    assert "cannot hold new files" in e.value.message and "DOLMEN_STATE_DIR" in str(e.value.hint)

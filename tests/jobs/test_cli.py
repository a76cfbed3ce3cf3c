"""`dolmen jobs`, `dolmen users` and `dolmen quota` in-process: output and exit codes."""

from __future__ import annotations

import json
import sys
import time
from pathlib import Path

import pytest

from dolmen.cli.main import main
from dolmen.jobs.quota import current_user
from tests.conftest import make_tree, recording
from tests.jobs.conftest import make_local, stop_all
from tests.report.contract import assert_valid

H100 = "nvidia-smi-xml/k8s-test-infra__hardware__qx-h100.xml"


def run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    rc = main(list(argv))
    out, err = capsys.readouterr()
    return rc, out, err


def test_plan_local_as_text_and_json(state: Path, capsys: pytest.CaptureFixture[str]) -> None:
    rc, out, _ = run(
        capsys,
        "jobs",
        "plan",
        "--nodes",
        "2",
        "--procs-per-node",
        "2",
        "--",
        "python",
        "-u",
        "t.py",
    )
    assert rc == 0
    assert out.startswith("# local: 4 processes in 2 rank group(s) on this host, no GPU")
    assert "   3    1     1  none       python -u t.py" in out
    rc, out, _ = run(capsys, "jobs", "plan", "--json", "--nodes", "2", "--", "python", "t.py")
    doc = assert_valid(json.loads(out))
    assert doc["backend"] == "local" and doc["spec"]["nodes"] == 2
    assert "WORLD_SIZE=2" in doc["artifacts"]["environment.txt"]
    assert list(Path(state).glob("**/jobs.db")) == []  # plan stores nothing


def test_plan_kubernetes(state: Path, capsys: pytest.CaptureFixture[str]) -> None:
    rc, out, _ = run(
        capsys,
        "jobs",
        "plan",
        "--backend",
        "kubernetes",
        "--image",
        "img",
        "--name",
        "ft",
        "--nodes",
        "2",
        "--gpus-per-node",
        "4",
        "--",
        "python",
        "t.py",
    )
    assert rc == 0 and 'kind: "JobSet"' in out and "nvidia.com/gpu: 4" in out


def test_plan_slurm_site_flags_and_the_multi_node_warning(
    state: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    flags = ["--backend", "slurm", "--nodes", "2", "--partition", "gpu", "--qos", "high"]
    flags += ["--constraint", "ib&h100", "--mem", "500G", "--cpus-per-task", "8", "--exclusive"]
    flags += ["--reservation", "maint", "--json", "--", "python", "train.py"]
    rc, out, err = run(capsys, "jobs", "plan", *flags)
    doc = assert_valid(json.loads(out))
    assert rc == 0 and doc["spec"]["name"] == "train.py" and doc["spec"]["exclusive"] is True
    script = doc["artifacts"]["train.py.sbatch"]
    for line in ("--partition=gpu", "--qos=high", "--constraint=ib&h100", "--mem=500G"):
        assert f"#SBATCH {line}\n" in script
    assert "#SBATCH --cpus-per-task=8\n#SBATCH --reservation=maint\n#SBATCH --exclusive" in script
    (warning,) = doc["warnings"]
    assert err == f"dolmen: warning: {warning}\n" and "slurm_log_dir and slurm_python" in err
    rc, _, err = run(capsys, "jobs", "plan", "--backend", "slurm", "--qos", "a;b", "--", "t")
    assert rc == 2 and "--qos 'a;b' is not a QOS name" in err


def test_submit_status_logs_list_cancel(state: Path, capsys: pytest.CaptureFixture[str]) -> None:
    rc, out, err = run(
        capsys, "jobs", "submit", "--name", "hello", "--", sys.executable, "-c", "print('hi')"
    )
    assert (rc, err) == (0, "") and out.startswith("submitted job 1 (local): hello, 1 ranks")
    local = make_local()
    try:
        deadline = time.monotonic() + 30
        while not local.status("1").state.done and time.monotonic() < deadline:
            time.sleep(0.05)
        rc, out, _ = run(capsys, "jobs", "status", "1")
        assert rc == 0 and "job 1 (local) hello: completed" in out
        rc, out, _ = run(capsys, "jobs", "status", "1", "--json")
        assert rc == 0 and assert_valid(json.loads(out))["state"] == "completed"
        rc, out, _ = run(capsys, "jobs", "logs", "1", "--rank", "0")
        assert rc == 0 and out.splitlines()[-1] == "hi"
        rc, out, _ = run(capsys, "jobs", "list", "--json")
        assert [j["state"] for j in assert_valid(json.loads(out))["jobs"]] == ["completed"]
        rc, out, _ = run(capsys, "jobs", "cancel", "1")
        assert rc == 0 and out.startswith("job 1: completed")
    finally:
        stop_all(local)


def test_status_of_a_failed_job_exits_1(state: Path, capsys: pytest.CaptureFixture[str]) -> None:
    run(capsys, "jobs", "submit", "--", sys.executable, "-c", "raise SystemExit(4)")
    local = make_local()
    deadline = time.monotonic() + 30
    while not local.status("1").state.done and time.monotonic() < deadline:
        time.sleep(0.05)
    rc, out, _ = run(capsys, "jobs", "status", "1")
    assert rc == 1 and "reason: rank 0 exited with code 4" in out


@pytest.mark.parametrize(
    ("argv", "code", "words"),
    [
        (["jobs", "submit", "--backend", "nomad", "--", "true"], 2, "unknown backend 'nomad'"),
        (["jobs", "submit", "--", "no-such-program-xyz"], 2, "not found on PATH"),
        (["jobs", "submit"], 2, "no command given"),
        (["jobs", "submit", "--time-limit", "soon", "--", "true"], 2, "is not a duration"),
        (["jobs", "submit", "--nodes", "0", "--", "true"], 2, "--nodes must be at least 1"),
        (
            ["jobs", "submit", "--backend", "kubernetes", "--image", "i", "--", "t"],
            3,
            "no kubeconfig",
        ),
        (["jobs", "status", "9"], 2, "no local job 9"),
        (["quota", "set", "--gpus", "4"], 2, "exactly one of --user U or --group G"),
        (["users", "add", "Bad Name"], 2, "user name 'Bad Name' is not valid"),
        (["users", "remove", "nobody"], 2, "no user 'nobody'"),
    ],
)
def test_errors_are_one_line_with_an_exit_code(
    state: Path,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
    argv: list[str],
    code: int,
    words: str,
) -> None:
    monkeypatch.setenv("HOME", str(tmp_path))
    rc, _, err = run(capsys, *argv)
    assert rc == code
    assert err.startswith("dolmen: error: ") and words in err.splitlines()[0]
    assert "Traceback" not in err
    assert list(state.glob("jobs/[0-9]*")) == []  # nothing submitted


def test_job_file_mistakes_name_file_and_line(
    state: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    job = tmp_path / "job.toml"
    job.write_text('command = ["true"]\ngpu = 4\n')
    rc, _, err = run(capsys, "jobs", "submit", "--file", str(job))
    assert rc == 2 and f"{job}:2: unknown key 'gpu'; valid keys: account, backend," in err


def test_users_and_quotas(state: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert (
        run(capsys, "users", "add", "alice", "--group", "research")[1]
        == "user alice: groups research\n"
    )
    rc, out, _ = run(capsys, "users", "list", "--json")
    assert assert_valid(json.loads(out))["users"] == [{"name": "alice", "groups": ["research"]}]
    assert run(capsys, "quota", "set", "--user", "alice", "--gpus", "2")[0] == 0
    rc, out, _ = run(capsys, "quota", "show", "--json")
    assert assert_valid(json.loads(out))["quotas"] == [
        {"kind": "user", "name": "alice", "gpus": 2, "in_use": 0}
    ]
    me = current_user()
    assert run(capsys, "quota", "set", "--user", me, "--gpus", "2")[0] == 0
    tree = make_tree(tmp_path / "h100", commands={"nvidia-smi -q -x": recording(H100).read_text()})
    rc, out, err = run(
        capsys, "jobs", "submit", "--health-from", str(tree), "--gpus-per-node", "4", "--", "true"
    )
    assert (rc, out) == (3, "")
    assert err.splitlines()[0] == (
        f"dolmen: error: user {me}: 4 GPUs requested, 0 in use of a limit of 2"
    )
    assert run(capsys, "quota", "remove", "--user", me)[0] == 0
    rc, out, _ = run(
        capsys,
        "quota",
        "set",
        "--group",
        "research",
        "--gpus",
        "8",
        "--backend",
        "kubernetes",
        "--dry-run",
    )
    assert rc == 0 and 'requests.nvidia.com/gpu: "8"' in out and 'namespace: "research"' in out
    assert run(capsys, "quota", "remove", "--user", "alice")[1] == "user alice: no limit\n"
    assert run(capsys, "quota", "show")[1] == "no quotas\n"
    assert run(capsys, "users", "remove", "alice")[1] == "user alice: removed\n"


def test_slurm_options_come_from_the_site_config(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """[jobs] slurm_log_dir and slurm_python reach the Slurm backend the CLI builds."""
    from dolmen.cli.jobs import backend_from

    monkeypatch.setenv("DOLMEN_CONFIG_DIR", str(tmp_path))
    (tmp_path / "dolmen.toml").write_text(
        '[jobs]\nslurm_log_dir = "/shared/logs"\nslurm_python = "/shared/venv/bin/python"\n'
    )
    b = backend_from({"backend": "slurm"})
    assert b.options.log_dir == "/shared/logs"
    assert b.options.python == "/shared/venv/bin/python"


def test_slurm_extra_of_dolmen_toml_reaches_the_script(
    state: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    etc = state.parent / "etc"
    etc.mkdir(parents=True, exist_ok=True)
    (etc / "dolmen.toml").write_text('[slurm]\nextra = ["--gres-flags=enforce-binding"]\n')
    rc, out, _ = run(capsys, "jobs", "plan", "--backend", "slurm", "--", "python", "t.py")
    assert rc == 0 and "#SBATCH --gres-flags=enforce-binding\n" in out
    (etc / "dolmen.toml").write_text('[slurm]\nextra = ["--output=/etc/x"]\n')
    rc, _, err = run(capsys, "jobs", "plan", "--backend", "slurm", "--", "python", "t.py")
    assert rc == 2 and "dolmen.toml's [slurm] extra[0] '--output=/etc/x': dolmen writes" in err

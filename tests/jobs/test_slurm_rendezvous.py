"""A Slurm job's rendezvous port under a network policy (``[net] policy``): the plan
takes the policy's rendezvous range, so the port the ranks use is the one each node's
prolog grants; a policy that cannot hold the port is refused before anything is
submitted (exit 2), naming the fix."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest

from dolmen.errors import ConfigError, UsageError
from dolmen.host.tree import TreeHost
from dolmen.jobs.backend import get_backend
from dolmen.jobs.spec import JobSpec
from dolmen.net.model import load_policy

DOCS_EXAMPLE = '[jobs]\ntcp = [29500, "40000-40100"]\n'  # docs/net.md's before the range


def _plan(tmp_path: Path, policy: str | None, **spec: object) -> str:
    config = tmp_path / "config"
    if policy is not None:
        (tmp_path / "net.toml").write_text(policy)
        (config / "dolmen.toml").write_text(f'[net]\npolicy = "{tmp_path / "net.toml"}"\n')
    (tmp_path / "tree").mkdir(exist_ok=True)  # plan runs no command: an empty host
    b = get_backend("slurm", host=TreeHost(tmp_path / "tree"), python="py", log_dir="/logs")
    job = JobSpec(name="train", command=("python", "train.py"), nodes=2, **spec)  # type: ignore[arg-type]
    return b.plan(job).artifacts["train.sbatch"]


def _port(script: str, job_id: str, restarts: int) -> int:
    """What the script's port lines give for a job id and restart count (bash)."""
    keep = ("export DOLMEN_RESTART_COUNT=", "export DOLMEN_MASTER_PORT=")
    lines = [x for x in script.splitlines() if x.startswith(keep)]
    env = {"PATH": "/usr/bin:/bin", "SLURM_JOB_ID": job_id, "SLURM_RESTART_COUNT": str(restarts)}
    show = ["bash", "-euc", "\n".join([*lines, 'echo "$DOLMEN_MASTER_PORT"'])]
    return int(subprocess.run(show, env=env, capture_output=True, text=True, check=True).stdout)


@pytest.mark.skipif(shutil.which("bash") is None, reason="bash is not installed")
def test_the_job_s_port_is_the_one_its_prologs_grant(tmp_path: Path, dolmen_dirs: Path) -> None:
    policy = '[policy]\nmax_jobs = 8\n[jobs]\nrendezvous = "29500-29515"\ntcp = "40000-40100"\n'
    script = _plan(tmp_path, policy)
    granted = load_policy(tmp_path / "net.toml")
    for job_id, restarts in (("17", 0), ("17", 1), ("4242", 3)):
        own = granted.own_ports(job_id, restarts)  # what slurm/isolation.py grants
        assert own is not None
        port = _port(script, job_id, restarts)
        assert not own.outside(granted.ports_for(None)) and 29500 <= port <= 29515
        assert [str(r) for r in own.tcp] == [str(port), "40000-40100"]


@pytest.mark.skipif(shutil.which("bash") is None, reason="bash is not installed")
def test_without_a_policy_or_with_one_that_opens_the_default_range_nothing_changes(
    tmp_path: Path, dolmen_dirs: Path
) -> None:
    assert _port(_plan(tmp_path, None), "42", 1) == 20000 + (42 + 997) % 20000
    opened = '[jobs]\ntcp = ["20000-39999", "40000-40100"]\n'
    assert _port(_plan(tmp_path, opened), "42", 1) == 20000 + (42 + 997) % 20000


def test_a_policy_that_blocks_the_rendezvous_port_is_refused_naming_the_fix(
    tmp_path: Path, dolmen_dirs: Path
) -> None:
    with pytest.raises(ConfigError) as e:
        _plan(tmp_path, "[policy]\nmax_jobs = 16\n" + DOCS_EXAMPLE)
    assert e.value.message == (
        f"{tmp_path / 'net.toml'}: network policy net names no [jobs] rendezvous range and"
        " does not open tcp 20000-39999 to a job's nodes, where its rendezvous port"
        " (MASTER_PORT) would be: the job would hang at its rendezvous"
    )
    assert (
        e.value.hint is not None and 'add rendezvous = "29500-29515" under [jobs]' in e.value.hint
    )
    # A tenant whose own ports would hold it does not help a job of another account.
    tenant = DOCS_EXAMPLE + '[tenants.open]\ntcp = "20000-39999"\n'
    assert _plan(tmp_path, tenant, account="open")
    with pytest.raises(ConfigError, match="names no \\[jobs\\] rendezvous range"):
        _plan(tmp_path, tenant, account="other")


def test_a_job_that_sets_its_own_port_under_a_rendezvous_range_is_refused(
    tmp_path: Path, dolmen_dirs: Path
) -> None:
    policy = '[jobs]\nrendezvous = "29500-29563"\n'
    with pytest.raises(UsageError, match="the job sets DOLMEN_MASTER_PORT, but network policy"):
        _plan(tmp_path, policy, env={"DOLMEN_MASTER_PORT": "29500"})


def test_the_cli_refuses_in_one_line_with_exit_2(
    tmp_path: Path, dolmen_dirs: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from dolmen.cli.main import main

    (tmp_path / "net.toml").write_text(DOCS_EXAMPLE)
    (tmp_path / "config" / "dolmen.toml").write_text(f'[net]\npolicy = "{tmp_path / "net.toml"}"\n')
    argv = ["jobs", "plan", "--backend", "slurm", "--nodes", "2", "--", "python", "train.py"]
    assert main(argv) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert err[0].startswith("dolmen: error: ") and "names no [jobs] rendezvous range" in err[0]
    assert 'rendezvous = "29500-29563"' in err[1], err

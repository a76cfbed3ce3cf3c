"""``net prove`` as a command: the whole matrix of the lab as JSON (against its schema),
the terminal's count line, exit 1 on a leak, and one clear error per bad input.

The command is tested directly (click's runner) until ``cli/net.py`` registers it.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner, Result
from jsonschema import Draft202012Validator

from dolmen.cli.net_prove import prove
from dolmen.errors import ConfigError, ExitCode, UsageError
from dolmen.report import schemas
from tests.net.prove.lab import POLICY, TABLE, Lab


def _invoke(*argv: str) -> Result:
    return CliRunner().invoke(prove, list(argv), catch_exceptions=True)


def _endpoints(lab: Lab, path: Path) -> Path:
    rows = [
        f'[[endpoint]]\nname = "{n.name}"\naddress = "{n.address}"\nnetns = "{n.netns}"\n'
        for n in lab.cluster.nodes.values()
    ]
    path.write_text("\n".join(rows))
    return path


@pytest.mark.netns
def test_prove_prints_the_matrix_and_exits_1_on_a_leak_or_a_block(lab: Lab, tmp_path: Path) -> None:
    """The count line of a clean run; then the negative control: a node without its table
    leaks, a job isolated on one of its two members only is blocked, and the report
    says so (exit 1, the whole matrix as JSON)."""
    from dolmen.net import jobs, nft

    lab.reset()
    eps = _endpoints(lab, tmp_path / "endpoints.toml")
    key, half = jobs.job_key("slurm", 31), jobs.job_key("local", 5)
    for name in ("j2a", "j2b"):
        jobs.start(lab.host(name), lab.policy, key, lab.addresses("j2a", "j2b"), known={key})
    args = ["--policy", str(lab.policy_path), "--endpoints", str(eps), "--timeout", "0.5"]
    try:
        res = _invoke(*args, "--sample", "1", "--job", f"{key}=j2a,j2b")
        assert res.exit_code == 0, res.output
        assert res.output.splitlines()[-1].endswith(" 0 leaks, 0 blocks, 0 unknown")

        nft.run_batch(lab.host("out"), {"nftables": [{"delete": {"table": TABLE}}]})
        jobs.start(lab.host("j1a"), lab.policy, half, lab.addresses("j1a", "j1b"), known={half})
        jobs_now = ["--job", f"{key}=j2a,j2b", "--job", f"{half}=j1a,j1b"]
        res = _invoke(*args, "--sample", "0", *jobs_now, "--json")
        assert res.exit_code == int(ExitCode.UNHEALTHY), res.output
        doc = json.loads(res.output)
        Draft202012Validator(schemas.load("net.prove")).validate(doc)
        assert doc["counts"]["probes"] == len(doc["probes"]) > 0
        rows = doc["probes"]
        assert any(p["why"].startswith(f"job {key}") and p["reached"] for p in rows)
        assert {p["target"] for p in rows if p["verdict"] == "leak"} == {"out"}
        blocked = {(p["source"], p["target"]) for p in rows if p["verdict"] == "block"}
        assert blocked == {("j1a", "j1b")}  # j1b never got the job's slot
    finally:
        for name in ("j2a", "j2b"):
            jobs.end(lab.host(name), key)
        jobs.end(lab.host("j1a"), half)
        lab.apply(names=["out"])


def test_bad_inputs_are_one_clear_error(tmp_path: Path) -> None:
    policy = tmp_path / "p.toml"
    policy.write_text(POLICY)
    eps = tmp_path / "e.toml"
    eps.write_text('[[endpoint]]\nname = "a"\naddress = "10.0.0.1"\n')
    base = ["--policy", str(policy), "--endpoints", str(eps)]
    cases: list[tuple[list[str], type[Exception], str]] = [
        (base, ConfigError, "needs at least two"),
        (
            ["--policy", str(tmp_path / "none.toml"), "--endpoints", str(eps)],
            ConfigError,
            "no such",
        ),
        ([*base, "--sample", "5000"], UsageError, "0..1000"),
    ]
    for argv, kind, words in cases:
        res = _invoke(*argv)
        assert isinstance(res.exception, kind), (argv, res.output, res.exception)
        assert words in str(res.exception), (argv, str(res.exception))
    eps.write_text(eps.read_text() + '[[endpoint]]\nname = "b"\naddress = "10.0.0.2"\n')
    for bad in ("soon", "1m", "0", "31"):  # click: exit 2 with the range
        res = _invoke(*base, "--timeout", bad)
        assert res.exit_code == 2 and "--timeout" in res.output, res.output
    res = _invoke(*base, "--job", "7=a,b@nosuchtenant")
    assert isinstance(res.exception, UsageError) and "tenant 'nosuchtenant'" in str(res.exception)
    res = _invoke(*base, "--job", "7")
    assert isinstance(res.exception, UsageError) and "ID=MEMBER" in str(res.exception)

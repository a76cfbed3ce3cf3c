"""``dolmen net`` in-process: the JSON documents against their schemas, the exit codes,
one line for a host without nft and for a bad policy."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from jsonschema import Draft202012Validator

from dolmen.cli.main import main
from dolmen.report import schemas
from tests.net.conftest import Cluster
from tests.net.test_nft_netns import POLICY


def _run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    rc = main(list(argv))
    out, err = capsys.readouterr()
    return rc, out, err


def _valid(out: str, short: str) -> dict[str, object]:
    doc = json.loads(out)
    Draft202012Validator(schemas.load(short)).validate(doc)
    return dict(doc)


@pytest.mark.netns
def test_plan_apply_verify_rollback_print_their_documents(
    cluster: Cluster, dolmen_dirs: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    cluster.reset()
    policy = tmp_path / "lab.toml"
    policy.write_text(POLICY)
    ns = ("--netns", cluster.srv.netns, "--json")
    rc, out, _ = _run(capsys, "net", "plan", "--policy", str(policy), *ns)
    plan = _valid(out, "net.plan")
    assert rc == 0 and plan["exists"] is False and plan["in_sync"] is False
    rc, out, _ = _run(capsys, "net", "apply", "--policy", str(policy), *ns, "--yes")
    assert rc == 0 and _valid(out, "net.apply")["ok"] is True
    audit = (dolmen_dirs / "audit" / "audit.log").read_text()
    assert audit.count('"policy:lab"') == 2 and '"net.apply"' in audit  # intent, result
    rc, out, _ = _run(capsys, "net", "apply", "--policy", str(policy), "--netns", cluster.srv.netns)
    assert rc == 0 and "nothing to change" in out
    rc, out, _ = _run(capsys, "net", "verify", "--policy", str(policy), *ns)
    verified = _valid(out, "net.verify")
    assert rc == 0 and verified["in_sync"] is True and verified["counters"]
    cluster.srv.run(
        ["nft", "add", "rule", "inet", "dolmen", "input", "tcp", "dport", "7", "accept"]
    )
    rc, out, _ = _run(capsys, "net", "verify", "--policy", str(policy), *ns)
    assert rc == 1 and _valid(out, "net.verify")["diff"] == {
        "added": [], "removed": ['rule input ""'], "reordered": False}  # fmt: skip
    rc, out, _ = _run(capsys, "net", "rollback", *ns, "--yes")
    assert rc == 0 and _valid(out, "net.rollback")["complete"] is True
    rc, out, _ = _run(capsys, "net", "rollback", "--netns", cluster.srv.netns, "--yes")
    assert rc == 0 and "nothing to roll back" in out
    assert cluster.srv.run(["nft", "list", "table", "inet", "dolmen"]).rc == 1


def test_a_host_without_nft_gets_one_line_and_exit_3(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    policy = tmp_path / "lab.toml"
    policy.write_text(POLICY)
    monkeypatch.setenv("PATH", str(tmp_path / "empty"))
    rc, out, err = _run(capsys, "net", "plan", "--policy", str(policy))
    assert rc == 3 and out == ""
    assert err.splitlines()[0] == "dolmen: error: nft not found: this host has no nftables"


def test_a_bad_policy_names_the_file_and_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    policy = tmp_path / "bad.toml"
    policy.write_text('[policy]\nname = "x"\n\n[jobs]\ntcp = [29500]\nports = 1\n')
    rc, _, err = _run(capsys, "net", "verify", "--policy", str(policy))
    assert rc == 2
    assert f"{policy}:6: unknown key 'ports' in [jobs]; valid keys: rendezvous, tcp, udp" in err


def test_nft_without_the_right_to_use_it_says_run_as_root(
    tmp_path: Path, dolmen_dirs: Path
) -> None:
    """The real nft, its capabilities dropped (setpriv): one line, the fix, exit 3."""
    import shutil
    import subprocess
    import sys

    if not shutil.which("setpriv") or not shutil.which("nft"):
        pytest.skip("needs setpriv and nft")
    policy = tmp_path / "lab.toml"
    policy.write_text(POLICY)
    drop = ["setpriv", "--inh-caps=-all", "--ambient-caps=-all", "--bounding-set=-all"]
    for cmd in (["net", "gc", "--policy", str(policy)], ["net", "plan", "--policy", str(policy)]):
        got = subprocess.run(
            [*drop, sys.executable, "-m", "dolmen.cli.main", *cmd],
            capture_output=True,
            text=True,
            timeout=60,
            check=False,
        )
        lines = got.stderr.splitlines()
        assert got.returncode == 3 and got.stdout == "", got.stderr
        assert len(lines) == 2 and "nft was not permitted" in lines[0], lines
        assert lines[1] == "hint: run it as root (nftables needs CAP_NET_ADMIN)"

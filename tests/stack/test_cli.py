"""``dolmen stack`` in-process: lock, diff, plan on host trees, their --json contracts, and
bad input (a folder as output, a malformed lock) as one line with a documented exit code."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from dolmen.cli.main import main
from tests.report.contract import assert_valid
from tests.stack.nodes import PACKAGES, node


def _run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    rc = main(list(argv))
    out, err = capsys.readouterr()
    return rc, out, err


def test_lock_diff_plan(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    ref, odd = (
        node(tmp_path / "ref"),
        node(tmp_path / "odd", {**PACKAGES, "libnccl2": "2.26.2-1+cuda12.8"}),
    )
    lock = tmp_path / "stack.toml"
    rc, out, err = _run(capsys, "stack", "lock", "-o", str(lock), "--from", str(ref))
    assert rc == 0 and out.startswith(f"wrote {lock}:"), err
    assert 'version = "2.27.7-1+cuda13.0"' in lock.read_text()
    rc, out, _ = _run(capsys, "stack", "lock", "--from", str(ref), "--json")
    assert rc == 0 and assert_valid(json.loads(out))["components"]["nccl"]["version"] == "2.27.7"

    rc, out, _ = _run(capsys, "stack", "diff", str(lock), "--from", str(ref))
    assert rc == 0 and "0 drifted" in out
    rc, out, _ = _run(capsys, "stack", "diff", str(lock), "--from", str(odd))
    assert rc == 1 and out.startswith("changed       nccl")
    rc, out, _ = _run(capsys, "stack", "diff", str(lock), "--from", str(odd), "--json")
    doc = assert_valid(json.loads(out))
    assert rc == 1 and doc["exit_code"] == 1 and doc["counts"]["changed"] == 1

    rc, out, err = _run(capsys, "stack", "plan", str(lock), "--from", str(odd))
    assert rc == 0, err
    assert "apt-get install -y --allow-downgrades --allow-change-held-packages" in out
    assert "libnccl2=2.27.7-1+cuda13.0" in out and "apt-mark hold" in out
    rc, out, _ = _run(capsys, "stack", "plan", str(lock), "--from", str(odd), "--json")
    doc = assert_valid(json.loads(out))
    assert doc["counts"]["install"] == 1 and doc["commands"][-1][:2] == ["apt-mark", "hold"]


def test_lock_to_stdout_and_refusals(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    ref = node(tmp_path / "ref")
    rc, out, _ = _run(capsys, "stack", "lock", "--from", str(ref))
    assert rc == 0 and out.startswith("# The exact software stack")
    rc, _, err = _run(capsys, "stack", "lock", "-o", str(tmp_path), "--from", str(ref))
    assert rc != 0 and err.startswith("dolmen: error:") and len(err.splitlines()) <= 2
    bad = tmp_path / "bad.toml"
    bad.write_text(
        'schema = "dolmen.stack.lock/1"\n[components.x]\nkind = "nccl"\nstate = "known"\n'
    )
    for cmd in ("diff", "plan"):
        rc, _, err = _run(capsys, "stack", cmd, str(bad), "--from", str(ref))
        assert rc == 2 and f"{bad}: not a stack lock" in err
    rc, _, err = _run(capsys, "stack", "diff", str(tmp_path / "none.toml"), "--from", str(ref))
    assert rc == 2 and "no such stack lock" in err and "hint: write one" in err

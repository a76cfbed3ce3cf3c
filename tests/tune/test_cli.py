"""The ``dolmen tune`` commands in-process: listings, show, recommend, status, exit codes."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from dolmen.cli.main import main
from tests.hosts.scenarios import build
from tests.report.contract import assert_valid


def run(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str, str]:
    rc = main(list(args))
    out = capsys.readouterr()
    return rc, out.out, out.err


def test_profiles_lists_shipped_and_site_ones(
    dolmen_dirs: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    (dolmen_dirs / "profiles" / "ours.toml").write_text(
        '[profile]\ndescription = "our cluster"\ninclude = ["ai-training"]\n'
    )
    (dolmen_dirs / "profiles" / "broken.toml").write_text("[sysctl]\nvm.swappiness = -1\n")
    rc, out, _ = run(capsys, "tune", "profiles", "--json")
    assert rc == 0
    rows = {(r["name"], r["kind"]): r for r in assert_valid(json.loads(out))["profiles"]}
    assert rows[("ours", "site")]["description"] == "our cluster"
    assert "out of range" in rows[("broken", "site")]["error"]
    assert rows[("baseline", "shipped")]["read_only"]
    rc, out, _ = run(capsys, "tune", "profiles")
    assert "INVALID" in out and "(read only)" in out


def test_show_says_where_each_value_came_from(capsys: pytest.CaptureFixture[str]) -> None:
    rc, out, _ = run(capsys, "tune", "show", "ai-training-multinode", "--json")
    doc = assert_valid(json.loads(out))
    by_key = {(e["setting"], e["key"]): e for e in doc["entries"]}
    assert by_key[("cpu", "governor")]["from"].split("/")[-1].startswith("nvidia-base.toml:")
    assert by_key[("irq", "affinity")]["devices"] == ["nic", "nvme"]
    assert "20%" in by_key[("sysctl", "kernel.numa_balancing")]["why"]
    rc, out, _ = run(capsys, "tune", "show", "ai-training")
    assert rc == 0 and "includes: nvidia-base" in out and "[V]" in out


def test_recommend_reads_the_host(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    root = build("h100-hgx-healthy", tmp_path / "h100")
    rc, out, _ = run(capsys, "tune", "recommend", "--root", str(root), "--json")
    doc = assert_valid(json.loads(out))
    assert doc["profile"] == "ai-training-multinode"
    assert len(doc["traits"]["datacenter_gpus"]) == 8 and doc["traits"]["fabric_ports"]
    empty = tmp_path / "empty"
    empty.mkdir()
    rc, out, _ = run(capsys, "tune", "recommend", "--root", str(empty))
    assert rc == 0 and out.startswith("baseline: no NVIDIA GPU")


def test_default_command_plans_the_configured_profile(
    host_tree: Path, dolmen_dirs: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    (dolmen_dirs / "dolmen.toml").write_text('[tune]\nprofile = "workstation"\n')
    rc, out, _ = run(capsys, "tune", "plan", "--root", str(host_tree))
    assert rc == 0 and "workstation on tune-test" in out


def test_nothing_active(host_tree: Path, capsys: pytest.CaptureFixture[str]) -> None:
    root = ("--root", str(host_tree))
    rc, out, _ = run(capsys, "tune", "status", *root, "--json")
    assert rc == 0 and assert_valid(json.loads(out))["active"] is None
    rc, _, err = run(capsys, "tune", "verify", *root)
    assert rc == 2 and "no active profile" in err
    assert run(capsys, "tune", "recover", *root)[1].startswith("nothing to recover")
    rc, out, _ = run(capsys, "tune", "verify", "workstation", *root, "--json")
    assert (
        rc == 1 and not assert_valid(json.loads(out))["in_sync"]
    )  # a named profile not applied: drift


def test_unknown_profile_is_one_line_and_a_hint(capsys: pytest.CaptureFixture[str]) -> None:
    rc, _, err = run(capsys, "tune", "plan", "ai-trianing")
    assert rc == 2
    assert err.splitlines()[0].startswith("dolmen: error: no profile named 'ai-trianing'")
    assert "valid profiles:" in err and "Traceback" not in err

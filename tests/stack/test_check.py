"""The ``stack.lock`` check: skip without a lock, the one component that differs fails,
what this host does not show is unknown, a bad lock is unknown naming it; and the same
through ``dolmen validate --from`` with ``[validate] stack_lock``."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from dolmen.checks import load_registry
from dolmen.checks.context import Context
from dolmen.checks.model import Status
from dolmen.checks.runner import run_one
from dolmen.cli.main import main
from dolmen.config import Config
from dolmen.host.tree import TreeHost
from dolmen.stack.lockfile import dumps
from dolmen.stack.observe import observe
from tests.hosts.scenarios import build
from tests.stack.nodes import PACKAGES, node


def _run(tree: Path, lock: Path | None) -> dict[str, tuple[Status, str]]:
    config = Config(sections={"validate": {"stack_lock": str(lock)}}) if lock else None
    found = run_one(Context(TreeHost(tree), config=config), load_registry()["stack.lock"])
    return {f.subject: (f.status, f.summary) for f in found}


@pytest.fixture(scope="module")
def lock(tmp_path_factory: pytest.TempPathFactory) -> Path:
    base = tmp_path_factory.mktemp("lock")
    path = base / "stack.toml"
    path.write_text(dumps(observe(TreeHost(node(base / "ref")))))
    return path


def test_skips_naming_the_setting_without_a_lock(tmp_path: Path) -> None:
    assert _run(node(tmp_path / "n"), None) == {
        "host": (Status.SKIP, 'no stack lock configured ([validate] stack_lock = "FILE")')
    }


def test_the_node_whose_nccl_differs_fails_on_nccl_alone(tmp_path: Path, lock: Path) -> None:
    found = _run(node(tmp_path / "odd", {**PACKAGES, "libnccl2": "2.26.2-1+cuda12.8"}), lock)
    failing = {s: v for s, v in found.items() if v[0] is not Status.PASS}
    assert list(failing) == ["stack:nccl"] and failing["stack:nccl"][0] is Status.FAIL
    assert "2.26.2-1+cuda12.8" in failing["stack:nccl"][1]
    assert sum(1 for s in found if s.startswith("gpu:")) == 8  # a VBIOS per GPU, by bus id
    assert any(s.startswith("ib:") for s in found) and "cuda:/usr/local/cuda-13.0" in found


def test_unknown_where_this_host_does_not_show_a_component(tmp_path: Path, lock: Path) -> None:
    found = _run(build("h100-hgx-healthy", tmp_path / "bare"), lock)
    assert found["stack:fabric-manager"][0] is Status.UNKNOWN
    assert Status.FAIL not in {s for s, _ in found.values()}


def test_a_lock_that_cannot_be_read_is_unknown(tmp_path: Path) -> None:
    bad = tmp_path / "stack.toml"
    bad.write_text("schema = [")
    tree = node(tmp_path / "n")
    ((status, summary),) = _run(tree, bad).values()
    assert status is Status.UNKNOWN and "not valid TOML" in summary
    ((status, summary),) = _run(tree, tmp_path / "absent.toml").values()
    assert status is Status.UNKNOWN and "no such stack lock" in summary


def test_validate_with_the_configured_lock(
    tmp_path: Path, lock: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    conf = tmp_path / "dolmen.toml"
    conf.write_text(f'[validate]\nstack_lock = "{lock}"\n')
    tree = node(tmp_path / "odd", {**PACKAGES, "libnccl2": "2.26.2-1+cuda12.8"})
    rc = main(
        ["validate", "--from", str(tree), "--config", str(conf), "--level", "standard", "--json"]
    )
    doc = json.loads(capsys.readouterr().out)
    mine = [f for f in doc["findings"] if f["check"] == "stack.lock" and f["status"] == "fail"]
    assert [f["subject"] for f in mine] == ["stack:nccl"] and rc == 1

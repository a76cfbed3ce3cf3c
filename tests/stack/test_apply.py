"""``stack apply`` and ``stack rollback`` for real: apt and dpkg in a private root.

The lock wants newer driver and NCCL packages and a fabric manager that is not
installed; apply installs them through the journaled engine, holds them, records the
previous versions and audits intent and result; rollback reinstalls the previous
versions, removes the fabric manager and drops the holds. The machine's own dpkg
database is checked unchanged by the ``apt_root`` fixture.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from dolmen.cli.main import main
from dolmen.host.live import LiveHost
from dolmen.stack.lockfile import dumps
from dolmen.stack.model import Component, Lock, Package
from dolmen.stack.packages import parse_dpkg_status
from dolmen.tune.journal import open_journal
from dolmen.tune.settings.packages import stack_dir
from tests.report.contract import assert_valid

NEW = {
    "nvidia-driver-550": "550.127.05-0ubuntu1",
    "nvidia-fabricmanager-550": "550.127.05-1",
    "libnccl2": "2.21.5-1+cuda12.4",
}


def _lock(tmp_path: Path, versions: dict[str, str], fm: str = "550.127.05") -> Path:
    def pkg(name: str) -> tuple[Package, ...]:
        return (Package(name, versions[name], "apt"),)

    lock = Lock(
        "ref-node",
        "ubuntu",
        "22.04",
        "x86_64",
        "apt",
        (
            Component(
                "driver",
                "driver",
                "550.127.05",
                "proc/driver/nvidia/version",
                details={"branch": "550", "flavour": "open"},
                packages=pkg("nvidia-driver-550"),
            ),
            Component("nccl", "nccl", "2.21.5", "/usr/include/nccl.h", packages=pkg("libnccl2")),
            Component(
                "fabric-manager",
                "fabric-manager",
                fm,
                "dpkg",
                packages=pkg("nvidia-fabricmanager-550"),
            ),
        ),
        ("Hopper",),
    )
    path = tmp_path / "stack.toml"
    path.write_text(dumps(lock))
    return path


def _installed(root: Path) -> dict[str, tuple[str, bool]]:
    db = parse_dpkg_status((root / "var/lib/dpkg/status").read_text())
    return {n: (p.version, p.held) for n, p in db.items()}


def _run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    rc = main(list(argv))
    out, err = capsys.readouterr()
    return rc, out, err


def _events(state: Path) -> list[dict[str, Any]]:
    """(action, outcome, target, details) of each audit event (ECS lines)."""
    log = state / "audit" / "audit.log"
    lines = [json.loads(line) for line in log.read_text().splitlines() if line.strip()]
    return [
        {
            "action": e["event"]["action"],
            "outcome": e["event"]["outcome"],
            "target": e["dolmen"]["target"],
            "details": e["dolmen"]["details"],
        }
        for e in lines
    ]


def test_apply_installs_holds_audits_and_rollback_reinstalls(
    tmp_path: Path, apt_root: Path, dolmen_dirs: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    lock = _lock(tmp_path, NEW)
    rc, out, err = _run(capsys, "stack", "apply", str(lock), "--root", str(apt_root), "--dry-run")
    assert rc == 0, err
    assert "install  libnccl2" in out and f"APT_CONFIG={apt_root}/etc/apt/apt.conf" in out
    assert _installed(apt_root)["libnccl2"] == ("2.19.3-1+cuda12.2", False)  # dry run

    rc, out, err = _run(
        capsys, "stack", "apply", str(lock), "--root", str(apt_root), "--yes", "--json"
    )
    assert rc == 0, (out, err)
    doc = assert_valid(json.loads(out))
    assert doc["ok"] and doc["steps"][0]["status"] == "done" and doc["steps"][0]["held"]
    assert _installed(apt_root) == {n: (v, True) for n, v in NEW.items()}
    view = open_journal(stack_dir(LiveHost(apt_root)))
    assert view is not None
    saved = view.saved[0]["packages"]
    assert saved["libnccl2"] == {"version": "2.19.3-1+cuda12.2", "held": False}
    assert saved["nvidia-fabricmanager-550"] == {"version": None, "held": False}
    actions = [(e["action"], e["outcome"]) for e in _events(dolmen_dirs)]
    assert ("tune.apply", "unknown") in actions and ("tune.apply", "success") in actions
    intent = next(e for e in _events(dolmen_dirs) if e["outcome"] == "unknown")
    assert intent["target"] == "profile:stack:stack.toml" and intent["details"]["kind"] == "stack"
    assert intent["details"]["previous"]["libnccl2"] == "2.19.3-1+cuda12.2"

    # The host holds the lock now: diff agrees on the packages, apply has nothing to do.
    rc, out, _ = _run(capsys, "stack", "apply", str(lock), "--root", str(apt_root), "--yes")
    assert rc == 0 and "nothing to change" in out

    rc, out, err = _run(capsys, "stack", "rollback", "--root", str(apt_root), "--yes", "--json")
    assert rc == 0, (out, err)
    assert assert_valid(json.loads(out))["complete"] is True
    assert _installed(apt_root) == {
        "nvidia-driver-550": ("550.54.15-0ubuntu1", False),
        "libnccl2": ("2.19.3-1+cuda12.2", False),
    }
    assert open_journal(stack_dir(LiveHost(apt_root))) is None
    assert ("tune.rollback", "success") in [
        (e["action"], e["outcome"]) for e in _events(dolmen_dirs)
    ]


def test_a_version_the_repository_lacks_is_refused_before_any_change(
    tmp_path: Path, apt_root: Path, dolmen_dirs: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    lock = _lock(tmp_path, {**NEW, "libnccl2": "2.99.0-1+cuda13.0"})
    before = _installed(apt_root)
    rc, _, err = _run(capsys, "stack", "apply", str(lock), "--root", str(apt_root), "--yes")
    assert rc == 3 and "do not offer libnccl2=2.99.0-1+cuda13.0" in err
    assert _installed(apt_root) == before
    assert open_journal(stack_dir(LiveHost(apt_root))) is None


def test_an_impossible_lock_is_refused_with_its_rule(
    tmp_path: Path, apt_root: Path, dolmen_dirs: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    lock = _lock(tmp_path, NEW, fm="550.54.15")  # fabric manager of another driver release
    before = _installed(apt_root)
    rc, out, err = _run(capsys, "stack", "apply", str(lock), "--root", str(apt_root), "--yes")
    assert rc == 2 and "fabricmanager-equals-driver" in err and out == ""
    assert _installed(apt_root) == before


def test_a_private_root_without_its_apt_conf_is_never_sent_to_this_machines_apt(
    tmp_path: Path, apt_root: Path, dolmen_dirs: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    (apt_root / "etc/apt/apt.conf").unlink()
    rc, _, err = _run(
        capsys, "stack", "apply", str(_lock(tmp_path, NEW)), "--root", str(apt_root), "--yes"
    )
    assert rc == 3 and "apt would change this machine" in err

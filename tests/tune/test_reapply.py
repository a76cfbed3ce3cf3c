"""``dolmen tune reapply`` in-process on the recorded test host through a simulated reboot:
only the rows of kinds that do not persist are read and written (a persisted file someone
removed is left to ``verify``), a dry run first writes nothing, the write is journaled and
audited (intent, then outcome), a second run has nothing to do, an IRQ number that moved
to another device is never written, and the profile still rolls back to the originals."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from dolmen.audit.reader import read_entries
from dolmen.audit.settings import audit_settings
from dolmen.cli.main import main
from dolmen.tune.settings import SETTINGS
from tests.report.contract import assert_valid
from tests.tune.trees import add_nvme_irqs

PROFILE = "ai-training-multinode"
SWAPPINESS = "proc/sys/vm/swappiness"


def run(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str, str]:
    rc = main(list(args))
    out = capsys.readouterr()
    return rc, out.out, out.err


def _actions() -> list[tuple[str, str]]:
    path = audit_settings().path
    if not path.exists():
        return []
    return [(e.event.action, e.event.outcome) for e in read_entries(path) if e.event is not None]


def _journal(state: Path) -> list[dict[str, Any]]:
    [path] = state.rglob("journals/*.jsonl")
    return [json.loads(line) for line in path.read_text().splitlines()]


@pytest.fixture
def applied(host_tree: Path, capsys: pytest.CaptureFixture[str]) -> tuple[Path, list[Path]]:
    irqs = add_nvme_irqs(host_tree, node=1)
    rc, out, err = run(capsys, "tune", "apply", PROFILE, "--yes", "--root", str(host_tree))
    assert rc == 0, out + err
    files = [host_tree / f"proc/irq/{n}/smp_affinity_list" for n in irqs]
    assert {f.read_text() for f in files} == {"2-3\n"}
    return host_tree, files


def _reboot(root: Path, files: list[Path]) -> None:
    """What a boot resets: interrupts on every CPU, a kernel value back to its default;
    and someone removes a persisted file (not a reboot's doing: reapply leaves it)."""
    for f in files:
        f.write_text("0-3\n")
    (root / SWAPPINESS).write_text("60\n")
    [limits] = root.glob("etc/security/limits.d/90-dolmen-memlock.conf")
    limits.unlink()


def test_every_setting_kind_says_whether_it_persists() -> None:
    for name, setting in SETTINGS.items():
        assert isinstance(getattr(type(setting), "persists", None), bool), name
    assert not SETTINGS["irq"].persists and SETTINGS["limits"].persists


def test_dry_run_then_reapply_only_what_a_reboot_resets(
    applied: tuple[Path, list[Path]], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    root, files = applied
    before_journal = _journal(tmp_path / "state")
    before_audit = _actions()
    _reboot(root, files)

    rc, out, _ = run(capsys, "tune", "reapply", "--dry-run", "--root", str(root), "--json")
    doc = assert_valid(json.loads(out))
    assert rc == 0 and doc["dry_run"] and all(r["result"] is None for r in doc["rows"])
    kinds = {r["target"]["setting"] for r in doc["rows"]}
    assert "irq" in kinds and "sysctl" in kinds and not kinds & {"limits", "boot", "services"}
    drifted = {r["target"]["name"] for r in doc["rows"] if r["action"] == "change"}
    assert drifted == {"vm.swappiness"} | {f"irq {f.parent.name} (nvme0)" for f in files}
    assert {f.read_text() for f in files} == {"0-3\n"}  # the dry run wrote nothing
    assert _journal(tmp_path / "state") == before_journal and _actions() == before_audit

    rc, out, err = run(capsys, "tune", "reapply", "--yes", "--root", str(root))
    assert rc == 0, out + err
    assert f"re-applied {len(drifted)} of {len(drifted)} settings of {PROFILE}" in out
    assert {f.read_text() for f in files} == {"2-3\n"}
    assert (root / SWAPPINESS).read_text().strip() == "10"
    assert not list(root.glob("etc/security/limits.d/90-dolmen-memlock.conf"))  # persisted kind
    records = [r for r in _journal(tmp_path / "state") if r["type"] == "reapplied"]
    assert len(records) == len(drifted) and all(r["held"] for r in records)
    assert {r["before"] for r in records} == {"0-3", "60"}
    assert _actions()[len(before_audit) :] == [
        ("tune.reapply", "unknown"),
        ("tune.reapply", "success"),
    ]

    # idempotent: nothing drifted that reapply owns, nothing written, nothing audited
    rc, out, _ = run(capsys, "tune", "reapply", "--yes", "--root", str(root))
    assert rc == 0 and f"{PROFILE} holds: nothing to re-apply" in out
    assert len([r for r in _journal(tmp_path / "state") if r["type"] == "reapplied"]) == len(
        records
    )
    rc, out, _ = run(capsys, "tune", "verify", "--root", str(root), "--json")
    drift = [r["target"]["name"] for r in json.loads(out)["rows"] if r["action"] == "change"]
    assert rc == 1 and drift == ["memlock for logins"]  # verify still sees it, drift

    # the journal with its reapplied records still rolls back to the first originals
    rc, out, err = run(capsys, "tune", "rollback", "--yes", "--root", str(root))
    assert rc == 0, out + err
    assert {f.read_text() for f in files} == {"0-3\n"}  # the recorded host's own


def test_an_irq_that_moved_to_another_device_is_not_written(
    applied: tuple[Path, list[Path]], capsys: pytest.CaptureFixture[str]
) -> None:
    root, files = applied
    for f in files:
        f.write_text("0-3\n")
    moved = files[0].parent.name  # the next boot numbered the NVMe queues differently
    [msi] = root.glob(f"sys/class/nvme/nvme0/device/msi_irqs/{moved}")
    msi.rename(msi.with_name("999"))
    rc, out, err = run(capsys, "tune", "reapply", "--yes", "--root", str(root), "--json")
    doc = assert_valid(json.loads(out))
    assert rc == 3 and not doc["complete"]
    [row] = [r for r in doc["rows"] if r["moved"]]
    assert row["target"]["name"] == f"irq {moved} (nvme0)" and row["result"] is None
    assert files[0].read_text() == "0-3\n" and {f.read_text() for f in files[1:]} == {"2-3\n"}
    rc, out, err = run(capsys, "tune", "reapply", "--yes", "--root", str(root))
    assert rc == 3 and f"`dolmen tune apply {PROFILE}` re-plans it" in err


def test_nothing_active_and_an_interrupted_apply(
    host_tree: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    rc, out, _ = run(capsys, "tune", "reapply", "--yes", "--root", str(host_tree))
    assert rc == 0 and "no tune profile is active" in out
    rc, out, _ = run(capsys, "tune", "reapply", "--root", str(host_tree), "--json")
    assert rc == 0 and assert_valid(json.loads(out))["profile"] is None
    # an apply that died after its begin record: a boot never guesses which way to go
    rc, out, err = run(capsys, "tune", "apply", PROFILE, "--yes", "--root", str(host_tree))
    assert rc == 0, out + err
    [path] = (tmp_path / "state").rglob("journals/*.jsonl")
    lines = path.read_text().splitlines(keepends=True)
    path.write_text("".join(r for r in lines if json.loads(r)["type"] != "commit"))
    rc, out, err = run(capsys, "tune", "reapply", "--yes", "--root", str(host_tree))
    assert rc == 3 and "was interrupted" in err and "dolmen tune recover" in err

"""storage.io_errors and system.pcie.aer judge each kernel-log line by the one severity
table (checks/log_severity.py, kb/data/xids.toml) that ``dolmen logs scan`` reads: for
every subject they report, the status is the worst of its lines' severities there."""

from __future__ import annotations

from pathlib import Path

import pytest

from dolmen.checks.context import Context
from dolmen.checks.log_severity import STATUS, assess_event
from dolmen.checks.model import Status
from dolmen.host.tree import TreeHost
from dolmen.kb import load_kb
from tests.checks.helpers import by_subject, run_check
from tests.conftest import make_tree

AT = "kern  :err   : 2025-01-20T09:00:0{}+00:00 "
LINES = [
    "blk_update_request: I/O error, dev sda, sector 2048 op 0x0:(READ) flags 0x0",
    "blk_update_request: I/O error, dev loop0, sector 8 op 0x0:(READ) flags 0x0",
    "pcieport 0000:00:02.1: AER: Uncorrected (Non-Fatal) error received: 0000:01:00.0",
    "pcieport 0000:00:03.1: AER: Corrected error received: 0000:02:00.0",
]
ORDER = (Status.PASS, Status.WARN, Status.FAIL)


@pytest.fixture
def root(tmp_path: Path) -> Path:
    dmesg = "".join(AT.format(i) + line + "\n" for i, line in enumerate(LINES))
    return make_tree(tmp_path, files={"proc/uptime": "86400.00 0\n"}, commands={"dmesg": dmesg})


@pytest.mark.parametrize(
    ("check", "subject_of"),
    [
        ("storage.io_errors", lambda ev: f"disk:{ev.device}"),
        ("system.pcie.aer", lambda ev: f"pci:{ev.bus_id}"),
    ],
)
def test_each_subject_has_its_lines_severity(root: Path, check: str, subject_of: object) -> None:
    events = Context(TreeHost(root)).store.get("kernel_log").events
    kinds = {"storage.io_errors": ("io_error",), "system.pcie.aer": ("aer", "aer_corrected")}
    expected: dict[str, Status] = {}
    for ev in events:
        if ev.kind in kinds[check]:
            status = STATUS[assess_event(load_kb().xids, ev).severity]
            key = subject_of(ev)  # type: ignore[operator]
            expected[key] = max(expected.get(key, Status.PASS), status, key=ORDER.index)
    found = by_subject(run_check(root, check))
    assert expected and any(s is not Status.PASS for s in expected.values())
    for subject, status in expected.items():
        if status is Status.PASS:  # informational: counted, not reported alone
            assert subject not in found
        else:
            assert found[subject].status is status, subject

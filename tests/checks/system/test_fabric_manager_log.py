"""nv-fabricmanager's log pasted alone lies where the kernel log goes (commands/dmesg): its
NVSwitch errors are judged (gpu.sxid), and the checks of kernel records (panics, OOM kills,
segfaults, I/O errors, file-max) say the kernel log is not there, never "none in the log"."""

from __future__ import annotations

from pathlib import Path

import pytest

from dolmen.checks.model import Status
from dolmen.checks.recent import ABSENT_LOG
from tests.checks.helpers import run_check
from tests.conftest import make_tree, recording

FM_LOG = "fabric-manager/gpud__fabricmanager.log"
KERNEL_RECORDS = (
    "system.kernel_panic",
    "system.oom_kills",
    "system.segfaults",
    "system.file_max",
    "storage.io_errors",
)


@pytest.fixture
def pasted(tmp_path: Path) -> Path:
    partial = {"dolmen-snapshot.json": '{"partial": true}'}
    return make_tree(
        tmp_path / "t", files=partial, commands={"dmesg": recording(FM_LOG).read_text()}
    )


@pytest.mark.parametrize("check", KERNEL_RECORDS)
def test_no_kernel_record_in_it(pasted: Path, check: str) -> None:
    [f] = run_check(pasted, check)
    assert f.status is Status.UNKNOWN and "nv-fabricmanager's log" in f.summary
    assert f.remedy == ABSENT_LOG


def test_its_sxids_are_judged(pasted: Path) -> None:
    """'detected NVSwitch non-fatal error 12028 ... pci bus id 00000000:86:00.0'."""
    [f] = run_check(pasted, "gpu.sxid")
    assert (f.status, f.subject) == (Status.WARN, "pci:0000:86:00.0")

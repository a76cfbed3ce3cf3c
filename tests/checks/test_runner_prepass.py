"""The kernel log is collected before the checks, under its own limit (runner.PREPASS): a
log slower to read than one check may run is judged, not turned into errors."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

import pytest

from dolmen.checks import load_registry
from dolmen.checks.context import Context
from dolmen.checks.model import Status
from dolmen.checks.runner import CHECK_TIME_LIMIT, PREPASS, run_checks, run_one
from dolmen.facts import FactStore
from dolmen.host.tree import TreeHost
from tests.conftest import make_tree

LOG = "[ 5.0] blk_update_request: I/O error, dev sda, sector 2048 op 0x0:(READ)\n"


class SlowLog(FactStore):
    """A store whose kernel log takes longer to read than one check may run (a huge log)."""

    def _collect(self, name: str) -> Any:
        if name == "kernel_log":
            time.sleep(CHECK_TIME_LIMIT + 0.5)
        return super()._collect(name)


@pytest.mark.slow
def test_a_slow_kernel_log_is_read_before_the_checks(tmp_path: Path) -> None:
    assert PREPASS["kernel_log"] > CHECK_TIME_LIMIT * 10
    host = TreeHost(make_tree(tmp_path / "t", commands={"dmesg": LOG}))
    registry = load_registry()
    specs = [registry["storage.io_errors"], registry["system.file_max"]]
    findings = run_checks(Context(host, store=SlowLog(host)), specs)
    assert {f.check: f.status for f in findings} == {
        "storage.io_errors": Status.FAIL,  # judged: the disk's I/O error is found
        "system.file_max": Status.PASS,
    }
    # Inside one check's limit, as before the pre-pass, the same read was an error.
    (alone,) = run_one(Context(host, store=SlowLog(host)), registry["storage.io_errors"])
    assert alone.status is Status.ERROR and "ran over" in alone.summary


def test_disabled_checks_do_not_read_the_log(tmp_path: Path) -> None:
    host = TreeHost(make_tree(tmp_path / "t", commands={"dmesg": LOG}))
    store = SlowLog(host)
    spec = load_registry()["storage.io_errors"]
    (f,) = run_checks(Context(host, store=store), [spec], disabled=["storage"])
    assert f.status is Status.SKIP  # returned at once: no pre-pass for a disabled check

"""tuning.hugepages on a bundle without sysfs's huge page pools: nothing to advise on."""

from __future__ import annotations

from pathlib import Path

from dolmen.checks.model import Status
from tests.checks.helpers import run_check
from tests.conftest import make_tree


def test_hugepages_not_in_the_bundle(tmp_path: Path) -> None:
    [f] = run_check(make_tree(tmp_path / "e"), "tuning.hugepages")
    assert f.status is Status.SKIP and f.summary == "not in this bundle: sys/kernel/mm/hugepages"
    (tmp_path / "h/sys/kernel/mm/hugepages").mkdir(parents=True)
    [f] = run_check(tmp_path / "h", "tuning.hugepages")
    assert f.status is Status.PASS and f.summary == "no persistent huge pages reserved"

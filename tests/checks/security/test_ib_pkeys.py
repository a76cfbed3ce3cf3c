"""security.ib.pkeys on the scenario h100-ib-pkeys (tests/hosts): the fabric file named in
the site's thresholds, each InfiniBand port's table judged."""

from __future__ import annotations

from pathlib import Path

import pytest

from dolmen.checks.model import Status
from tests.checks.helpers import by_subject, run_check
from tests.hosts import scenarios

CHECK = "security.ib.pkeys"
GUIDS = [f'"0xa088c20300b1c2{n:02x}"' for n in (0, 1, 4, 5, 6, 7, 8, 9)]


@pytest.fixture(scope="module")
def node(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return scenarios.build("h100-ib-pkeys", tmp_path_factory.mktemp("node") / "tree")


def test_tables_judged(node: Path, tmp_path: Path) -> None:
    fabric = tmp_path / "fabric.toml"
    fabric.write_text(f"[tenants.research]\npkey = 0x0101\nmembers = [{', '.join(GUIDS)}]\n")
    found = by_subject(run_check(node, CHECK, fabric=str(fabric)))
    assert set(found) == {f"ib:mlx5_{n}/1" for n in (0, 1, 4, 5, 6, 7, 8, 9)}
    assert found["ib:mlx5_9/1"].status is Status.WARN
    assert "membership 0x7fff: full" in found["ib:mlx5_9/1"].summary
    assert found["ib:mlx5_8/1"].status is Status.WARN
    assert "missing 0x0101 (full)" in found["ib:mlx5_8/1"].summary
    assert found["ib:mlx5_0/1"].status is Status.PASS
    assert not any(f.gating for f in found.values())


def test_no_fabric_file_skips(node: Path) -> None:
    [f] = run_check(node, CHECK)
    assert f.status is Status.SKIP and "fabric" in f.summary


def test_a_broken_fabric_file_is_unknown(node: Path, tmp_path: Path) -> None:
    fabric = tmp_path / "fabric.toml"
    fabric.write_text("[tenants.research]\npkey = 0x7fff\n")
    [f] = run_check(node, CHECK, fabric=str(fabric))
    assert f.status is Status.UNKNOWN and "outside" in f.summary
    [f] = run_check(node, CHECK, fabric=str(tmp_path / "absent.toml"))
    assert f.status is Status.UNKNOWN and "no such" in f.summary

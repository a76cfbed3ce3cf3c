"""Baselines: captured from a known-good node, every deviation reported."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from dolmen.baseline import dump_baseline, load_baseline
from dolmen.checks.model import Level, Status
from dolmen.checks.suite import validate
from dolmen.cli.main import main
from dolmen.errors import InputError
from dolmen.host.tree import TreeHost
from tests.hosts import scenarios


@pytest.fixture
def node(tmp_path: Path) -> Path:
    return scenarios.build("h100-hgx-healthy", tmp_path / "node")


def _capture(tree: Path, out: Path) -> Path:
    assert main(["baseline", "capture", "--from", str(tree), "-o", str(out)]) == 0
    return out


def _findings(tree: Path, baseline: Path) -> dict[tuple[str, str], Status]:
    v = validate(
        TreeHost(tree), level=Level.QUICK, baseline=load_baseline(baseline), only=("baseline",)
    )
    return {(f.check, f.subject): f.status for f in v.findings}


def test_capture_has_no_identifiers(node: Path, tmp_path: Path) -> None:
    out = _capture(node, tmp_path / "b.json")
    text = out.read_text()
    doc = json.loads(text)
    assert doc["schema"] == "dolmen.baseline/1"
    assert len(doc["gpus"]) == 8 and doc["gpus"][0]["nvlinks"] == 18
    assert doc["driver_version"] == "580.105.08"
    assert "GPU-0000" not in text and "uuid" not in text and "serial" not in text


def test_the_node_matches_its_own_baseline(node: Path, tmp_path: Path) -> None:
    found = _findings(node, _capture(node, tmp_path / "b.json"))
    assert found and all(s is Status.PASS for s in found.values()), found


def test_every_deviation_is_reported(node: Path, tmp_path: Path) -> None:
    b = _capture(node, tmp_path / "b.json")
    xml = node / "commands/nvidia-smi%20-q%20-x"
    text = xml.read_text()
    blocks = list(re.finditer(r"<gpu id=.*?</gpu>", text, re.S))
    text = text[: blocks[7].start()] + text[blocks[7].end() :]  # GPU 0000:ca:00.0 gone
    text = text.replace(
        "<vbios_version>96.00.99.00.01</vbios_version>",
        "<vbios_version>96.00.61.00.01</vbios_version>",
        1,
    )
    xml.write_text(text)
    (node / "sys/bus/pci/devices/0000:64:00.0/max_link_width").write_text("8\n")
    nvlink = node / "commands/nvidia-smi%20nvlink%20-s"
    lines = nvlink.read_text().splitlines()
    nvlink.write_text("\n".join(line for line in lines if "Link 17:" not in line) + "\n")
    state = node / "sys/class/infiniband/mlx5_4/ports/1/rate"
    state.write_text("200 Gb/sec (4X HDR)\n")
    found = _findings(node, b)
    assert found[("baseline.gpus", "gpu:00000000:CA:00.0")] is Status.FAIL
    assert found[("baseline.gpus", "gpu:00000000:53:00.0")] is Status.WARN  # VBIOS
    assert found[("baseline.pcie", "gpu:00000000:64:00.0")] is Status.FAIL  # a GPU: gpu:
    assert found[("baseline.nvlink", "gpu:00000000:53:00.0")] is Status.FAIL
    assert found[("baseline.ib", "ib:mlx5_4/1")] is Status.FAIL
    assert found[("baseline.ib", "ib:mlx5_0/1")] is Status.PASS


def test_bad_baseline_files(tmp_path: Path) -> None:
    p = tmp_path / "b.json"
    with pytest.raises(InputError, match="no such baseline"):
        load_baseline(p)
    p.write_text("{not json")
    with pytest.raises(InputError, match="not a readable baseline"):
        load_baseline(p)
    p.write_text('{"schema": "other/1"}')
    with pytest.raises(InputError, match=r"not a dolmen\.baseline/1"):
        load_baseline(p)
    p.write_text('{"schema": "dolmen.baseline/1", "gpus": [{"bus": 1}]}')
    with pytest.raises(InputError, match="unexpected fields"):
        load_baseline(p)


def test_cli_bad_baseline_is_one_line(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    rc = main(["validate", "--from", str(tmp_path), "--baseline", str(tmp_path / "nope.json")])
    err = capsys.readouterr().err
    assert rc == 2 and err.startswith("dolmen: error:") and "no such baseline" in err


def test_dump_round_trip(node: Path, tmp_path: Path) -> None:
    b = load_baseline(_capture(node, tmp_path / "b.json"))
    again = tmp_path / "again.json"
    again.write_text(dump_baseline(b))
    assert load_baseline(again).gpus == b.gpus

"""interconnect.nvlink.state on the real nvlink -s recordings (A100, A10) and the H100 scenario."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from dolmen.checks import load_registry
from dolmen.checks.context import Context
from dolmen.checks.model import Finding, Status
from dolmen.checks.runner import run_one
from dolmen.host.tree import TreeHost
from tests.conftest import make_tree, recording
from tests.hosts import scenarios

CHECK = "interconnect.nvlink.state"
NVLINK = "commands/nvidia-smi%20nvlink%20-s"


def _run(root: Path) -> list[Finding]:
    return run_one(Context(TreeHost(root)), load_registry()[CHECK])


def _a100(tmp_path: Path, nvlink: str) -> list[Finding]:
    """The real A100-SXM4-80GB XML (one GPU) with an Azure nvlink -s block renumbered GPU 0."""
    xml = recording("nvidia-smi-xml/telegraf__a100-sxm4-v12.xml").read_text()
    text = re.sub(r"^GPU \d+:", "GPU 0:", nvlink, flags=re.M)
    root = make_tree(tmp_path, commands={"nvidia-smi -q -x": xml, "nvidia-smi nvlink -s": text})
    return _run(root)


@pytest.fixture
def h100(tmp_path: Path) -> Path:
    return scenarios.build("h100-hgx-healthy", tmp_path / "h100")


def test_good_a100_twelve_links_at_25(tmp_path: Path) -> None:
    good = recording("nvidia-smi-nvlink/azurehpc__good_nvlink_status_a100.txt").read_text()
    (f,) = _a100(tmp_path, good)
    assert f.status is Status.PASS and f.subject == "gpu:00000000:01:00.0"
    assert f.summary == "12/12 NVLinks up at 25 GB/s"
    assert f.evidence["expected_links"] == 12 and f.evidence["expected_speed_gbps"] == 25.0


def test_bad_a100_all_links_inactive_fails(tmp_path: Path) -> None:
    bad = recording("nvidia-smi-nvlink/azurehpc__bad_nvlink_status_a100.txt").read_text()
    (f,) = _a100(tmp_path, bad)
    assert f.status is Status.FAIL and "all NVLinks inactive (12 expected up)" in f.summary
    assert f.remedy and "nvidia-smi nvlink" in f.remedy


def test_a100_one_link_inactive_and_one_slow(tmp_path: Path) -> None:
    good = recording("nvidia-smi-nvlink/azurehpc__good_nvlink_status_a100.txt").read_text()
    edited = good.replace("Link 3: 25 GB/s", "Link 3: <inactive>").replace(
        "Link 7: 25 GB/s", "Link 7: 12.5 GB/s"
    )
    (f,) = _a100(tmp_path, edited)
    assert f.status is Status.FAIL
    assert f.evidence["down"] == ["3:inactive"] and f.evidence["slow"] == ["7:12.5 GB/s"]
    assert f.evidence["links_up"] == 11


def test_gpud_eight_a100_recording_first_gpu(tmp_path: Path) -> None:
    """gpud's 8x A100 capture: GPU 0's block joins the one-GPU XML by position."""
    text = recording("nvidia-smi-nvlink/gpud__nvidia-smi.nvlink.status.a100").read_text()
    (f,) = _a100(tmp_path, text.split("GPU 1:")[0])
    assert f.status is Status.PASS and f.evidence["links_up"] == 12


def test_a10_without_nvlink_is_skipped(tmp_path: Path) -> None:
    xml = recording("nvidia-smi-xml/telegraf__a10g.xml").read_text()
    empty = recording("nvidia-smi-nvlink/gpud__nvidia-smi.nvlink.status.a10").read_text()
    root = make_tree(tmp_path, commands={"nvidia-smi -q -x": xml, "nvidia-smi nvlink -s": empty})
    (f,) = _run(root)
    assert f.status is Status.SKIP and "without NVLink" in f.summary


def test_h100_scenario_eighteen_links(h100: Path) -> None:
    findings = _run(h100)
    assert len(findings) == 8
    assert all(f.status is Status.PASS for f in findings)
    assert findings[0].summary == "18/18 NVLinks up at 26.562 GB/s"
    assert findings[0].evidence["expected_speed_gbps"] == 25.0  # 900 GB/s / 18 / 2


def test_h100_link_missing_down_and_slow(h100: Path) -> None:
    path = h100 / NVLINK
    blocks = path.read_text().split("GPU ")
    blocks[3] = re.sub(r"\t Link 17: .*\n", "", blocks[3])  # GPU 2 lists 17 links
    blocks[5] = blocks[5].replace("Link 4: 26.562 GB/s", "Link 4: 13.281 GB/s")  # GPU 4
    blocks[8] = blocks[8].replace("Link 0: 26.562 GB/s", "Link 0: <inactive>")  # GPU 7
    path.write_text("GPU ".join(blocks))
    by = {f.subject: f for f in _run(h100)}
    assert by["gpu:00000000:75:00.0"].status is Status.FAIL
    assert "17 link(s) reported, the model has 18" in by["gpu:00000000:75:00.0"].summary
    assert by["gpu:00000000:97:00.0"].evidence["slow"] == ["4:13.281 GB/s"]
    assert by["gpu:00000000:CA:00.0"].evidence["down"] == ["0:inactive"]
    assert sum(f.status is Status.PASS for f in by.values()) == 5


def test_unreadable_nvlink_is_unknown(h100: Path) -> None:
    (h100 / NVLINK).unlink()
    (h100 / f"{NVLINK}.rc").write_text("9\n")
    (f,) = _run(h100)
    assert f.status is Status.UNKNOWN and f.subject == "host"
    assert "NVLink state unreadable" in f.summary


def test_no_gpu_is_skipped_by_the_framework(tmp_path: Path) -> None:
    (f,) = _run(make_tree(tmp_path))
    assert f.status is Status.SKIP and "no NVIDIA GPU" in f.summary


def _dcgm_block() -> str:
    text = recording("dcgm/issues__dcgmi-diag-excerpts.md").read_text()
    return text[text.index("+----------------------+") : text.index("dcgmi diag -r 2")]


def test_dcgmi_link_status_all_down_fails_on_both_gpus(tmp_path: Path) -> None:
    root = make_tree(tmp_path, commands={"dcgmi nvlink --link-status": _dcgm_block()})
    found = _run(root)
    assert [(f.subject, f.status) for f in found] == [
        ("gpu:0", Status.FAIL),
        ("gpu:1", Status.FAIL),
    ]
    assert "none up (18 Down)" in found[0].summary


def test_dcgmi_link_status_only_when_nvidia_smi_has_none(h100: Path) -> None:
    """nvidia-smi nvlink -s, where recorded, is read first (it has speeds)."""
    (h100 / "commands/dcgmi%20nvlink%20--link-status").write_text("gpuId 0:\n    D D\n")
    assert all(f.status is Status.PASS for f in _run(h100))

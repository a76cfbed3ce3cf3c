"""workload.nccl_allreduce, workload.storage_io and workload.dcgm_diag on results shaped as
the workloads return them (the judgement is under test here; tests/workloads run the
workloads themselves), with the real 8x H100 nvidia-smi capture for the GPU model."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from dolmen.checks import load_registry
from dolmen.checks.context import Context
from dolmen.checks.model import Finding, Status
from dolmen.checks.runner import run_one
from dolmen.config import Config
from dolmen.facts.dcgm import parse_dcgm_diag
from dolmen.host.tree import TreeHost
from dolmen.workloads.applicable import NotApplicable
from dolmen.workloads.collective import CollectiveResult, Point, Run, bandwidths
from dolmen.workloads.dcgm import DcgmResult
from dolmen.workloads.model import Unavailable
from dolmen.workloads.storage import MountResult, StorageResult
from tests.checks.gpu.trees import xml
from tests.checks.workload.test_checks import Done
from tests.conftest import make_tree
from tests.facts.test_dcgm import NEW


def _findings(
    tmp_path: Path, check: str, workloads: Any, nvsmi: str | None = None, **limits: Any
) -> list[Finding]:
    commands = {"nvidia-smi -q -x": nvsmi} if nvsmi else {}
    host = TreeHost(make_tree(tmp_path, {"etc/hostname": "n1\n"}, commands))
    config = Config(sections={"thresholds": {check: limits}}) if limits else None
    return run_one(Context(host, config=config, workloads=workloads), load_registry()[check])


def _sweep(device: str, world: int, busbw_at_1g: float, top: int = 1 << 30) -> CollectiveResult:
    # time such that busbw = busbw_at_1g: algbw = busbw / (2(n-1)/n)
    algbw = busbw_at_1g / (2 * (world - 1) / world)
    time_us = top / (algbw * 1e9) * 1e6
    points = [Point(8, 20.0, *bandwidths("all_reduce", 8, 20.0, world))]
    points.append(Point(top, time_us, *bandwidths("all_reduce", top, time_us, world)))
    backend = "nccl" if device == "cuda" else "gloo"
    gpus = tuple(range(world)) if device == "cuda" else ()
    return CollectiveResult(device, gpus, (Run("all_reduce", world, backend, tuple(points)),))


@pytest.mark.parametrize(
    ("busbw", "status", "words"),
    [
        (470.0, Status.PASS, "busbw 470 GB/s at 1 GiB (>= 460 GB/s for h100-sxm"),
        (300.0, Status.FAIL, "below the 460 GB/s expected of h100-sxm"),
    ],
)
def test_nccl_against_the_h100_figure(
    tmp_path: Path, busbw: float, status: Status, words: str
) -> None:
    (f,) = _findings(
        tmp_path, "workload.nccl_allreduce", Done(collective=_sweep("cuda", 8, busbw)), xml()
    )
    assert f.status is status and words in f.summary, f.summary
    assert f.evidence["world"] == 8 and f.evidence["model"] == "h100-sxm"


def test_nccl_site_figure_and_other_cases(tmp_path: Path) -> None:
    ok = Done(collective=_sweep("cuda", 8, 300.0))
    (f,) = _findings(
        tmp_path / "a", "workload.nccl_allreduce", ok, xml(), min_busbw_gbps={"h100": 250}
    )
    assert f.status is Status.PASS  # the site's own figure, matched by the KB id's start
    four = Done(collective=_sweep("cuda", 4, 470.0))
    (g,) = _findings(tmp_path / "b", "workload.nccl_allreduce", four, xml())
    assert g.status is Status.SKIP and "figure is for 8 GPUs" in g.summary
    short = Done(collective=_sweep("cuda", 8, 470.0, top=1 << 20))
    (h,) = _findings(tmp_path / "c", "workload.nccl_allreduce", short, xml())
    assert h.status is Status.UNKNOWN and "collective_s" in (h.remedy or "")
    (i,) = _findings(tmp_path / "d", "workload.nccl_allreduce", ok)  # no GPU inventory
    assert i.status is Status.SKIP and "no published figure" in i.summary


def test_nccl_on_cpu_is_measured_never_a_pass(tmp_path: Path) -> None:
    (f,) = _findings(tmp_path, "workload.nccl_allreduce", Done(collective=_sweep("cpu", 2, 1.0)))
    assert f.status is Status.SKIP and f.summary.startswith("measured on CPU")
    assert "2 gloo ranks" in f.summary


def test_nccl_not_run_says_why(tmp_path: Path) -> None:
    why = NotApplicable("a collective needs two GPUs or more; this run has 1")
    (f,) = _findings(tmp_path, "workload.nccl_allreduce", Done(collective=why))
    assert f.status is Status.SKIP and "two GPUs or more" in f.summary
    torchless = Done(collective=Unavailable("torch is not installed: pip install torch"))
    (u,) = _findings(tmp_path / "u", "workload.nccl_allreduce", torchless)
    assert u.status is Status.UNKNOWN and u.remedy == "pip install torch"  # should have run
    (g,) = _findings(tmp_path / "b", "workload.nccl_allreduce", None)
    assert g.status is Status.SKIP and "live host only" in g.summary


def _mount(point: str, read: float, write: float, **kw: Any) -> MountResult:
    return MountResult(point, "fio", 1 << 30, read, write, 9000.0, 8000.0, **kw)


def test_storage_against_site_figures(tmp_path: Path) -> None:
    result = StorageResult(
        (
            _mount("/raid", 20000.0, 12000.0),
            _mount("/scratch", 900.0, 800.0),
            _mount("/data", 500.0, 400.0, direct=False, note="O_DIRECT refused here: buffered"),
        ),
        {"/full": "/full: 0.10 GB free, 1.14 GB needed for a 1.07 GB test file"},
    )
    limits = {
        "min_seq_read_mbps": {"/raid": 15000, "*": 1000},
        "min_seq_write_mbps": {"/raid": 10000},
    }
    got = {
        f.subject: f
        for f in _findings(tmp_path, "workload.storage_io", Done(storage=result), **limits)
    }
    assert got["mount:/raid"].status is Status.PASS
    assert (
        got["mount:/scratch"].status is Status.FAIL
        and "read below 1000 MB/s" in got["mount:/scratch"].summary
    )
    assert got["mount:/data"].status is Status.FAIL and "(buffered)" in got["mount:/data"].summary
    assert got["mount:/full"].status is Status.SKIP and "GB free" in got["mount:/full"].summary


def test_storage_without_a_figure_is_measured_not_passed(tmp_path: Path) -> None:
    result = StorageResult((_mount("/raid", 20000.0, 12000.0),))
    (f,) = _findings(tmp_path, "workload.storage_io", Done(storage=result))
    assert f.status is Status.SKIP and "no site figure" in f.summary
    assert "read 20000 MB/s, write 12000 MB/s" in f.summary and f.evidence["engine"] == "fio"


def test_dcgm_live_run_judged_as_dcgm_judged(tmp_path: Path) -> None:
    result = DcgmResult(3, parse_dcgm_diag(json.dumps(NEW)), 1)
    got = {f.subject: f for f in _findings(tmp_path, "workload.dcgm_diag", Done(dcgm=result))}
    assert got["gpu:1"].status is Status.FAIL and "GPU 1 DBE" in got["gpu:1"].summary
    assert got["gpu:0"].status is Status.PASS


def test_dcgm_absent_unreadable_or_not_run(tmp_path: Path) -> None:
    missing = Done(dcgm=NotApplicable("dcgmi not installed: install NVIDIA DCGM"))
    (f,) = _findings(tmp_path / "a", "workload.dcgm_diag", missing)
    assert f.status is Status.SKIP and f.summary.startswith("dcgmi not installed")
    bad = Done(dcgm=DcgmResult(3, parse_dcgm_diag('{"DCGM Diagnostic": {"te'), 0))
    (g,) = _findings(tmp_path / "b", "workload.dcgm_diag", bad)
    assert g.status is Status.UNKNOWN and "malformed" in g.summary
    down = DcgmResult(
        3, parse_dcgm_diag(json.dumps({"DCGM Diagnostic": {"runtime_error": "No GPUs"}}))
    )
    (h,) = _findings(tmp_path / "c", "workload.dcgm_diag", Done(dcgm=down))
    assert h.status is Status.UNKNOWN and "No GPUs" in h.summary

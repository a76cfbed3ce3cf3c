"""The workload checks on GPU-shaped results (dataclasses as a GPU run returns them: the
judgement, not torch, is under test) and on a real CPU run (torch, tiny sizes)."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest

from dolmen.checks import load_registry
from dolmen.checks.context import Context
from dolmen.checks.model import Finding, Status
from dolmen.checks.runner import run_one
from dolmen.host.live import LiveHost
from dolmen.host.tree import TreeHost
from dolmen.workloads.gemm import GemmEntry, GemmResult
from dolmen.workloads.memory import GpuMemory, MemoryResult
from dolmen.workloads.model import Unavailable
from dolmen.workloads.session import Workloads
from tests.conftest import make_tree


class Done:
    """Stands in for a session whose workloads already ran (``Workloads.run``'s contract)."""

    def __init__(self, **results: Any) -> None:
        self.results = results

    def run(self, name: str) -> Any:
        got = self.results[name]
        if isinstance(got, Unavailable):
            raise got
        return got


def _findings(tmp_path: Path, check: str, workloads: Any) -> list[Finding]:
    host = TreeHost(make_tree(tmp_path, {"etc/hostname": "n1\n"}))
    return run_one(Context(host, workloads=workloads), load_registry()[check])


def _entry(
    gpu: int,
    tflops: float,
    *,
    dtype: str = "bf16",
    peak: float | None = 989.0,
    throttled: bool | None = False,
) -> GemmEntry:
    return GemmEntry(
        gpu,
        f"gpu:0000000{gpu}:19:00.0",
        dtype,
        tflops,
        peak,
        700.0,
        {"clocks.sm": (1980.0, 1755.0), "power.draw": (690.0,)},
        throttled,
    )


def _gemm(*entries: GemmEntry) -> GemmResult:
    return GemmResult("cuda", entries)


def test_gemm_fails_the_outlier_and_warns_the_throttled(tmp_path: Path) -> None:
    entries = [_entry(i, 700.0) for i in range(6)]
    entries += [_entry(6, 600.0), _entry(7, 700.0, throttled=True)]
    got = {f.subject: f for f in _findings(tmp_path, "workload.gemm", Done(gemm=_gemm(*entries)))}
    assert got["gpu:00000000:19:00.0"].status is Status.PASS
    assert "bf16 700.0 TFLOP/s = 71% of 989" in got["gpu:00000000:19:00.0"].summary
    assert "under load: 1755-1980 MHz, 690 W" in got["gpu:00000000:19:00.0"].summary
    assert got["gpu:00000006:19:00.0"].status is Status.FAIL
    assert "14% below the node's median" in got["gpu:00000006:19:00.0"].summary
    assert got["gpu:00000007:19:00.0"].status is Status.WARN
    assert "throttled under load" in got["gpu:00000007:19:00.0"].summary


def test_gemm_below_the_floor_fails_and_an_unknown_model_is_unknown(tmp_path: Path) -> None:
    low = _findings(tmp_path / "a", "workload.gemm", Done(gemm=_gemm(_entry(0, 400.0))))
    assert [f.status for f in low] == [Status.FAIL]
    assert "below the floor of 593.4" in low[0].summary
    odd = _findings(tmp_path / "b", "workload.gemm", Done(gemm=_gemm(_entry(0, 400, peak=None))))
    assert [f.status for f in odd] == [Status.UNKNOWN]


def test_a_dtype_that_could_not_run_is_unknown(tmp_path: Path) -> None:
    result = replace(_gemm(_entry(0, 700.0)), skipped=((0, "fp8", "RuntimeError: no fp8"),))
    got = _findings(tmp_path, "workload.gemm", Done(gemm=result))
    assert [f.status for f in got] == [Status.PASS, Status.UNKNOWN]
    assert got[1].subject == got[0].subject


def test_an_unavailable_workload_is_unknown_with_its_reason(tmp_path: Path) -> None:
    why = Unavailable("GPU 3 is in use by pid 1234 (python): --force to run anyway")
    for check in ("workload.gemm", "workload.memory_bandwidth", "workload.peer_bandwidth"):
        got = _findings(tmp_path / check, check, Done(gemm=why, memory=why))
        assert [(f.status, f.summary) for f in got] == [(Status.UNKNOWN, why.reason)]
        assert got[0].remedy == "--force to run anyway"


def test_a_bundle_skips_every_workload(tmp_path: Path) -> None:
    got = _findings(tmp_path, "workload.gemm", None)
    assert got[0].summary == "workloads run on the live host only: this is a bundle"


def _memory(*gpus: GpuMemory, peer: tuple[tuple[float | None, ...], ...] = ()) -> MemoryResult:
    ids = tuple(g.gpu for g in gpus if g.gpu is not None) if peer else ()
    return MemoryResult(
        "cuda", gpus, ids, peer, {g.gpu: "h100-sxm" for g in gpus if g.gpu is not None}
    )


GEN5 = {"gen": 5, "width": 16, "gen_max": 5, "width_max": 16}


def _gpu(
    i: int, d2d: float = 3000.0, h2d: float = 53.0, pcie: dict[str, int] | None = GEN5
) -> GpuMemory:
    return GpuMemory(i, f"gpu:{i}", d2d, h2d, h2d, 3350.0, pcie)


def test_memory_bandwidth_against_the_published_figure(tmp_path: Path) -> None:
    result = _memory(_gpu(0), _gpu(1), _gpu(2, d2d=2500.0))
    got = {
        f.subject: f for f in _findings(tmp_path, "workload.memory_bandwidth", Done(memory=result))
    }
    assert got["gpu:0"].status is Status.PASS and "= 90% of 3350" in got["gpu:0"].summary
    assert (
        got["gpu:2"].status is Status.FAIL and "below the floor of 2,680.0" in got["gpu:2"].summary
    )


def test_pcie_downtrained_under_load_fails(tmp_path: Path) -> None:
    slow = {"gen": 4, "width": 16, "gen_max": 5, "width_max": 16}
    result = _memory(_gpu(0), _gpu(1, pcie=slow), _gpu(2, pcie=None))
    got = {
        f.subject: f for f in _findings(tmp_path, "workload.pcie_bandwidth", Done(memory=result))
    }
    assert got["gpu:0"].status is Status.PASS
    assert got["gpu:0"].summary.startswith("Gen5 x16 (63.0 GB/s raw): h2d 53.0 GB/s")
    assert got["gpu:1"].status is Status.FAIL
    assert "link downtrained: Gen4 under load, the link can do Gen5" in got["gpu:1"].summary
    assert got["gpu:2"].status is Status.UNKNOWN
    assert "could not be read under load" in got["gpu:2"].summary


def test_peer_bandwidth_one_gpu_skips_and_an_outlier_pair_fails(tmp_path: Path) -> None:
    one = _findings(tmp_path / "a", "workload.peer_bandwidth", Done(memory=_memory(_gpu(0))))
    assert [(f.status, f.summary) for f in one] == [
        (Status.SKIP, "one GPU: no pair to copy between")
    ]
    peer = ((None, 380.0, 380.0), (380.0, None, 200.0), (380.0, 380.0, None))
    result = _memory(_gpu(0), _gpu(1), _gpu(2), peer=peer)
    got = {
        f.subject: f
        for f in _findings(tmp_path / "b", "workload.peer_bandwidth", Done(memory=result))
    }
    assert got["gpu:1"].status is Status.FAIL
    assert "slowest pair to GPU 2 over unknown: 200.0 GB/s" in got["gpu:1"].summary
    # no topo -m in this tree: no path, no absolute floor, so a pair at its peers' rate is
    # unknown, never pass
    assert got["gpu:0"].status is Status.UNKNOWN


@pytest.fixture(scope="module")
def cpu_run() -> Workloads:
    pytest.importorskip("torch", reason="torch is not installed (scripts/ci: torch==2.13.0+cpu)")
    session = Workloads(LiveHost(), device="cpu", smoke=True)
    session.prepare(["gemm", "memory"])  # as the suite does: before the checks' time limit
    return session


@pytest.mark.parametrize(
    ("check", "words"),
    [
        ("workload.gemm", "fp32"),
        ("workload.memory_bandwidth", "device copy"),
        ("workload.pcie_bandwidth", "no device link"),
        ("workload.peer_bandwidth", "no GPU pair"),
    ],
)
def test_a_real_cpu_run_is_measured_never_judged_healthy(
    check: str, words: str, cpu_run: Workloads, tmp_path: Path
) -> None:
    got = _findings(tmp_path, check, cpu_run)
    assert got and all(f.status is Status.SKIP for f in got)
    assert all(f.summary.startswith("measured on CPU, no GPU threshold") for f in got)
    assert words in got[0].summary

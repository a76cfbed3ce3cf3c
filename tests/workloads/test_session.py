"""``Workloads``: budgets from the site config, one run per name, Unavailable and Ctrl-C."""

from __future__ import annotations

from pathlib import Path

import pytest

from dolmen import workloads
from dolmen.config import WORKLOAD_NAMES, ConfigError, parse_config
from dolmen.host.live import LiveHost
from dolmen.host.tree import TreeHost
from dolmen.workloads.model import Aborted, Unavailable
from dolmen.workloads.session import BUDGETS, Workloads
from tests.conftest import make_tree
from tests.workloads import sample


@pytest.fixture
def runners(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(workloads.RUNNERS, "sample", "tests.workloads.sample:run")
    monkeypatch.setitem(workloads.RUNNERS, "ctrl_c", "tests.workloads.sample:interrupted")
    monkeypatch.setitem(workloads.RUNNERS, "absent", "dolmen.workloads.no_such_module:run")
    sample.CALLS.clear()


def test_config_and_runners_name_the_same_workloads() -> None:
    assert tuple(workloads.RUNNERS) == WORKLOAD_NAMES == tuple(BUDGETS)


def test_budgets_come_from_the_site_config_per_gpu_or_in_all() -> None:
    config = parse_config("[workloads]\ngemm_s = 10\nstorage_s = 5.5\n")
    ws = Workloads(LiveHost(), config, device="cuda", gpus=range(8))
    assert ws.budget("gemm") == 80.0  # per GPU
    assert ws.budget("storage") == 5.5  # in all
    assert ws.budget_total() == 80 + 8 * 15 + 15 + 5.5 + 90
    assert ws.announce(["gemm"]).startswith("full tier: about 80 s on 8 GPU(s) (gemm)")
    bench = Workloads(LiveHost(), config, device="cpu", label="bench")
    assert bench.announce(["gemm"]).startswith("bench: about 10 s on the CPU (gemm)")


def test_default_budgets_keep_one_gpu_under_three_minutes() -> None:
    one = Workloads(LiveHost(), device="cuda", gpus=[0])
    assert one.budget_total() == 170 < 180
    # the line printed before the run gives the exact sum (docs/validate-full.md's table)
    assert one.announce() == (
        "full tier: about 3 min on 1 GPU(s) (gemm, memory, collective, storage, dcgm); "
        "budgets 170 s in all; Ctrl-C stops it"
    )
    assert Workloads(LiveHost(), device="cuda", gpus=range(8)).budget_total() == 485


def test_dcgm_budget_follows_its_level_and_counts_only_on_the_gpus() -> None:
    long = Workloads(LiveHost(), parse_config("[workloads]\ndcgm_level = 3\n"), device="cuda")
    assert long.budget("dcgm") == 1500 and long.request("dcgm").dcgm_level == 3
    cpu = Workloads(LiveHost(), device="cpu")
    assert cpu.budget_total() == cpu.budget_total(["gemm", "memory", "collective", "storage"])
    # the line before a CPU run says DCGM is not part of it, rather than listing it
    assert cpu.announce() == (
        "full tier: about 80 s on the CPU (gemm, memory, collective, storage; dcgm: GPUs only); "
        "budgets 80 s in all; Ctrl-C stops it"
    )


@pytest.mark.parametrize(("device", "eta"), [("cpu", 15.0), ("cuda", 15.0 + 90.0)])
def test_the_eta_counts_dcgm_only_where_it_runs(
    monkeypatch: pytest.MonkeyPatch, device: str, eta: float
) -> None:
    """Half of gemm's 30 s left, then DCGM's 90 s on the GPUs only: a CPU run's ETA once
    said 1:54 for a tier of 80 s."""
    for name in ("gemm", "dcgm"):  # the budgets are by name; nothing real runs
        monkeypatch.setitem(workloads.RUNNERS, name, "tests.workloads.sample:run")
    seen: list[tuple[str, float, float | None]] = []
    ws = Workloads(LiveHost(), device=device, gpus=[0], progress=lambda *a: seen.append(a))
    ws.prepare(["gemm", "dcgm"])
    assert seen[0] == ("sample", 0.5, pytest.approx(eta))


@pytest.mark.parametrize(
    ("text", "error"),
    [
        ("[workloads]\ngemm_s = 0\n", "gemm_s must be above 0"),
        ("[workloads]\ngemm_s = 'long'\n", "gemm_s must be int or float"),
        ("[workloads]\ndevice = 'tpu'\n", "device must be one of cpu, cuda"),
        ("[workloads]\ngemm = 3\n", "unknown key 'gemm' in [workloads]"),
        ("[workloads]\nscratch = ['']\n", "scratch must be a list of folder paths"),
        ("[workloads]\ndcgm_level = 5\n", "dcgm_level must be at least 1 and at most 4"),
    ],
)
def test_bad_workload_settings_are_refused_at_load(text: str, error: str) -> None:
    with pytest.raises(ConfigError, match=error.replace("[", r"\[").replace("]", r"\]")):
        parse_config(text)


@pytest.mark.usefixtures("runners")
def test_each_workload_runs_once_and_its_progress_reaches_the_sink() -> None:
    seen: list[tuple[str, float, float | None]] = []
    ws = Workloads(LiveHost(), smoke=True, progress=lambda *a: seen.append(a))
    assert ws.run("sample") == ws.run("sample") == {"budget_s": 0.05}
    assert len(sample.CALLS) == 1
    assert seen == [("sample", 0.5, pytest.approx(0.025))]
    assert ws.results() == {"sample": {"budget_s": 0.05}}


@pytest.mark.usefixtures("runners")
def test_unavailable_is_remembered_and_named() -> None:
    ws = Workloads(LiveHost(), device="cuda", gpus=[0])
    for _ in range(2):
        with pytest.raises(Unavailable, match="no GPU in the sample workload"):
            ws.run("sample")
    assert len(sample.CALLS) == 1
    with pytest.raises(Unavailable, match="absent workload is not in this build"):
        ws.run("absent")
    with pytest.raises(Unavailable, match="no workload named 'nope'"):
        ws.run("nope")
    assert ws.errors()["sample"] == "no GPU in the sample workload"


@pytest.mark.usefixtures("runners")
def test_a_bundle_runs_no_workload(tmp_path: Path) -> None:
    ws = Workloads(TreeHost(make_tree(tmp_path, {"etc/hostname": "x\n"})))
    with pytest.raises(Unavailable, match="workloads run on the live host only: this is a bundle"):
        ws.run("sample")
    assert sample.CALLS == []


@pytest.mark.usefixtures("runners")
def test_after_ctrl_c_nothing_else_starts() -> None:
    lines: list[str] = []
    ws = Workloads(LiveHost(), smoke=True, notify=lines.append)
    with pytest.raises(Aborted, match="interrupted during ctrl_c"):
        ws.prepare(["ctrl_c"])
    with pytest.raises(Aborted):
        ws.run("sample")
    assert sample.CALLS == []
    assert lines == [
        "full tier: about 1 s on the CPU (ctrl_c); budgets 0.05 s in all; Ctrl-C stops it"
    ]

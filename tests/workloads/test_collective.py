"""The collective workload: nccl-tests' busbw formulas (a table), the size sweep, and real
runs of two gloo ranks on the CPU: a smoke sweep, a hard deadline and a Ctrl-C, each
leaving no rank behind. No mock of torch: the ranks are real processes."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from dolmen.workloads import collective
from dolmen.workloads.model import Request, Unavailable

pytest.importorskip("torch")

ROOT = Path(__file__).resolve().parents[2]


@pytest.mark.parametrize(
    ("op", "world", "factor"),
    [
        ("all_reduce", 1, 0.0),
        ("all_reduce", 2, 1.0),
        ("all_reduce", 4, 1.5),
        ("all_reduce", 8, 1.75),  # 2(n-1)/n
        ("all_gather", 2, 0.5),
        ("all_gather", 8, 0.875),  # (n-1)/n
    ],
)
def test_bus_factor_is_nccl_tests(op: str, world: int, factor: float) -> None:
    assert collective.bus_factor(op, world) == pytest.approx(factor)


def test_bandwidths_from_bytes_and_time() -> None:
    # 1 GiB all_reduce in 5 ms on 8 GPUs: algbw 214.7 GB/s, busbw 375.8 GB/s.
    algbw, busbw = collective.bandwidths("all_reduce", 1 << 30, 5000.0, 8)
    assert algbw == pytest.approx(214.748, rel=1e-4)
    assert busbw == pytest.approx(algbw * 1.75)


@pytest.mark.parametrize(
    ("call", "match"),
    [
        (lambda: collective.bus_factor("broadcast", 2), "valid ops: all_reduce, all_gather"),
        (lambda: collective.bus_factor("all_reduce", 0), "at least 1"),
        (lambda: collective.bandwidths("all_reduce", 8, 0.0, 2), "positive"),
    ],
)
def test_bad_arguments_name_the_choices(call: object, match: str) -> None:
    with pytest.raises(ValueError, match=match):
        call()  # type: ignore[operator]


def test_sizes_for_all_gather_split_into_whole_shares() -> None:
    full = collective.FULL_SIZES
    assert full[0] == 8 and full[-1] == 1 << 30 and len(full) == 28
    assert collective.sizes_for("all_reduce", 8, (8, 16)) == [8, 16]
    assert collective.sizes_for("all_gather", 8, (8, 16, 32, 64)) == [32, 64]
    assert collective.sizes_for("all_gather", 3, (8, 16, 24)) == [12, 24]


def test_plan_refuses_one_gpu_and_unknown_devices() -> None:
    with pytest.raises(Unavailable, match="two GPUs or more; this run has 1"):
        collective.plan(Request(device="cuda", gpus=(0,)))
    with pytest.raises(Unavailable, match="valid devices: cpu, cuda"):
        collective.plan(Request(device="tpu"))
    world, backend, gpus, sizes = collective.plan(Request(device="cuda", gpus=(0, 1, 2, 3)))
    assert (world, backend, gpus, sizes[-1]) == (4, "nccl", (0, 1, 2, 3), 1 << 30)
    assert collective.plan(Request(device="cpu"))[3][-1] == collective.CPU_MAX_BYTES


def _ranks_of(pid: int) -> list[int]:
    """Live spawned children of ``pid`` (multiprocessing's spawn_main), zombies left out."""
    out = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            stat = Path(f"/proc/{entry}/stat").read_text()
            cmd = Path(f"/proc/{entry}/cmdline").read_bytes()
        except OSError:
            continue
        fields = stat.rsplit(")", 1)[1].split()
        if int(fields[1]) == pid and fields[0] != "Z" and b"spawn_main" in cmd:
            out.append(int(entry))
    return out


def _gone(pids: list[int]) -> bool:
    for pid in pids:
        try:
            state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
        except OSError:
            continue
        if state != "Z":
            return False
    return True


def test_smoke_sweep_on_two_gloo_ranks() -> None:
    seen: list[float] = []
    request = Request(
        device="cpu", smoke=True, budget_s=60, progress=lambda _l, d, _e: seen.append(d)
    )
    result = collective.run(request)
    assert [r.op for r in result.runs] == ["all_reduce", "all_gather"]
    for r in result.runs:
        assert (r.world, r.backend) == (2, "gloo")
        assert [p.bytes for p in r.points] == collective.sizes_for(r.op, 2, collective.SMOKE_SIZES)
        for p in r.points:
            assert p.time_us > 0
            assert p.busbw_gbps == pytest.approx(p.algbw_gbps * collective.bus_factor(r.op, 2))
    assert seen[-1] == 1.0 and result.stopped is None
    doc = result.to_json()
    assert doc["runs"][0]["points"][0].keys() == {"bytes", "time_us", "algbw_gbps", "busbw_gbps"}
    assert _ranks_of(os.getpid()) == []


@pytest.mark.slow
def test_the_full_sweep_stops_within_its_budget() -> None:
    """The full CPU sweep (8 B .. 64 MiB) on a 6 s budget once took about 10 s: the budget
    began at the rendezvous, after seconds of spawning and importing torch, and a size
    started whenever the clock had not yet passed, however long it would take. The budget
    now counts from the start and a size runs only if it would end in time."""
    budget = 6.0
    t0 = time.monotonic()
    result = collective.run(Request(device="cpu", budget_s=budget))
    took = time.monotonic() - t0
    assert took < budget + 1.0, f"took {took:.1f} s of a {budget:g} s budget"
    assert [r.op for r in result.runs] == ["all_reduce", "all_gather"]
    assert all(len(r.points) >= 2 for r in result.runs)  # each op measured beyond its first
    # what it did not reach, it names
    assert result.stopped is not None and result.stopped.startswith("budget reached before")
    assert _ranks_of(os.getpid()) == []


def test_hard_deadline_ends_every_rank() -> None:
    # A budget of nothing and a grace shorter than torch's import: killed while starting.
    t0 = time.monotonic()
    with pytest.raises(Unavailable, match="did not finish within its budget"):
        collective.run(Request(device="cpu", smoke=True, budget_s=0.0), grace_s=0.5)
    assert time.monotonic() - t0 < 20
    assert _ranks_of(os.getpid()) == []


def _sigint_default() -> None:
    """In the child, before exec: SIGINT back to its default, so Python turns it into
    KeyboardInterrupt (a shell's background job inherits it ignored)."""
    signal.signal(signal.SIGINT, signal.SIG_DFL)


SCRIPT = """
import sys
from dolmen.workloads import collective
from dolmen.workloads.model import Aborted, Request
if __name__ == "__main__":
    try:
        collective.run(Request(device="cpu", budget_s=600, progress=lambda *a: print("p", flush=True)))
    except Aborted as e:
        print("aborted:", e, flush=True)
        sys.exit(7)
"""


def test_ctrl_c_ends_every_rank(tmp_path: Path) -> None:
    script = tmp_path / "sweep.py"
    script.write_text(SCRIPT)
    env = {**os.environ, "PYTHONPATH": str(ROOT / "src")}
    proc = subprocess.Popen(
        [sys.executable, str(script)],
        stdout=subprocess.PIPE,
        text=True,
        env=env,
        preexec_fn=_sigint_default,
    )
    try:
        assert proc.stdout is not None
        assert proc.stdout.readline().strip() == "p"  # the ranks met and measured a size
        ranks = _ranks_of(proc.pid)
        assert len(ranks) == 2
        proc.send_signal(signal.SIGINT)
        rc = proc.wait(timeout=30)
        assert rc == 7, proc.stdout.read()
        deadline = time.monotonic() + 10
        while not _gone(ranks) and time.monotonic() < deadline:
            time.sleep(0.1)
        assert _gone(ranks)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()

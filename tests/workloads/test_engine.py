"""The engine's pure parsers and the busy-GPU guard, on recorded nvidia-smi answers."""

from __future__ import annotations

from pathlib import Path

import pytest

from dolmen.host.tree import TreeHost
from dolmen.workloads.engine import (
    APPS_ARGV,
    INDEX_ARGV,
    busy,
    guard,
    parse_apps,
    parse_bus_index,
)
from dolmen.workloads.model import Request, Unavailable
from tests.conftest import make_tree

INDEX = "0, 00000000:19:00.0\n1, 00000000:3B:00.0\n"


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        (INDEX, {"00000000:19:00.0": 0, "00000000:3B:00.0": 1}),
        ("0, 00000000:19:00.0", {"00000000:19:00.0": 0}),  # no final newline
        ("0, 00000000:19:", {"00000000:19:": 0}),  # truncated: kept as printed
        ("", {}),
        ("No devices were found\n", {}),
        ("x, 00000000:19:00.0\n0,\n,,,\n\x00\xff", {}),  # junk and hostile
    ],
)
def test_parse_bus_index(text: str, expected: dict[str, int]) -> None:
    assert parse_bus_index(text) == expected


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        (
            "1234, /usr/bin/python3, 00000000:19:00.0\n",
            [(1234, "/usr/bin/python3", "00000000:19:00.0")],
        ),
        (  # a name with commas: pid first, bus id last
            "77, python train.py --lr=1,2, 00000000:3b:00.0",
            [(77, "python train.py --lr=1,2", "00000000:3B:00.0")],
        ),
        ("No running processes found\n", []),
        ("", []),
        ("12, python", []),  # truncated
        ("abc, python, 00000000:19:00.0\n[N/A], x, y", []),
    ],
)
def test_parse_apps(text: str, expected: list[tuple[int, str, str]]) -> None:
    assert parse_apps(text) == expected


def _host(tmp_path: Path, apps: str | tuple[str, int] | None) -> TreeHost:
    commands: dict[str, str | tuple[str, int]] = {" ".join(INDEX_ARGV): INDEX}
    if apps is not None:
        commands[" ".join(APPS_ARGV)] = apps
    return TreeHost(make_tree(tmp_path, {"etc/hostname": "n1\n"}, commands))


def test_a_gpu_another_process_uses_is_refused_unless_forced(tmp_path: Path) -> None:
    host = _host(tmp_path, "4242, /opt/conda/bin/python -m train, 00000000:3B:00.0\n")
    assert busy(host, (0, 1), me=1) == {1: "pid 4242 (python)"}
    with pytest.raises(Unavailable) as e:
        guard(host, Request(device="cuda", gpus=(0, 1)))
    assert e.value.reason == "GPU 1 is in use by pid 4242 (python): --force to run anyway"
    guard(host, Request(device="cuda", gpus=(0, 1), force=True))
    guard(host, Request(device="cuda", gpus=(0,)))  # GPU 1 is not asked for


def test_our_own_process_does_not_count(tmp_path: Path) -> None:
    host = _host(tmp_path, "99, python, 00000000:19:00.0\n")
    assert busy(host, (0, 1), me=99) == {}


def test_an_unreadable_process_list_is_no_proof_the_gpus_are_free(tmp_path: Path) -> None:
    for apps in (None, ("Failed to initialize NVML: Driver/library version mismatch", 9)):
        host = _host(tmp_path / str(apps is None), apps)
        with pytest.raises(Unavailable, match="could not tell whether the GPUs are free"):
            guard(host, Request(device="cuda", gpus=(0,)))


def test_the_cpu_needs_no_guard(tmp_path: Path) -> None:
    guard(_host(tmp_path, None), Request(device="cpu"))


@pytest.mark.parametrize("seconds", [0.5, 1.5])
def test_the_timed_loop_ends_within_its_budget(seconds: float) -> None:
    """Its warm-up once came on top of the budget and its last batch ran whole, up to a
    fifth of the budget past it: a CPU matmul loop now ends within its seconds, bar one
    iteration (a few milliseconds here; the margin is for a loaded machine)."""
    torch = pytest.importorskip("torch", reason="torch is not installed (torch==2.13.0+cpu)")
    import time

    from dolmen.workloads.engine import timed

    a = torch.rand(128, 128)
    torch.mm(a, a)  # torch's first call sets up its threads: once per process, not a step
    threads = torch.get_num_threads()
    torch.set_num_threads(1)  # OpenMP threads on 2 shared cores stall for seconds at random
    try:
        t0 = time.monotonic()
        iters, elapsed = timed(
            lambda: torch.mm(a, a),
            torch=torch,
            device="cpu",
            seconds=seconds,
            label="t",
            progress=lambda *_: None,
        )
        took = time.monotonic() - t0
    finally:
        torch.set_num_threads(threads)
    assert iters >= 3 and 0 < elapsed <= took
    assert took < seconds + 0.25, f"took {took:.2f} s of {seconds:g} s"

"""The NVML sampler (host/gpu/nvml_sampler.py): rows in nvidia-smi's sample model from a
stand-in libnvidia-ml (no GPU here), the worker's stream and its end on a closed pipe, the
parent's reader on a real pipe, and the reasons it gives where NVML cannot sample."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from dolmen.host.gpu import nvml_sampler
from dolmen.host.gpu.nvml_sampler import (
    NvmlStream,
    open_sampler,
    parse_line,
    sample_row,
    stream,
    supports,
)
from tests.host.gpu.test_read import FakeNvml

GEMM = ("index", "clocks.sm", "power.draw", "temperature.gpu", "clocks_event_reasons.active")
LINK = ("index", "pcie.link.gen.current", "pcie.link.width.current")


class Loaded(FakeNvml):
    """FakeNvml with the calls the sampler makes: an H200 under load (the values of the
    nvidia_gpu_exporter H200 capture's load section: 1980 MHz, 627.40 W, 52 C)."""

    def nvmlDeviceGetClockInfo(self, h: object, clock: int) -> int:
        assert clock == 1  # NVML_CLOCK_SM
        return 1980

    def nvmlDeviceGetPowerUsage(self, h: object) -> int:
        return 627400

    def nvmlDeviceGetTemperature(self, h: object, sensor: int) -> int:
        assert sensor == 0  # NVML_TEMPERATURE_GPU
        return 52

    def nvmlDeviceGetCurrPcieLinkGeneration(self, h: object) -> int:
        return 5

    def nvmlDeviceGetCurrPcieLinkWidth(self, h: object) -> int:
        return 16


def test_a_row_is_what_nvidia_smi_prints() -> None:
    lib = Loaded()
    row = sample_row(lib, lib.nvmlDeviceGetHandleByIndex(3), 3, GEMM)
    # FakeNvml's event reasons are 0x1 | 0x4 (idle and the SW power cap)
    assert row == {
        "index": "3",
        "clocks.sm": "1980",
        "power.draw": "627.40",
        "temperature.gpu": "52",
        "clocks_event_reasons.active": "0x0000000000000005",
    }


def test_what_nvml_does_not_give_is_none() -> None:
    class Older(Loaded):
        nvmlDeviceGetClockInfo = None  # an nvidia-ml-py without the call

    lib = Older(fail={"nvmlDeviceGetPowerUsage": 3})  # NVML_ERROR_NOT_SUPPORTED
    row = sample_row(lib, ("handle", 0), 0, GEMM)
    assert row["clocks.sm"] is None and row["power.draw"] is None
    assert row["temperature.gpu"] == "52"


def test_the_older_throttle_reasons_call_answers_too() -> None:
    class Old(Loaded):
        nvmlDeviceGetCurrentClocksEventReasons = None  # type: ignore[assignment]

        def nvmlDeviceGetCurrentClocksThrottleReasons(self, h: object) -> int:
            return 0x40

    row = sample_row(Old(), ("handle", 0), 0, ("clocks_throttle_reasons.active",))
    assert row == {"clocks_throttle_reasons.active": "0x0000000000000040"}


@pytest.mark.parametrize(
    ("fields", "ok"),
    [(GEMM, True), (LINK, True), (("index", "clocks.sm", "fan.speed"), False), ((), True)],
)
def test_supports_names_only_fields_with_a_reader(fields: tuple[str, ...], ok: bool) -> None:
    assert supports(fields) is ok


def test_the_stream_says_ready_then_rows_until_the_pipe_closes() -> None:
    lines: list[str] = []

    def write(text: str) -> None:
        if len(lines) == 4:
            raise BrokenPipeError
        lines.append(text)

    lib = Loaded()
    stream(lib, 0, LINK, 0.0, write)
    assert lines[0] == "ready\n"
    assert [json.loads(x) for x in lines[1:]] == [
        {"index": "0", "pcie.link.gen.current": "5", "pcie.link.width.current": "16"}
    ] * 3
    assert lib.shut  # nvmlShutdown on the way out


def test_the_stream_ends_when_its_parent_is_gone_or_its_time_is_up() -> None:
    lines: list[str] = []
    stream(Loaded(), 0, LINK, 0.0, lines.append, alive=lambda: len(lines) < 3)
    assert len(lines) == 3
    lines.clear()
    stream(Loaded(), 0, LINK, 0.0, lines.append, limit_s=0.0)
    assert lines == ["ready\n"]


def test_a_library_that_does_not_start_is_one_error_line() -> None:
    lines: list[str] = []
    stream(Loaded(fail={"nvmlInit": 9}), 0, LINK, 0.0, lines.append)  # DRIVER_NOT_LOADED
    assert len(lines) == 1 and lines[0].startswith("error not loaded: ")


@pytest.mark.parametrize(
    ("line", "row"),
    [
        (b'{"index": "0", "clocks.sm": null}', {"index": "0", "clocks.sm": None}),
        (b'{"power.draw": 627.4}', {"power.draw": None}),  # not nvidia-smi's text: dropped
        (b"[1, 2]", None),
        (b"ready", None),
        (b'{"index": "0"', None),  # cut off
        (b"\xff\xfe", None),
    ],
)
def test_parse_line(line: bytes, row: dict[str, str | None] | None) -> None:
    assert parse_line(line) == row


def test_the_reader_takes_rows_from_a_real_pipe_and_ends_the_worker() -> None:
    script = (
        "import json, sys, time\n"
        "for i in range(3):\n"
        "    sys.stdout.write(json.dumps({'index': '0', 'clocks.sm': str(1900 + i)}) + '\\n')\n"
        'sys.stdout.write(\'{"index": "0", "clocks.sm": "1\')\n'  # a row cut mid-way
        "sys.stdout.flush()\n"
        "time.sleep(60)\n"
    )
    proc = subprocess.Popen([sys.executable, "-c", script], stdout=subprocess.PIPE)
    got = NvmlStream(proc)
    rows: list[dict[str, str | None]] = []
    try:
        while len(rows) < 3:
            more = got.read(timeout=10.0)
            assert more is not None
            rows += more
    finally:
        got.close()
    assert [r["clocks.sm"] for r in rows] == ["1900", "1901", "1902"]
    assert proc.poll() is not None  # ended and reaped


def test_a_recorded_host_is_not_sampled_through_nvml() -> None:
    why = open_sampler("tree", 0, GEMM, 0.5)
    assert why == "not sampled on a recorded host: NVML reads the machine dolmen runs on"
    assert open_sampler("live", 0, ("index", "fan.speed"), 0.5) == (
        "not supported: no NVML reader for fan.speed"
    )


def test_without_libnvidia_ml_the_live_host_says_why() -> None:
    got = open_sampler("live", 0, GEMM, 0.5)
    if not isinstance(got, str):  # pragma: no cover - a machine with a driver
        got.close()
        pytest.skip("libnvidia-ml loads here: the GPU path is exercised on a GPU")
    assert got.startswith("not loaded: ")


def test_the_worker_process_says_why_nvml_does_not_start() -> None:
    """The worker itself (``python -m``), on this machine: no driver, one error line."""
    if not nvml_sampler._load():  # pragma: no cover - a machine with a driver
        pytest.skip("libnvidia-ml loads here")
    out = subprocess.run(
        [sys.executable, "-m", "dolmen.host.gpu.nvml_sampler", "0", "0.1", ",".join(GEMM)],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert out.returncode == 0 and out.stdout.startswith("error not loaded: "), out

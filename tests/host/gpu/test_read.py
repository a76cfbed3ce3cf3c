"""read_gpus / Host.gpus: tree hosts, the live host (no GPU here), NVML's field table."""

from __future__ import annotations

import json
import shutil
import stat
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pynvml
import pytest

from dolmen.host import RunStatus, open_host
from dolmen.host.command import CommandResult
from dolmen.host.gpu import GPU_LOST, NO_PERMISSION, NOT_SUPPORTED, Gpu
from dolmen.host.gpu.build import build, model_keys
from dolmen.host.gpu.nvml import NOT_READ, read_nvml
from dolmen.host.gpu.nvml_fields import FIELDS, NOT_READ_KEYS
from dolmen.host.gpu.read import read_gpus
from tests.conftest import make_tree, recording

H100 = "nvidia-smi-xml/k8s-test-infra__hardware__qx-h100.xml"
NO_DRIVER = (
    "NVIDIA-SMI has failed because it couldn't communicate with the NVIDIA driver. "
    "Make sure that the latest NVIDIA driver is installed and running.\n"
)


def test_tree_host_reads_the_recorded_command(tmp_path: Path) -> None:
    text = recording(H100).read_text()
    host = open_host(make_tree(tmp_path, commands={"nvidia-smi -q -x": text}))
    inv = host.gpus
    assert inv is host.gpus  # cached: one nvidia-smi per run
    assert (inv.source, inv.error, len(inv.gpus)) == ("nvidia-smi", None, 8)
    assert inv.attempts == {}  # no NVML on a recorded host


def test_tree_host_without_the_command(tmp_path: Path) -> None:
    """A tree that recorded commands but not this one vouches for its absence; a tree with
    no commands/ at all says nothing about nvidia-smi (absence is not evidence)."""
    ran = make_tree(tmp_path / "ran", commands={"uname -r": "6.8.0\n"})
    inv = read_gpus(open_host(ran))
    assert (inv.source, inv.gpus) == ("none", ())
    assert inv.error == "missing: nvidia-smi -q -x: not recorded in this host tree"
    assert inv.attempts == {  # each form of nvidia-smi was looked for, in turn
        "nvidia-smi -q -x": inv.error,
        "nvidia-smi -q": "missing: nvidia-smi -q: not recorded in this host tree",
        "nvidia-smi table": "missing: nvidia-smi: not recorded in this host tree",
    }
    bare = read_gpus(open_host(make_tree(tmp_path / "bare", files={"etc/hostname": "n1\n"})))
    assert (bare.source, bare.gpus) == ("none", ())
    assert bare.error == "not in this bundle: nvidia-smi -q -x"


def test_snapshot_reason_for_an_uncaptured_command(tmp_path: Path) -> None:
    meta = {"not_captured": {"nvidia-smi%20-q%20-x": "timed out after 60 s"}}
    root = make_tree(tmp_path, files={"dolmen-snapshot.json": json.dumps(meta)})
    assert read_gpus(open_host(root)).error == "missing: nvidia-smi -q -x: timed out after 60 s"


@pytest.mark.parametrize("stream", ["stdout", "stderr"])
def test_driver_not_loaded_names_exit_code_and_first_line(tmp_path: Path, stream: str) -> None:
    out, err = (NO_DRIVER, "") if stream == "stdout" else ("", NO_DRIVER)
    root = make_tree(tmp_path, commands={"nvidia-smi -q -x": (out, 9, err)})
    inv = read_gpus(open_host(root))
    assert (inv.source, inv.gpus) == ("nvidia-smi", ())  # nvidia-smi answered: no driver
    assert inv.error == (
        "command failed: nvidia-smi -q -x: exit 9: NVIDIA-SMI has failed because it "
        "couldn't communicate with the NVIDIA driver. Make sure that the latest NVIDIA "
        "driver is installed and running."
    )
    assert inv.attempts == {"nvidia-smi -q -x": inv.error}  # -q would say the same


def test_truncated_output_is_malformed(tmp_path: Path) -> None:
    text = recording(H100).read_text()
    root = make_tree(tmp_path, commands={"nvidia-smi -q -x": text[: len(text) // 3]})
    inv = read_gpus(open_host(root))
    assert inv.source == "none" and inv.error and inv.error.startswith("malformed: ")
    assert inv.attempts["nvidia-smi -q -x"] == inv.error
    assert inv.attempts["nvidia-smi -q"].startswith("missing: ")  # looked for, not recorded


def test_nonzero_exit_with_a_whole_document_keeps_the_gpus(tmp_path: Path) -> None:
    text = recording(H100).read_text()
    root = make_tree(tmp_path, commands={"nvidia-smi -q -x": (text, 15, "GPU 0000:9B:00.0 ...")})
    inv = read_gpus(open_host(root))
    assert (inv.source, inv.error, len(inv.gpus)) == ("nvidia-smi", None, 8)
    assert inv.unread["nvidia-smi"].startswith("command failed: nvidia-smi -q -x: exit 15")


@pytest.mark.parametrize(
    ("status", "reason", "words"),
    [
        (RunStatus.MISSING, "nvidia-smi not found on PATH", "missing: nvidia-smi not found"),
        (RunStatus.TIMEOUT, "timed out after 60 s", "timed out: nvidia-smi -q -x: timed out"),
        (RunStatus.DENIED, "cannot execute nvidia-smi", NO_PERMISSION),
    ],
)
def test_run_reasons(status: RunStatus, reason: str, words: str) -> None:
    res = CommandResult(("nvidia-smi", "-q", "-x"), status, reason=reason)
    assert res.failure().startswith(words)


@pytest.mark.skipif(shutil.which("nvidia-smi") is not None, reason="this machine has a driver")
def test_live_host_without_gpu_or_nvml() -> None:
    inv = open_host().gpus
    assert (inv.source, inv.gpus) == ("none", ())
    assert inv.error == "missing: nvidia-smi not found on PATH"
    assert inv.attempts["nvml"].startswith("not loaded: ")


def test_live_host_falls_back_from_nvml_to_nvidia_smi(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # A real process on PATH answers as nvidia-smi would; NVML cannot load on this machine.
    if read_nvml() != "not loaded: NVML Shared Library Not Found":
        pytest.skip("libnvidia-ml loads here: the live host would use NVML")
    xml = recording(H100)
    tool = tmp_path / "nvidia-smi"
    tool.write_text(f'#!/bin/sh\n[ "$*" = "-q -x" ] || exit 2\nexec cat "{xml}"\n')
    tool.chmod(tool.stat().st_mode | stat.S_IXUSR)
    monkeypatch.setenv("PATH", f"{tmp_path}:/usr/bin:/bin")
    inv = read_gpus(open_host())
    assert (inv.source, len(inv.gpus), inv.driver_version) == ("nvidia-smi", 8, "580.105.08")
    assert inv.attempts == {"nvml": "not loaded: NVML Shared Library Not Found"}


def test_read_nvml_reports_why_the_library_did_not_load() -> None:
    got = read_nvml()
    if not isinstance(got, str):
        pytest.skip("libnvidia-ml loads here")
    assert got.startswith("not loaded: ")


def test_build_fills_nested_groups_from_dotted_keys() -> None:
    gpu = build(Gpu, {"position": 3, "power.draw": 1.5, "ecc.volatile.uncorrectable": 2})
    assert (gpu.position, gpu.power.draw, gpu.ecc.volatile.uncorrectable) == (3, 1.5, 2)
    assert gpu.power.limit is None and gpu.ecc.aggregate.uncorrectable is None
    assert "ecc.volatile.raw" in model_keys() and "ecc" not in model_keys()


# --- NVML: the field table, exercised through an object with pynvml's functions -------------


def test_nvml_table_names_only_model_keys() -> None:
    keys = model_keys()
    for row_keys, *_ in FIELDS:
        assert set((row_keys,) if isinstance(row_keys, str) else row_keys) <= keys
    assert set(NOT_READ_KEYS) <= keys


def nvml_error(code: int) -> pynvml.NVMLError:
    return pynvml.NVMLError(code)


class FakeNvml:
    """pynvml's names, answering for one H100-like GPU; absent names are absent functions."""

    def __init__(self, fail: dict[str, int] | None = None) -> None:
        self.shut = False
        for name, code in (fail or {}).items():
            setattr(self, name, self._raising(code))  # shadows the method of the same name

    @staticmethod
    def _raising(code: int) -> Any:
        def call(*_: Any) -> Any:
            raise nvml_error(code)

        return call

    def nvmlInit(self) -> None:
        pass

    def nvmlShutdown(self) -> None:
        self.shut = True

    def nvmlDeviceGetCount(self) -> int:
        return 1

    def nvmlSystemGetDriverVersion(self) -> str:
        return "580.105.08"

    def nvmlSystemGetCudaDriverVersion(self) -> int:
        return 13000

    def nvmlDeviceGetHandleByIndex(self, i: int) -> object:
        return ("handle", i)

    def nvmlDeviceGetName(self, h: object) -> bytes:
        return b"NVIDIA H100 80GB HBM3"

    def nvmlDeviceGetPciInfo(self, h: object) -> Any:
        return SimpleNamespace(busId=b"00000000:9B:00.0", pciDeviceId=0x233010DE)

    def nvmlDeviceGetArchitecture(self, h: object) -> int:
        return 9

    def nvmlDeviceGetMigMode(self, h: object) -> list[int]:
        return [0, 1]

    def nvmlDeviceGetTotalEccErrors(self, h: object, error: int, counter: int) -> int:
        return {(0, 0): 4, (1, 0): 0, (0, 1): 40, (1, 1): 2}[(error, counter)]

    def nvmlDeviceGetRemappedRows(self, h: object) -> tuple[int, int, int, int]:
        return (1, 0, 1, 0)

    def nvmlDeviceGetCurrentClocksEventReasons(self, h: object) -> int:
        return 0x1 | 0x4

    def nvmlDeviceGetPowerUsage(self, h: object) -> int:
        return 68920

    def nvmlDeviceGetUtilizationRates(self, h: object) -> Any:
        return SimpleNamespace(gpu=5, memory=1)

    def nvmlDeviceGetNvLinkState(self, h: object, link: int) -> int:
        if link >= 18:
            raise nvml_error(pynvml.NVML_ERROR_INVALID_ARGUMENT)
        return 0 if link == 3 else 1


def test_nvml_fields_map_through_the_table() -> None:
    lib = FakeNvml()
    inv = read_nvml(lib)
    assert not isinstance(inv, str)
    assert lib.shut  # nvmlShutdown ran
    assert (inv.source, inv.driver_version, inv.cuda_version) == ("nvml", "580.105.08", "13.0")
    (gpu,) = inv.gpus
    assert (gpu.name, gpu.architecture, gpu.bus_id) == (
        "NVIDIA H100 80GB HBM3",
        "Hopper",
        "00000000:9B:00.0",
    )
    assert (gpu.pci_address, gpu.pci_device_id) == ("0000:9b:00.0", "233010DE")
    assert (gpu.mig.current, gpu.mig.pending) == (False, True)
    assert (gpu.ecc.volatile.correctable, gpu.ecc.aggregate.uncorrectable) == (4, 2)
    assert gpu.remapped_rows == type(gpu.remapped_rows)(1, 0, True, False)
    assert gpu.clock_events.active == ("gpu_idle", "sw_power_cap")
    assert (gpu.power.draw, gpu.utilization.gpu) == (68.92, 5)
    assert gpu.nvlinks is not None and len(gpu.nvlinks) == 18
    assert gpu.nvlinks[3].state == "inactive" and gpu.nvlinks[0].state == "up"
    assert gpu.nvlinks[0].speed_gbps is None  # the speed field is not answered here
    assert gpu.unread["serial"] == f"{NOT_SUPPORTED}: nvidia-ml-py has no nvmlDeviceGetSerial"
    assert gpu.unread["gpu_part_number"] == NOT_READ
    assert not gpu.lost


@pytest.mark.parametrize(
    ("code", "reason", "lost"),
    [
        (pynvml.NVML_ERROR_NOT_SUPPORTED, NOT_SUPPORTED, False),
        (pynvml.NVML_ERROR_NO_PERMISSION, NO_PERMISSION, False),
        (pynvml.NVML_ERROR_GPU_IS_LOST, GPU_LOST, True),
        (pynvml.NVML_ERROR_UNKNOWN, "unreadable: NVML: Unknown Error", False),
    ],
)
def test_nvml_errors_become_reasons(code: int, reason: str, lost: bool) -> None:
    inv = read_nvml(FakeNvml(fail={"nvmlDeviceGetTemperature": code}))
    assert not isinstance(inv, str)
    gpu = inv.gpus[0]
    assert gpu.temperature.gpu is None
    assert gpu.unread["temperature.gpu"] == reason
    assert gpu.lost is lost


def test_nvml_multi_value_call_failing_explains_each_key() -> None:
    inv = read_nvml(FakeNvml(fail={"nvmlDeviceGetRemappedRows": pynvml.NVML_ERROR_NOT_SUPPORTED}))
    assert not isinstance(inv, str)
    unread = inv.gpus[0].unread
    for key in ("correctable", "uncorrectable", "pending", "failure"):
        assert unread[f"remapped_rows.{key}"] == NOT_SUPPORTED


def test_nvml_init_failure_is_a_reason_not_an_exception() -> None:
    class NoDriver(FakeNvml):
        def nvmlInit(self) -> None:
            raise nvml_error(pynvml.NVML_ERROR_DRIVER_NOT_LOADED)

    assert read_nvml(NoDriver()) == "not loaded: Driver Not Loaded"


def test_nvml_gpu_without_a_handle_explains_every_field() -> None:
    inv = read_nvml(FakeNvml(fail={"nvmlDeviceGetHandleByIndex": pynvml.NVML_ERROR_GPU_IS_LOST}))
    assert not isinstance(inv, str)
    (gpu,) = inv.gpus
    assert gpu.lost and gpu.name is None and gpu.power.draw is None
    assert gpu.unread["name"] == gpu.unread["power.draw"] == GPU_LOST


# --- the text forms of nvidia-smi, after -q -x ----------------------------------------------

A10_TEXT = "nvidia-smi-text/gpud__nvidia-smi-query.535.129.03.out.0.valid.a10"
H100_TABLE = "nvidia-smi-text/gpud__nvidia-smi.550.90.07.out.0.valid"


def test_tree_with_only_the_q_text(tmp_path: Path) -> None:
    root = make_tree(tmp_path, commands={"nvidia-smi -q": recording(A10_TEXT).read_text()})
    inv = open_host(root).gpus
    assert (inv.source, inv.error, len(inv.gpus)) == ("nvidia-smi -q", None, 1)
    assert inv.gpus[0].remapped_rows.pending is True
    assert inv.attempts == {
        "nvidia-smi -q -x": "missing: nvidia-smi -q -x: not recorded in this host tree"
    }


def test_tree_with_only_the_table(tmp_path: Path) -> None:
    root = make_tree(tmp_path, commands={"nvidia-smi": recording(H100_TABLE).read_text()})
    inv = open_host(root).gpus
    assert (inv.source, inv.error, len(inv.gpus)) == ("nvidia-smi table", None, 8)
    assert set(inv.attempts) == {"nvidia-smi -q -x", "nvidia-smi -q"}


def test_malformed_xml_falls_back_to_the_text(tmp_path: Path) -> None:
    xml = recording(H100).read_text()
    commands = {"nvidia-smi -q -x": xml[:5000], "nvidia-smi -q": recording(A10_TEXT).read_text()}
    inv = open_host(make_tree(tmp_path, commands=commands)).gpus
    assert (inv.source, len(inv.gpus)) == ("nvidia-smi -q", 1)
    assert inv.attempts["nvidia-smi -q -x"].startswith("malformed: not well-formed XML")


def test_no_fallback_after_nvidia_smi_said_why(tmp_path: Path) -> None:
    # -q would print the same "couldn't communicate": its recording is not even read.
    commands = {
        "nvidia-smi -q -x": (NO_DRIVER, 9),
        "nvidia-smi -q": recording(A10_TEXT).read_text(),
    }
    inv = open_host(make_tree(tmp_path, commands=commands)).gpus
    assert (inv.source, inv.gpus) == ("nvidia-smi", ())
    assert list(inv.attempts) == ["nvidia-smi -q -x"]


@pytest.mark.parametrize(
    ("out", "rc", "words"),
    [
        ("No devices were found\n", 6, "exit 6: No devices were found"),
        (
            "Failed to initialize NVML: Driver/library version mismatch\n"
            "NVML library version: 580.95\n",
            18,
            "exit 18: Failed to initialize NVML: Driver/library version mismatch; "
            "NVML library version: 580.95",
        ),
        (NO_DRIVER, 0, "nvidia-smi -q -x: NVIDIA-SMI has failed"),  # recorded without its rc
    ],
)
def test_failure_texts_become_the_error(tmp_path: Path, out: str, rc: int, words: str) -> None:
    inv = open_host(make_tree(tmp_path, commands={"nvidia-smi -q -x": (out, rc)})).gpus
    assert (inv.source, inv.gpus) == ("nvidia-smi", ())
    assert inv.error and inv.error.startswith("command failed: ") and words in inv.error


def test_lost_gpu_line_before_the_xml(tmp_path: Path) -> None:
    line = "Unable to determine the device handle for GPU 0000:DB:00.0: GPU is lost\n"
    xml = recording(H100).read_text()
    inv = open_host(make_tree(tmp_path, commands={"nvidia-smi -q -x": (line + xml, 15)})).gpus
    assert inv.source == "nvidia-smi" and len(inv.gpus) == 9
    assert inv.gpus[-1].bus_id == "00000000:DB:00.0" and inv.gpus[-1].lost
    assert (
        inv.error
        == inv.unread["nvidia-smi"]
        == (
            "command failed: nvidia-smi -q -x: exit 15: Unable to determine the device handle for "
            "GPU 0000:DB:00.0: GPU is lost"
        )
    )


def _fake_nvidia_smi(tmp_path: Path, body: str) -> Path:
    """A real nvidia-smi stand-in on PATH that logs each call to ``calls``."""
    tool = tmp_path / "bin" / "nvidia-smi"
    tool.parent.mkdir()
    tool.write_text(f'#!/bin/sh\necho "$*" >> "{tmp_path}/calls"\n{body}\n')
    tool.chmod(tool.stat().st_mode | stat.S_IXUSR)
    return tool.parent


def _no_nvml() -> None:
    if read_nvml() != "not loaded: NVML Shared Library Not Found":
        pytest.skip("libnvidia-ml loads here: the live host would use NVML")


def test_live_host_runs_only_q_x_when_it_works(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    _no_nvml()
    xml = recording(H100)
    folder = _fake_nvidia_smi(tmp_path, f'[ "$*" = "-q -x" ] && exec cat "{xml}"\nexit 2')
    monkeypatch.setenv("PATH", f"{folder}:/usr/bin:/bin")
    assert open_host().gpus.source == "nvidia-smi"
    assert (tmp_path / "calls").read_text() == "-q -x\n"  # no extra command on a healthy host


def test_live_host_falls_back_to_the_text(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    _no_nvml()
    text = recording(A10_TEXT)
    body = f'[ "$*" = "-q -x" ] && {{ echo "<nvidia_smi_log><gpu"; exit 0; }}\n[ "$*" = "-q" ] && exec cat "{text}"\nexit 2'
    monkeypatch.setenv("PATH", f"{_fake_nvidia_smi(tmp_path, body)}:/usr/bin:/bin")
    inv = open_host().gpus
    assert (inv.source, len(inv.gpus)) == ("nvidia-smi -q", 1)
    assert (tmp_path / "calls").read_text() == "-q -x\n-q\n"
    assert set(inv.attempts) == {"nvml", "nvidia-smi -q -x"}

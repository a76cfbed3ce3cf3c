"""Issue 9 case 8: a counter that is not a non-negative integer is ``unknown``, never a pass.

Faults are edits of the real qx-h100 capture (one GPU), of its sysfs AER files, of the
real H100 InfiniBand counters, and of the answers of a fake NVML.
"""

from __future__ import annotations

import shutil
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest

from dolmen.checks.context import Context
from dolmen.checks.runner import run_one
from dolmen.facts.gpu import GpuFacts
from dolmen.host.gpu.nvml import read_nvml
from tests.checks.gpu.trees import H100_BDFS, REGISTRY, by_subject, edit_gpu, run, tree, xml
from tests.checks.helpers import run_check
from tests.conftest import make_tree, recording
from tests.host.gpu.test_read import FakeNvml

GPU0 = "gpu:00000000:53:00.0"
# counter -> (regex whose group 1 is kept and whose number is replaced, the check judging it)
FIELDS: dict[str, tuple[str, str]] = {
    "volatile dram_uncorrectable": (r"(<dram_uncorrectable>)0", "gpu.ecc.volatile_uncorrectable"),
    "volatile dram_correctable": (r"(<dram_correctable>)0", "gpu.ecc.volatile_correctable"),
    "volatile sram_uncorrectable_secded": (
        r"(<sram_uncorrectable_secded>)0",
        "gpu.ecc.volatile_uncorrectable",
    ),
    "aggregate dram_uncorrectable": (
        r"(?s)(<aggregate>.*?<dram_uncorrectable>)0",
        "gpu.ecc.aggregate_uncorrectable",
    ),
    "remapped_row_unc": (r"(<remapped_row_unc>)0", "gpu.row_remap"),
    "histogram none": (r"(<row_remapper_histogram_none>)0", "gpu.row_remap"),
    "replay_counter": (r"(<replay_counter>)\d+", "gpu.pcie.aer"),
}


def gpu0_status(tmp: Path, field: str, value: str) -> str:
    find, check = FIELDS[field]
    text = edit_gpu(xml(), 0, find, lambda m: m.group(1) + value)  # type: ignore[arg-type]
    root = tree(tmp, nvsmi=text, pci=None if check == "gpu.pcie.aer" else {})
    return by_subject(run(root, check))[GPU0].status.value


@pytest.mark.parametrize("field", sorted(FIELDS))
def test_the_recording_passes_as_is(tmp_path: Path, field: str) -> None:
    assert gpu0_status(tmp_path, field, "0") == "pass"


@pytest.mark.parametrize("field", sorted(FIELDS))
@pytest.mark.parametrize("value", ["-5", "+5", "5_0", "1.5", "0x10", "٣", "18446744073709551616"])
def test_a_malformed_counter_is_unknown(tmp_path: Path, field: str, value: str) -> None:
    assert gpu0_status(tmp_path, field, value) == "unknown"


@pytest.mark.parametrize("value", ["", "N/A", "[N/A]", "Not Supported"])
@pytest.mark.parametrize("field", ["volatile dram_uncorrectable", "aggregate dram_uncorrectable"])
def test_a_blank_dram_counter_with_ecc_on_is_unknown(
    tmp_path: Path, field: str, value: str
) -> None:
    assert gpu0_status(tmp_path, field, value) == "unknown"


def test_a_blank_sram_location_with_ecc_on_stays_a_skip_of_that_location(tmp_path: Path) -> None:
    # The GB200/A100 mocks print N/A for the SRAM parity/SEC-DED split with ECC on.
    assert gpu0_status(tmp_path, "volatile sram_uncorrectable_secded", "N/A") == "pass"


def test_a_blank_dram_counter_with_ecc_off_is_not_an_error(tmp_path: Path) -> None:
    text = edit_gpu(xml(), 0, r"(<current_ecc>)Enabled", r"\1Disabled")
    text = edit_gpu(text, 0, r"(<dram_uncorrectable>)0", r"\1N/A")
    found = by_subject(run(tree(tmp_path, nvsmi=text, pci={}), "gpu.ecc.volatile_uncorrectable"))
    assert found[GPU0].status.value == "pass"  # the SRAM counters still read 0


def _aer(root: Path, fatal: str) -> None:
    dev = next(root.glob(f"sys/devices/**/{H100_BDFS[0]}"))
    (dev / "aer_dev_fatal").write_text(fatal)


@pytest.mark.parametrize(
    "text", ["DLP -5\nSDES 0\nTOTAL_ERR_FATAL 0\n", "DLP 0\nTOTAL_ERR_FATAL -5\n", "DLP x\n"]
)
def test_malformed_aer_counters_are_unknown(tmp_path: Path, text: str) -> None:
    root = tree(tmp_path)
    _aer(root, text)
    assert by_subject(run(root, "gpu.pcie.aer"))[GPU0].status.value == "unknown"


IB = "sys/class/infiniband/mlx5_0/ports/1/counters/symbol_error"


@pytest.mark.parametrize("value", ["-5", "1.5", "junk", "²", "99999999999999999999999"])
def test_malformed_ib_counter_is_unknown(tmp_path: Path, value: str) -> None:
    shutil.copytree(
        recording("sysfs/gpud__sys-class-infiniband-h100.0"), tmp_path / "sys/class/infiniband"
    )
    make_tree(tmp_path, files={"proc/uptime": f"{38 * 86400:.2f} 0\n"})
    (tmp_path / IB).write_text(f"{value}\n")
    f = by_subject(run_check(tmp_path, "interconnect.ib.errors"))["ib:mlx5_0/1"]
    assert f.status.value == "unknown" and "symbol_error" in f.summary


class OddNvml(FakeNvml):
    """A GPU with ECC on whose counters answer ``ecc`` (and rows ``rows``)."""

    def __init__(self, ecc: Any = 0, rows: Any = 0, **kw: Any) -> None:
        super().__init__(**kw)
        self.ecc, self.rows = ecc, rows

    def nvmlDeviceGetEccMode(self, h: object) -> list[int]:
        return [1, 1]

    def nvmlDeviceGetTotalEccErrors(self, h: object, error: int, counter: int) -> Any:
        return self.ecc

    def nvmlDeviceGetRemappedRows(self, h: object) -> tuple[Any, Any, int, int]:
        return (0, self.rows, 0, 0)


def nvml_status(lib: FakeNvml, check: str) -> str:
    inv = read_nvml(lib)
    assert not isinstance(inv, str)
    host = SimpleNamespace(kind="live", hostname="n", describe=lambda: "fake")
    ctx = Context(host, config=None)  # type: ignore[arg-type]
    facts = GpuFacts(present=True, inventory=inv, gpus=inv.gpus, source="nvml")
    ctx.store._done["gpu"] = facts
    return run_one(ctx, REGISTRY[check])[0].status.value


@pytest.mark.parametrize("value", [-5, 1 << 64, 1.5, True, "3", None])
def test_nvml_counter_that_is_no_count_is_unknown(value: Any) -> None:
    assert nvml_status(OddNvml(ecc=value), "gpu.ecc.volatile_uncorrectable") == "unknown"
    assert nvml_status(OddNvml(rows=value), "gpu.row_remap") == "unknown"


def test_nvml_ecc_on_but_counter_not_supported_is_unknown() -> None:
    lib = OddNvml(fail={"nvmlDeviceGetTotalEccErrors": 3})  # NVML_ERROR_NOT_SUPPORTED
    assert nvml_status(lib, "gpu.ecc.volatile_uncorrectable") == "unknown"


def test_nvml_good_counters_pass() -> None:
    assert nvml_status(OddNvml(), "gpu.ecc.volatile_uncorrectable") == "pass"
    assert nvml_status(OddNvml(), "gpu.row_remap") == "pass"

"""parse_nvsmi_table on the real default ``nvidia-smi`` tables (gpud, the captures' idle and
load tables), cross-checked with the ``-q`` text of the same moment, and bad input."""

from __future__ import annotations

from typing import Any

import pytest

from dolmen.host.gpu import NOT_SUPPORTED, MigDevice
from dolmen.host.gpu.build import model_keys
from dolmen.host.gpu.nvsmi_table import NOT_SHOWN, parse_nvsmi_table
from dolmen.host.gpu.nvsmi_text import parse_nvsmi_text
from tests.conftest import recording
from tests.host.gpu.captures import capture_names, capture_section

TEXT = "nvidia-smi-text/"
H100_MIG = "nvidia_gpu_exporter__linux-x86_64__nvidia-h100-mig__590.48.01.txt"
WINDOWS = "nvidia_gpu_exporter__windows-x86_64__nvidia-geforce-rtx-2080-super__610.62.txt"


def parse(name: str) -> Any:
    return parse_nvsmi_table(recording(TEXT + name).read_text())


def get(obj: Any, dotted: str) -> Any:
    for part in dotted.split("."):
        obj = getattr(obj, part)
    return obj


def test_eight_h100s() -> None:
    inv = parse("gpud__nvidia-smi.550.90.07.out.0.valid")
    assert (inv.source, inv.error, inv.driver_version, inv.cuda_version) == (
        "nvidia-smi table",
        None,
        "550.90.07",
        "12.4",
    )
    assert [g.bus_id for g in inv.gpus] == [
        f"00000000:{b}:00.0" for b in ("19", "3B", "4C", "5D", "9B", "BB", "CB", "DB")
    ]
    gpu = inv.gpus[4]
    assert (gpu.position, gpu.name, gpu.persistence_mode, gpu.pci_address) == (
        4,
        "NVIDIA H100 80GB HBM3",
        True,
        "0000:9b:00.0",
    )
    assert (gpu.ecc.mode, gpu.ecc.volatile.uncorrectable, gpu.mig.current) == (True, 0, False)
    assert (gpu.temperature.gpu, gpu.performance_state, gpu.compute_mode) == (27, "P0", "Default")
    assert (gpu.power.draw, gpu.power.enforced_limit) == (73.0, 700.0)
    assert (gpu.memory.used_mib, gpu.memory.total_mib, gpu.utilization.gpu) == (1, 81559, 0)
    assert gpu.processes == 0  # "No running processes found"
    # Everything the table does not show is None, and says so.
    for key in ("uuid", "serial", "remapped_rows.pending", "clock_events.active", "index"):
        assert get(gpu, key) is None and gpu.unread[key] == NOT_SHOWN
    assert inv.unread["attached_gpus"] == NOT_SHOWN


def test_old_two_column_table_with_a_cut_name_and_err() -> None:
    (gpu,) = parse("gpud__nvidia-smi.525.125.06.out.0.valid").gpus
    assert gpu.name is None  # "NVIDIA GeForce ..." is not a name
    assert (
        gpu.unread["name"]
        == "cut off: the nvidia-smi table cuts the name short ('NVIDIA GeForce ...')"
    )
    assert (gpu.bus_id, gpu.persistence_mode, gpu.compute_mode) == (
        "00000000:01:00.0",
        False,
        "Exclusive_Process",
    )
    assert (gpu.temperature.gpu, gpu.power.draw, gpu.memory.used_mib) == (38, 49.0, 2021)
    assert gpu.unread["processes"] == NOT_SHOWN  # this paste has no Processes box
    assert gpu.unread["fan.speed"] == "unreadable: nvidia-smi printed 'ERR!'"  # the fan column


@pytest.mark.parametrize("name", capture_names())
@pytest.mark.parametrize("state", ["idle", "load"])
def test_capture_tables_agree_with_their_q_text(name: str, state: str) -> None:
    table = parse_nvsmi_table(capture_section(name, state, "nvidia-smi"))
    text = parse_nvsmi_text(capture_section(name, state, "nvidia-smi -q"))
    assert (table.source, table.error, table.driver_version) == (
        "nvidia-smi table",
        None,
        text.driver_version,
    )
    (t,), (q,) = table.gpus, text.gpus
    assert (t.bus_id, t.processes, t.mig.current, t.memory.total_mib) == (
        q.bus_id,
        q.processes,
        q.mig.current,
        q.memory.total_mib,
    )
    assert t.name is None or t.name == q.name
    for gpu in table.gpus:
        for key in model_keys() - {"nvlinks"}:
            if get(gpu, key) is None:
                assert key in gpu.unread, key


def test_mig_devices() -> None:
    (gpu,) = parse_nvsmi_table(capture_section(H100_MIG, "load", "nvidia-smi")).gpus
    assert gpu.mig.current is True and gpu.processes == 3
    assert gpu.mig.devices == (
        MigDevice(0, 2, 0, 40448),
        MigDevice(1, 3, 0, 20096),
        MigDevice(2, 9, 0, 9984),
        MigDevice(3, 10, 0, 9984),
    )
    # In MIG mode the ECC column shows the mode, not a count.
    assert gpu.ecc.mode is True and gpu.ecc.volatile.uncorrectable is None
    assert gpu.unread["utilization.gpu"] == NOT_SUPPORTED


def test_windows_driver_model_column() -> None:
    inv = parse_nvsmi_table(capture_section(WINDOWS, "idle", "nvidia-smi"))
    (gpu,) = inv.gpus
    assert (inv.driver_version, inv.cuda_version) == ("610.62", "13.3")  # KMD / CUDA UMD
    assert (gpu.driver_model, gpu.persistence_mode) == ("WDDM", None)
    assert gpu.unread["ecc.volatile.uncorrectable"] == NOT_SUPPORTED and gpu.processes == 19


HEAD = """+-----------------------------------------------------------------------------------------+
| NVIDIA-SMI 550.90.07              Driver Version: 550.90.07      CUDA Version: 12.4     |
|=========================================+========================+======================|
"""


@pytest.mark.parametrize(
    ("row", "key", "reason"),
    [
        (
            "| ERR!  ERR!    P0    ERR! / 700W |  1MiB / 81559MiB |  0%  Default |",
            "temperature.gpu",
            "unreadable: nvidia-smi printed 'ERR!'",
        ),
        (
            "| N/A   27C    P0    72W / 700W |  lots  |  0%  Default |",
            "memory.used_mib",
            "malformed: '  lots  '",
        ),
        (
            "| N/A   27C    P0    72W / 700W |  1MiB / 81559MiB |  x%  Default |",
            "utilization.gpu",
            "malformed: 'x%'",
        ),
    ],
)
def test_bad_cells_are_reasons(row: str, key: str, reason: str) -> None:
    first = "|   0  NVIDIA H100 80GB HBM3  On  |   00000000:19:00.0 Off |   0 |\n"
    (gpu,) = parse_nvsmi_table(HEAD + first + row + "\n").gpus
    assert get(gpu, key) is None and gpu.unread[key] == reason


@pytest.mark.parametrize(
    ("ecc", "mode", "count", "why"),
    [
        ("3", True, 3, None),
        ("Off", False, None, f"{NOT_SUPPORTED}: ECC is disabled"),
        ("N/A", None, None, NOT_SUPPORTED),
        ("ERR!", None, None, "unreadable: nvidia-smi printed 'ERR!'"),
        ("-1", None, None, "malformed: '-1'"),
    ],
)
def test_ecc_column(ecc: str, mode: bool | None, count: int | None, why: str | None) -> None:
    first = f"|   0  NVIDIA H100 80GB HBM3  On  |   00000000:19:00.0 Off |   {ecc} |\n"
    (gpu,) = parse_nvsmi_table(HEAD + first).gpus
    assert (gpu.ecc.mode, gpu.ecc.volatile.uncorrectable) == (mode, count)
    assert gpu.unread.get("ecc.volatile.uncorrectable") == why


@pytest.mark.parametrize(
    "junk",
    ["", "hello\n", HEAD, "| 0 x On | 00000000:19:00.0 Off | 0 |\n", "+---+\n| | | |\n" * 500],
)
def test_junk_is_malformed(junk: str) -> None:
    inv = parse_nvsmi_table(junk)
    assert (inv.source, inv.gpus) == ("none", ()) and inv.error
    assert inv.error.startswith("malformed: not an nvidia-smi table")


def test_failure_text_instead_of_a_table() -> None:
    inv = parse_nvsmi_table("No devices were found\n")
    assert (inv.source, inv.error) == (
        "nvidia-smi",
        "command failed: nvidia-smi: No devices were found",
    )


def test_table_with_a_lost_gpu_line() -> None:
    text = recording(TEXT + "gpud__nvidia-smi.550.90.07.out.0.valid").read_text()
    inv = parse_nvsmi_table(
        "Unable to determine the device handle for GPU0000:9B:00.0: Unknown Error\n" + text
    )
    # The GPU is both in the line and (here) in the table: it is listed once, as the table shows it.
    assert len(inv.gpus) == 8 and inv.error and "Unknown Error" in inv.error

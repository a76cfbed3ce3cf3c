"""parse_nvsmi_text on every real ``nvidia-smi -q`` text (whole, -d excerpt, truncated), the
captures' -q sections, and junk, hostile and failing input."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from dolmen.host.gpu import DEPRECATED, GPU_LOST, NOT_SUPPORTED
from dolmen.host.gpu.build import model_keys
from dolmen.host.gpu.nvsmi import parse_nvsmi_xml
from dolmen.host.gpu.nvsmi_text import CUT, EXCERPT, parse_nvsmi_text
from tests.conftest import recording, recordings_in
from tests.host.gpu.captures import capture_names, capture_section

TEXT = "nvidia-smi-text/"
QUERY_FILES = recordings_in("nvidia-smi-text", "gpud__nvidia-smi-query*") + recordings_in(
    "nvidia-smi-text", "azurehpc__*"
)
REASONS = (NOT_SUPPORTED, DEPRECATED, "insufficient permissions", GPU_LOST, "missing")
REASONS += ("not shown", "cut off")  # an excerpt's, a truncated text's: not in this input
RTX4090_A = ("01", "23", "41", "61", "81", "A1", "C1", "E1")  # out.0, .1, .2
RTX4090_B = ("01", "21", "41", "61", "81", "A1", "C1", "E1")  # .4090, .3: the other layout
H100_161 = ("19", "3B", "4C", "5D", "9B", "BB", "CB", "DB")
H100_183 = ("53", "64", "75", "86", "97", "A8", "B9", "CA")


def parse(name: str) -> Any:
    return parse_nvsmi_text(recording(TEXT + name).read_text())


def get(obj: Any, dotted: str) -> Any:
    for part in dotted.split("."):
        obj = getattr(obj, part)
    return obj


def buses(*b: str, domain: str = "00000000") -> list[str]:
    return [f"{domain}:{x}:00.0" for x in b]


# file -> (driver, GPUs, names, bus ids), each read from the file itself
CASES = {
    "gpud__nvidia-smi-query.535.129.03.out.0.valid.a10": (
        "535.129.03",
        ["NVIDIA A10"],
        buses("07"),
    ),
    "gpud__nvidia-smi-query.535.154.05.out.0.valid": (
        "535.154.05",
        ["NVIDIA GeForce RTX 4090"] * 8,
        buses(*RTX4090_A),
    ),
    "gpud__nvidia-smi-query.535.154.05.out.0.valid.4090": (
        "535.154.05",
        ["NVIDIA GeForce RTX 4090"] * 8,
        buses(*RTX4090_B),
    ),
    "gpud__nvidia-smi-query.535.154.05.out.1.valid": (
        "535.154.05",
        ["NVIDIA GeForce RTX 4090"] * 8,
        buses(*RTX4090_A),
    ),
    "gpud__nvidia-smi-query.535.154.05.out.2.valid": (
        "535.154.05",
        ["NVIDIA GeForce RTX 4090"] * 8,
        buses(*RTX4090_A),
    ),
    "gpud__nvidia-smi-query.535.154.05.out.3.valid": (
        "535.154.05",
        ["NVIDIA GeForce RTX 4090"] * 8,
        buses(*RTX4090_B),
    ),
    "gpud__nvidia-smi-query.535.161.08.out.0.valid": (
        "535.161.08",
        ["NVIDIA H100 80GB HBM3"] * 8,
        buses(*H100_161),
    ),
    "gpud__nvidia-smi-query.535.183.01.out.0.valid": (
        "535.183.01",
        ["NVIDIA H100 80GB HBM3"] * 8,
        buses(*H100_183),
    ),
    "gpud__nvidia-smi-query.535.183.01.out.0.invalid": (
        "535.183.01",
        ["NVIDIA H100 80GB HBM3"],
        buses("53"),
    ),
    "gpud__nvidia-smi-query.560.35.03.out.0.valid": (
        "560.35.03",
        ["NVIDIA TITAN V"],
        buses("01"),
    ),
    "azurehpc__orig_nvsmi8_output.txt": (
        "535.86.10",
        [None] * 8,  # a -d PAGE_RETIREMENT excerpt: no Product Name
        [f"0000000{d}:00:00.0" for d in range(1, 9)],
    ),
}


def test_every_real_text_has_a_case() -> None:
    assert {p.name for p in QUERY_FILES} <= set(CASES)


@pytest.mark.parametrize("name", sorted(CASES))
def test_real_texts_list_what_they_show(name: str) -> None:
    driver, names, bus_ids = CASES[name]
    inv = parse(name)
    assert (inv.source, inv.error, inv.driver_version) == ("nvidia-smi -q", None, driver)
    assert [g.name for g in inv.gpus] == names
    assert [g.bus_id for g in inv.gpus] == bus_ids
    assert [g.position for g in inv.gpus] == list(range(len(names)))
    assert all(g.pci_address == g.bus_id[4:].lower() for g in inv.gpus if g.bus_id)
    for gpu in inv.gpus:  # every None scalar is explained, in the reason words
        for key in model_keys() - {"nvlinks"}:
            if get(gpu, key) is None:
                assert gpu.unread[key].startswith(REASONS), (key, gpu.unread[key])


def test_a10_has_remapped_rows_pending() -> None:
    (gpu,) = parse("gpud__nvidia-smi-query.535.129.03.out.0.valid.a10").gpus
    rows = gpu.remapped_rows
    assert (rows.correctable, rows.uncorrectable, rows.pending, rows.failure) == (0, 4, True, False)
    assert rows.histogram["max"] == 192
    assert (gpu.ecc.mode, gpu.ecc.volatile.uncorrectable, gpu.power.draw) == (True, 0, 43.89)
    assert gpu.pci_device_id == "223610DE"  # the text's 0x223610DE, as the XML prints it
    assert (gpu.retired_pages.sbe, gpu.unread["retired_pages.sbe"]) == (None, NOT_SUPPORTED)


def test_h100_161_every_gpu_is_slowed_by_the_power_brake() -> None:
    for gpu in parse("gpud__nvidia-smi-query.535.161.08.out.0.valid").gpus:
        # "HW Slowdown: Active" with "HW Power Brake Slowdown: Active" nested under it.
        assert gpu.clock_events.active == ("hw_slowdown", "hw_power_brake_slowdown")
        assert (gpu.temperature.tlimit_slowdown, gpu.ecc.sram_threshold_exceeded) == (-2, False)


def test_h100_183_power_brake_on_one_gpu_only() -> None:
    gpus = parse("gpud__nvidia-smi-query.535.183.01.out.0.valid").gpus
    braked = [g.bus_id for g in gpus if "hw_power_brake_slowdown" in (g.clock_events.active or ())]
    assert braked == ["00000000:75:00.0"]
    assert all("hw_slowdown" not in (g.clock_events.active or ()) for g in gpus)


def test_healthy_4090s_show_no_fault() -> None:
    for name in [n for n in CASES if "154.05" in n]:
        for gpu in parse(name).gpus:
            assert gpu.remapped_rows.pending is False and gpu.remapped_rows.uncorrectable == 0
            assert not {"hw_slowdown", "hw_power_brake_slowdown"} & set(
                gpu.clock_events.active or ()
            )
            assert gpu.unread["ecc.volatile.uncorrectable"] == NOT_SUPPORTED  # GeForce: N/A


def test_titan_v_counts_its_processes() -> None:
    (gpu,) = parse("gpud__nvidia-smi-query.560.35.03.out.0.valid").gpus
    assert (gpu.processes, gpu.architecture) == (3, "Volta")


def test_page_retirement_excerpt_reads_its_section_and_nothing_else() -> None:
    inv = parse("azurehpc__orig_nvsmi8_output.txt")
    assert inv.attached_gpus == 8 and inv.cuda_version == "12.2"
    for gpu in inv.gpus:
        retired = gpu.retired_pages
        assert (retired.sbe, retired.dbe, retired.pending) == (0, 0, False)
        # What -d PAGE_RETIREMENT leaves out is missing (unknown), never "not supported".
        assert gpu.unread["power.draw"] == gpu.unread["name"] == EXCERPT


def test_truncated_text_keeps_its_gpu_and_says_it_is_cut() -> None:
    inv = parse("gpud__nvidia-smi-query.535.183.01.out.0.invalid")
    (gpu,) = inv.gpus
    assert inv.attached_gpus == 8
    assert inv.unread["gpus"] == (
        "malformed: truncated: the output ends inside the block of GPU 00000000:53:00.0 "
        "(1 of 8 attached GPUs listed)"
    )
    assert (gpu.name, gpu.uuid, gpu.pcie.replay_counter) == (
        "NVIDIA H100 80GB HBM3",
        "GPU-566e6f65-c38e-b12f-4824-6944218668b9",
        120,
    )
    # What the cut took is missing, never a value or "not supported".
    for key in ("power.draw", "ecc.volatile.uncorrectable", "remapped_rows.pending", "processes"):
        assert get(gpu, key) is None and gpu.unread[key] == CUT


def test_a_cut_last_line_is_not_read() -> None:
    text = recording(TEXT + "gpud__nvidia-smi-query.535.129.03.out.0.valid.a10").read_text()
    cut = text[: text.index("Uncorrectable Error") + len("Uncorrectable Error      : ")]
    inv = parse_nvsmi_text(cut + "4")  # "4" could have been "42": no final newline
    (gpu,) = inv.gpus
    assert gpu.remapped_rows.uncorrectable is None and gpu.remapped_rows.correctable == 0
    assert inv.unread["gpus"].startswith("malformed: truncated")


@pytest.mark.parametrize("name", capture_names())
@pytest.mark.parametrize("state", ["idle", "load"])
def test_capture_q_sections(name: str, state: str) -> None:
    inv = parse_nvsmi_text(capture_section(name, state, "nvidia-smi -q"))
    (gpu,) = inv.gpus
    driver = name.removesuffix(".txt").rsplit("__", 1)[1]
    assert (inv.source, inv.error, inv.driver_version) == ("nvidia-smi -q", None, driver)
    assert gpu.name and gpu.name.startswith("NVIDIA") and gpu.uuid and gpu.bus_id
    assert gpu.memory.used_mib is not None and gpu.processes is not None
    if "mig" in name:
        assert gpu.mig.current is True and len(gpu.mig.devices) == (4 if "h100" in name else 5)
        assert gpu.unread["utilization.gpu"] == NOT_SUPPORTED  # N/A in MIG mode
    elif state == "load":
        assert gpu.processes > 0


def test_text_reads_as_the_xml_of_the_same_board() -> None:
    # The H100 -q text (590.48.01) and the H100 -q -x (580.105.08): same fields, same reasons.
    text = parse_nvsmi_text(
        capture_section(
            "nvidia_gpu_exporter__linux-x86_64__nvidia-h100-80gb-hbm3__590.48.01.txt",
            "idle",
            "nvidia-smi -q",
        )
    ).gpus[0]
    xml = parse_nvsmi_xml(
        recording("nvidia-smi-xml/k8s-test-infra__hardware__qx-h100.xml").read_text()
    ).gpus[0]
    assert text.unread == xml.unread
    for key in ("ecc.mode", "mig.current", "fabric.state", "clock_events.active", "pcie.gen_max"):
        assert get(text, key) == get(xml, key)
    assert text.clock_events.counters_us.keys() == xml.clock_events.counters_us.keys()


NO_DRIVER = (
    "NVIDIA-SMI has failed because it couldn't communicate with the NVIDIA driver. "
    "Make sure that the latest NVIDIA driver is installed and running."
)


@pytest.mark.parametrize(
    "said",
    [
        NO_DRIVER,
        "No devices were found",
        "Failed to initialize NVML: Driver/library version mismatch\nNVML library version: 535.104",
        "NVIDIA-SMI couldn't find libnvidia-ml.so library in your system.",
    ],
)
def test_failure_texts_are_the_error(said: str) -> None:
    inv = parse_nvsmi_text(said + "\n")
    assert (inv.source, inv.gpus) == ("nvidia-smi", ())
    assert inv.error == "command failed: nvidia-smi: " + "; ".join(said.splitlines())


def test_unopenable_gpus_are_listed_as_lost() -> None:
    text = recording(TEXT + "gpud__nvidia-smi-query.535.129.03.out.0.valid.a10").read_text()
    head = (
        "Unable to determine the device handle for GPU 0000:3B:00.0: GPU is lost.  "
        "Reboot the system to recover this GPU\n"
        "Unable to determine the device handle for gpu0000:5D:00.0: Unknown Error\n"
    )
    inv = parse_nvsmi_text(head + text)
    a10, lost, unknown = inv.gpus
    assert a10.name == "NVIDIA A10" and not a10.lost
    assert (lost.bus_id, lost.lost, lost.unread["power.draw"]) == (
        "00000000:3B:00.0",
        True,
        GPU_LOST,
    )
    assert (unknown.bus_id, unknown.pci_address, unknown.lost) == (
        "00000000:5D:00.0",
        "0000:5d:00.0",
        True,
    )
    assert unknown.unread["name"].startswith("unreadable: nvidia-smi: Unable to determine")
    assert inv.error and inv.error.startswith("command failed: nvidia-smi: Unable to determine")


def test_placeholders_read_as_in_the_xml() -> None:
    text = recording(TEXT + "gpud__nvidia-smi-query.535.129.03.out.0.valid.a10").read_text()
    text = text.replace(
        "Power Draw                        : 43.89 W", "Power Draw : [Unknown Error]"
    )
    text = text.replace(
        "GPU Current Temp                  : 33 C", "GPU Current Temp : GPU requires reset"
    )
    text = text.replace(
        "Uncorrectable Error               : 4", "Uncorrectable Error : GPU is lost"
    )
    (gpu,) = parse_nvsmi_text(text).gpus
    assert gpu.unread["power.draw"] == "unreadable: nvidia-smi printed 'Unknown Error'"
    assert gpu.unread["temperature.gpu"] == "unreadable: the GPU requires a reset"
    assert gpu.lost and gpu.unread["remapped_rows.uncorrectable"] == GPU_LOST


@pytest.mark.parametrize(
    "junk",
    [
        "",
        "\n\n",
        "hello world\n",
        "==============NVSMI LOG==============\n",
        "Driver Version : 535.1\nAttached GPUs : 8\n",
        "GPU 00000000:07:00.0\n" + "".join(f"{'    ' * (i % 40)}K{i} : v\n" for i in range(2000)),
        "GPU 00000000:07:00.0\n    Product Name : \x00\x1b[31m\u202e\n    Processes : None\n",
        "GPU zz:07:00.0\n    Product Name : X\n",
        "GPU 00000000:07:00.0\r\n    Minor Number : five\r\n    Processes : None\r\n",
        "GPU 00000000:07:00.0\n\tPCI\n\t\tBus Id : 00000000:07:00.0\n\tProcesses : None\n",
        "GPU 00000000:07:00.0\n    Remapped Rows\n        Uncorrectable Error : 99999999999999999999999\n",
    ],
)
def test_junk_never_raises_and_never_invents(junk: str) -> None:
    inv = parse_nvsmi_text(junk)
    assert inv.error is not None or inv.gpus
    for gpu in inv.gpus:
        assert gpu.index is None  # no junk line is a minor number
        assert gpu.remapped_rows.uncorrectable is None  # beyond u64: malformed
        for key in model_keys() - {"nvlinks"}:
            if get(gpu, key) is None:
                assert key in gpu.unread


def test_many_gpu_blocks_are_refused() -> None:
    inv = parse_nvsmi_text("".join(f"GPU 0000{i:04X}:07:00.0\n    A : b\n" for i in range(1100)))
    assert (inv.source, inv.gpus) == ("none", ()) and inv.error == "malformed: 1100 GPU blocks"


def test_a_second_report_is_not_read_twice(tmp_path: Path) -> None:
    text = recording(TEXT + "gpud__nvidia-smi-query.535.129.03.out.0.valid.a10").read_text()
    inv = parse_nvsmi_text(text + "\n" + text)
    assert len(inv.gpus) == 1 and inv.unread["gpus"].startswith("a second NVSMI LOG")

"""parse_nvsmi_xml on every real nvidia-smi -q -x recording (DTD v9..v13, none) and bad input."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

import pytest

from dolmen.host.gpu import ABSENT, DEPRECATED, GPU_LOST, NOT_SUPPORTED
from dolmen.host.gpu.build import model_keys
from dolmen.host.gpu.nvsmi import parse_nvsmi_xml
from dolmen.host.gpu.nvsmi_sections import FIELDS
from dolmen.host.gpu.nvsmi_values import EMPTY, sentinel
from tests.conftest import recording, recordings_in

ALL_XML = recordings_in("nvidia-smi-xml", "*.xml") + recordings_in("nvidia-smi-xml-mock", "*.xml")
XML = "nvidia-smi-xml/"
MOCK = "nvidia-smi-xml-mock/k8s-test-infra__"
HW = XML + "k8s-test-infra__hardware__"


def parse(rel: str) -> Any:
    return parse_nvsmi_xml(recording(rel).read_text())


def get(obj: Any, dotted: str) -> Any:
    """``obj.a.b``; inside a mapping the rest of the path is one key (``double_bit.total``)."""
    head, _, rest = dotted.partition(".")
    if isinstance(obj, dict):
        return obj[dotted]
    value = getattr(obj, head)
    return get(value, rest) if rest else value


@pytest.mark.parametrize("path", ALL_XML, ids=lambda p: p.name)
def test_every_recording_parses(path: Path) -> None:
    inv = parse_nvsmi_xml(path.read_text())
    assert inv.error is None and inv.source == "nvidia-smi"
    assert inv.gpus, "each recording holds at least one <gpu>"
    for pos, gpu in enumerate(inv.gpus):
        assert gpu.position == pos
        assert gpu.name and gpu.uuid and gpu.uuid.startswith("GPU-")
        assert gpu.bus_id and gpu.pci_address
        # Every None scalar is explained, in the reason words of docs/architecture.md.
        for key in model_keys():
            if key == "nvlinks" or get(gpu, key) is not None:
                continue
            assert key in gpu.unread, f"{key} is None without a reason"
        for why in gpu.unread.values():
            assert why.startswith(
                (NOT_SUPPORTED, DEPRECATED, "insufficient permissions", GPU_LOST, "missing")
            ), why


def test_the_field_table_names_only_model_keys() -> None:
    keys = model_keys()
    assert {key for key, _, _ in FIELDS} <= keys


# file, GPUs in the file, attached_gpus, driver, cuda, {gpu position: {model key: value}}
CASES: list[tuple[str, int, int | None, str | None, str | None, dict[int, dict[str, Any]]]] = [
    (
        HW + "qx-h100.xml",
        8,
        8,
        "580.105.08",
        "13.0",
        {
            0: {
                "name": "NVIDIA H100 80GB HBM3",
                "architecture": "Hopper",
                "bus_id": "00000000:53:00.0",
                "pci_address": "0000:53:00.0",
                "index": 0,
                "fabric.state": "Completed",
                "fabric.status": "Success",
                "fabric.clique_id": 0,
                "power.draw": 68.92,  # instant, not the 68.57 W average
                "power.enforced_limit": 700.0,
                "temperature.gpu": 29,
                "temperature.tlimit": 58,
                "temperature.tlimit_slowdown": -2,
                "temperature.tlimit_shutdown": -8,
                "temperature.shutdown": None,
                "pcie.replay_counter": 150,
                "memory.total_mib": 81559,
                "clock_events.active": ("gpu_idle",),
                "clock_events.counters_us.sw_power_cap": 7015662857,
                "remapped_rows.histogram.max": 2560,
                "ecc.aggregate.uncorrectable": 0,
                "ecc.channel_repair_pending": False,
                "reset.recovery_action": "None",
            },
            7: {"bus_id": "00000000:CA:00.0", "index": 7, "pcie.replay_counter": 106},
        },
    ),
    (
        HW + "qx-gb200.xml",
        4,
        4,
        "580.173.02",
        "13.0",
        {
            0: {
                "architecture": "Blackwell",
                "fabric.clique_id": 2,
                "fabric.cluster_uuid": "00000001-0000-0000-0000-000000000001",
                "fabric.health_summary": "Healthy",
            }
        },
    ),
    (
        HW + "qx-a100.xml",
        1,
        1,
        "570.148.08",
        "12.8",
        {
            0: {
                "power.draw": 49.68,  # average_power_draw is N/A on A100
                "temperature.slowdown": 89,
                "temperature.shutdown": 92,
                "temperature.tlimit": None,
                "reset.required": None,  # "Requested functionality has been deprecated"
                "reset.recovery_action": "None",
                "pcie.gen_current": 4,
            }
        },
    ),
    (
        HW + "qx-t4.xml",
        1,
        1,
        "595.91.07",
        "13.2",
        {0: {"temperature.slowdown": 93, "remapped_rows.pending": None, "pcie.width_current": 8}},
    ),
    (HW + "qx-l40s.xml", 1, 1, "595.91.07", "13.2", {0: {"temperature.tlimit": 59}}),
    (
        XML + "telegraf__a100-sxm4-v12.xml",
        1,
        4,  # trimmed upstream: 4 attached, 1 block kept
        "535.54.03",
        "12.2",
        {
            0: {
                "mig.current": True,
                "mig.pending": True,
                "reset.required": False,
                "memory.total_mib": 81920,
            }
        },
    ),
    (
        XML + "openpai__nvidia_smi_out_of_order.xml",
        4,
        4,
        "430.26",
        None,  # "Not Found"
        {
            0: {
                "name": "Tesla K80",
                "index": 1,  # blocks are out of minor-number order
                "bus_id": "00001580:00:00.0",
                "pci_address": "1580:00:00.0",
                "retired_pages.sbe": 1,
                "retired_pages.dbe": 1,
                "retired_pages.pending": False,
                "ecc.aggregate.correctable": 7,
                "ecc.aggregate.uncorrectable": 7,
                "ecc.aggregate.raw.double_bit.device_memory": 7,
                "ecc.volatile.uncorrectable": 0,
                "clock_events.active": ("applications_clocks_setting",),
                "power.draw": 135.72,
                "power.limit": 149.0,
                "processes": 1,
            }
        },
    ),
    (
        XML + "datakit__gtx-1card.xml",
        1,
        1,
        "460.39",
        "11.2",
        {
            0: {
                "name": "Tesla V100-PCIE-32GB",
                "retired_pages.sbe": 0,
                "retired_pages.dbe": 0,
                "ecc.volatile.uncorrectable": 0,
                "power.draw": 170.16,
                "temperature.slowdown": 87,
            }
        },
    ),
    (
        XML + "telegraf__gtx-1070-ti.xml",
        1,
        None,  # a hand-cut fragment: no driver_version, no attached_gpus
        None,
        None,
        {
            0: {
                "name": "GeForce GTX 1070 Ti",
                "pcie.gen_current": 1,
                "pcie.width_current": 16,
                "memory.total_mib": 4096,
                "temperature.gpu": 39,
                "power.draw": None,
            }
        },
    ),
    (
        XML + "telegraf__rtx-3080-v12.xml",
        1,
        1,
        "536.40",  # Windows
        "12.2",
        {0: {"driver_model": "WDDM", "index": None, "power.draw": 22.78}},
    ),
    (
        XML + "telegraf__tesla_p4.xml",
        1,
        1,
        "513.46",
        "11.6",
        {0: {"virtualization_mode": "VGPU", "driver_model": "WDDM", "ecc.mode": None}},
    ),
    (
        XML + "telegraf__quadro-p400.xml",
        1,
        1,
        "418.43",  # no DOCTYPE
        "10.1",
        {0: {"name": "Quadro P400"}},
    ),
    (XML + "telegraf__gtx-1660-ti.xml", 1, 1, "418.43", "10.1", {0: {"name": "Graphics Device"}}),
    (
        XML + "datakit__gtx-1050-1.xml",
        1,
        1,
        "515.65.01",
        "11.7",
        {0: {"name": "NVIDIA GeForce GTX 1050"}},
    ),
    (XML + "openpai__nvidia_smi_sample.xml", 2, 6, "384.66", None, {1: {"position": 1}}),
    (XML + "openpai__nvidia_smi_outdated_gpu.xml", 1, 1, "384.111", None, {0: {"index": 0}}),
    (
        XML + "openpai__nvidia_smi_sample_ecc_unsupported.xml",
        2,
        2,
        "410.73",
        "10.0",
        {0: {"name": "GeForce RTX 2080 Ti", "ecc.mode": None}},
    ),
    (
        XML + "telegraf__3090-v13.xml",
        1,
        1,
        "590.44.01",
        "13.1",
        {0: {"clock_events.active": ("sw_power_cap",), "temperature.shutdown": 98}},
    ),
    (
        XML + "telegraf__pro-6000-maxq-blackwell-v13.xml",
        1,
        1,
        "590.44.01",
        "13.1",
        {0: {"ecc.mode": False, "temperature.tlimit": 68, "power.draw": 3.99}},
    ),
    (
        XML + "telegraf__tesla-t4.xml",
        1,
        1,
        "515.105.01",
        "11.7",
        {0: {"ecc.aggregate.uncorrectable": 0, "ecc.aggregate.raw.sram_uncorrectable": 0}},
    ),
    (
        MOCK + "qx-gb200-lost.xml",
        2,
        2,
        "580.65.06",
        "13.0",
        {
            0: {"lost": False, "power.draw": 565.11},
            1: {"lost": True, "power.draw": None, "memory.total_mib": None},
        },
    ),
    (
        MOCK + "qx-gb200-ecc-injected.xml",
        2,
        2,
        "580.65.06",
        "13.0",
        {
            0: {
                "ecc.aggregate.raw.dram_uncorrectable": 8,
                "ecc.aggregate.uncorrectable": 8,
                "ecc.volatile.uncorrectable": 5,
                "remapped_rows.uncorrectable": 1,
                "remapped_rows.failure": True,
            }
        },
    ),
    (
        MOCK + "qx-gb200-fabric-degraded.xml",
        2,
        2,
        "580.65.06",
        "13.0",
        {
            0: {"fabric.health_summary": "Healthy"},
            1: {"fabric.health_summary": "Unhealthy", "fabric.health.route_unhealthy": "True"},
        },
    ),
    (
        MOCK + "qx-gb200-throttle-counters.xml",
        2,
        2,
        "580.65.06",
        "13.0",
        {
            0: {"clock_events.counters_us.sw_power_cap": 39595},
            1: {"clock_events.counters_us.sw_power_cap": 0},
        },
    ),
    (
        MOCK + "qx-a100-healthy.xml",
        2,
        2,
        "550.163.01",
        "12.4",
        {0: {"name": "NVIDIA A100-SXM4-40GB", "temperature.tlimit": None}},
    ),
]


@pytest.mark.parametrize("case", CASES, ids=lambda c: c[0].rsplit("/", 1)[-1])
def test_recording_values(case: tuple[Any, ...]) -> None:
    rel, count, attached, driver, cuda, per_gpu = case
    inv = parse(rel)
    assert len(inv.gpus) == count
    assert inv.attached_gpus == attached
    assert inv.driver_version == driver
    assert inv.cuda_version == cuda
    for pos, expected in per_gpu.items():
        for key, value in expected.items():
            assert get(inv.gpus[pos], key) == value, key


def test_reasons_name_the_placeholder() -> None:
    lost = parse(MOCK + "qx-gb200-lost.xml").gpus[1]
    assert lost.unread["power.draw"] == GPU_LOST
    assert lost.unread["remapped_rows.pending"] == GPU_LOST  # <remapped_rows>GPU is lost</...>
    assert lost.unread["ecc.volatile.uncorrectable"] == GPU_LOST  # DRAM lost, SRAM N/A
    a100 = parse(HW + "qx-a100.xml").gpus[0]
    assert a100.unread["reset.required"] == DEPRECATED
    h100 = parse(HW + "qx-h100.xml").gpus[0]
    assert h100.unread["retired_pages.dbe"] == NOT_SUPPORTED
    assert h100.unread["temperature.slowdown"] == ABSENT  # relative T.Limit style only
    k80 = parse(XML + "openpai__nvidia_smi_out_of_order.xml")
    assert k80.unread["cuda_version"].startswith("missing")  # "Not Found"
    fragment = parse(XML + "telegraf__gtx-1070-ti.xml")
    assert fragment.unread["driver_version"] == ABSENT


@pytest.mark.parametrize(
    ("text", "reason"),
    [
        ("N/A", NOT_SUPPORTED),
        ("[N/A]", NOT_SUPPORTED),
        (" [Not Supported] ", NOT_SUPPORTED),
        ("Requested functionality has been deprecated", DEPRECATED),
        ("Insufficient Permissions", "insufficient permissions"),
        ("GPU is lost", GPU_LOST),
        ("Not Found", "missing: nvidia-smi printed 'Not Found'"),
        ("42 %", None),
    ],
)
def test_sentinels(text: str, reason: str | None) -> None:
    assert sentinel(text) == reason


def gpu_doc(body: str) -> str:
    head = "<nvidia_smi_log><driver_version>1</driver_version><gpu id='0000:01:00.0'>"
    return f"{head}{body}</gpu></nvidia_smi_log>"


@pytest.mark.parametrize(
    ("body", "key", "value", "reason"),
    [
        (
            "<fan_speed> 40 % </fan_speed><utilization><gpu_util> 7 % </gpu_util></utilization>",
            "utilization.gpu",
            7,
            None,
        ),
        (
            "<utilization><gpu_util>seven</gpu_util></utilization>",
            "utilization.gpu",
            None,
            "malformed: 'seven'",
        ),
        (
            "<utilization><gpu_util>7 MHz</gpu_util></utilization>",
            "utilization.gpu",
            None,
            "malformed: '7 MHz'",
        ),
        ("<utilization><gpu_util></gpu_util></utilization>", "utilization.gpu", None, EMPTY),
        ("<remapped_rows></remapped_rows>", "remapped_rows.pending", None, EMPTY),
        (
            "<ecc_mode><current_ecc>Maybe</current_ecc></ecc_mode>",
            "ecc.mode",
            None,
            "malformed: 'Maybe'",
        ),
        (
            "<power_readings><power_draw>N/A</power_draw></power_readings>"
            "<gpu_power_readings><instant_power_draw>N/A</instant_power_draw>"
            "<average_power_draw>12.5 W</average_power_draw></gpu_power_readings>",
            "power.draw",
            12.5,
            None,
        ),
        (
            "<pci><pci_bus_id>00000001:9B:00.0</pci_bus_id></pci>",
            "pci_address",
            "0001:9b:00.0",
            None,
        ),
        ("<pci><pci_bus_id>bogus</pci_bus_id></pci>", "pci_address", None, "malformed: 'bogus'"),
        (
            "<ecc_errors><volatile><sram_correctable>3</sram_correctable>"
            "<sram_uncorrectable_parity>1</sram_uncorrectable_parity>"
            "<sram_uncorrectable_secded>2</sram_uncorrectable_secded>"
            "<dram_correctable>N/A</dram_correctable><dram_uncorrectable>4</dram_uncorrectable>"
            "</volatile></ecc_errors>",
            "ecc.volatile.uncorrectable",
            7,
            None,
        ),
        (
            "<ecc_errors><volatile><sram_uncorrectable>Insufficient Permissions"
            "</sram_uncorrectable><dram_uncorrectable>0</dram_uncorrectable></volatile></ecc_errors>",
            "ecc.volatile.uncorrectable",
            None,
            "insufficient permissions",
        ),
        (
            "<clocks_throttle_reasons>N/A</clocks_throttle_reasons>",
            "clock_events.active",
            None,
            NOT_SUPPORTED,
        ),
    ],
)
def test_values_and_reasons(body: str, key: str, value: Any, reason: str | None) -> None:
    gpu = parse_nvsmi_xml(gpu_doc(body)).gpus[0]
    assert get(gpu, key) == value
    assert gpu.unread.get(key) == reason


def test_bus_id_falls_back_to_the_gpu_id_attribute() -> None:
    gpu = parse_nvsmi_xml(gpu_doc("<uuid>GPU-1</uuid>")).gpus[0]
    assert (gpu.bus_id, gpu.pci_address, gpu.subject) == (
        "0000:01:00.0",
        "0000:01:00.0",
        "gpu:00000000:01:00.0",  # the one subject: nvidia-smi's spelling
    )


BOMB = """<?xml version="1.0"?>
<!DOCTYPE nvidia_smi_log [
 <!ENTITY a "aaaaaaaaaa">
 <!ENTITY b "&a;&a;&a;&a;&a;&a;&a;&a;&a;&a;">
 <!ENTITY c "&b;&b;&b;&b;&b;&b;&b;&b;&b;&b;">
 <!ENTITY d "&c;&c;&c;&c;&c;&c;&c;&c;&c;&c;">
]>
<nvidia_smi_log><driver_version>&d;&d;&d;&d;</driver_version></nvidia_smi_log>"""


def malformed_inputs() -> list[tuple[str, str]]:
    cases = [
        ("empty", ""),
        ("blank", "  \n\t"),
        ("binary", "\x00\x01\xff\xfe" + "\ufffd" * 64 + "\x7fELF"),
        ("not xml", "NVIDIA-SMI has failed because it couldn't communicate with the NVIDIA driver"),
        ("billion laughs", BOMB),
        ("external entity", '<!DOCTYPE x [<!ENTITY e SYSTEM "file:///etc/passwd">]><x>&e;</x>'),
        ("other root", "<html><body>502</body></html>"),
        ("undefined entity", "<nvidia_smi_log>&nope;</nvidia_smi_log>"),
        ("huge", "<nvidia_smi_log>" + " " * (65 << 20)),
    ]
    for path in ALL_XML[:: max(1, len(ALL_XML) // 6)]:
        text = path.read_text()
        cases.append((f"first half of {path.name}", text[: len(text) // 2]))
        cases.append((f"cut in a tag of {path.name}", text[: text.find("<gpu") + 7]))
    return cases


@pytest.mark.parametrize(("name", "text"), malformed_inputs(), ids=lambda v: str(v)[:40])
def test_malformed_input_gives_an_error_never_an_exception(name: str, text: str) -> None:
    inv = parse_nvsmi_xml(text)
    assert inv.source == "none" and inv.gpus == ()
    assert inv.error and inv.error.startswith("malformed: ")


def test_hostile_shapes_cost_linear_time() -> None:
    deep = 100_000
    nested = "<a>" * deep + "x" + "</a>" * deep
    inv = parse_nvsmi_xml(f"<nvidia_smi_log><gpu><uuid>GPU-1</uuid>{nested}</gpu></nvidia_smi_log>")
    assert inv.error is None and inv.gpus[0].uuid == "GPU-1"
    many = "<nvidia_smi_log>" + "<gpu/>" * 5000 + "</nvidia_smi_log>"
    assert parse_nvsmi_xml(many).error == "malformed: 5000 <gpu> blocks"


def test_a_log_without_gpus_is_an_empty_inventory() -> None:
    inv = parse_nvsmi_xml("<nvidia_smi_log><attached_gpus>0</attached_gpus></nvidia_smi_log>")
    assert (inv.error, inv.gpus, inv.attached_gpus) == (None, (), 0)


def test_parsing_an_8_gpu_h100_document_takes_milliseconds() -> None:
    text = recording(HW + "qx-h100.xml").read_text()
    best = min(_timed(parse_nvsmi_xml, text) for _ in range(5))
    assert best < 0.05, f"{best * 1000:.1f} ms"  # measured ~3 ms; the quick tier needs < 0.3 s


def _timed(fn: Any, arg: str) -> float:
    """CPU seconds of one call: the parse's own cost, not how long a loaded machine (or a
    second xdist worker) kept it waiting for a core (wall clock: 64 ms best of 5 at a load
    of 11 where the parse costs 3 ms)."""
    start = time.process_time()
    fn(arg)
    return time.process_time() - start

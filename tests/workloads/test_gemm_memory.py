"""The GEMM and memory workloads' pure parts (dtypes and peaks from the KB, throttling,
the link under load, the sampler on recorded nvidia-smi answers) and a real CPU run."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from dolmen.host.tree import TreeHost
from dolmen.kb import load_kb
from dolmen.workloads import gemm, memory
from dolmen.workloads.engine import Sampler, number, parse_query
from dolmen.workloads.model import Request
from tests.conftest import make_tree


@pytest.mark.parametrize(
    ("model_id", "dtypes", "peaks"),
    [
        ("h100-sxm", ("bf16", "fp16", "tf32", "fp8"), (989, 989, 494.7, 1979)),
        ("h200-sxm", ("bf16", "fp16", "tf32", "fp8"), (989, 989, 494.7, 1979)),
        ("a100-sxm4-80gb", ("bf16", "fp16", "tf32"), (312, 312, 156)),
        ("t4", ("fp16",), (65,)),  # Turing: no BF16, no TF32
        ("a10g", ("bf16", "fp16"), (None, None)),  # no tensor figure: measured only
        (None, ("bf16", "fp16"), (None, None)),  # a model the KB does not know
    ],
)
def test_dtypes_and_peaks_come_from_the_kb(
    model_id: str | None, dtypes: tuple[str, ...], peaks: tuple[float | None, ...]
) -> None:
    model = load_kb().gpus.get(model_id) if model_id else None
    assert gemm.dtypes_for(model) == dtypes
    assert tuple(gemm.peak(model, d) for d in dtypes) == peaks


@pytest.mark.parametrize(
    ("masks", "throttled"),
    [
        ([], None),
        ([0.0, 1.0], False),  # idle
        ([0x1, 0x10], False),  # idle, sync boost: not throttling
        ([0.0, 0x4], True),  # SW power cap
        ([0x40], True),  # HW thermal slowdown
        ([0x80], True),  # HW power brake
    ],
)
def test_throttled(masks: list[float], throttled: bool | None) -> None:
    assert gemm.throttled(masks) is throttled


def test_parse_query_and_number() -> None:
    fields = ("index", "clocks.sm", "power.draw", "reasons")
    text = "0, 1980, 690.12, 0x0000000000000004\n0, [N/A], [Not Supported], \njunk\n1, 2"
    rows = parse_query(text, fields)
    assert rows == [
        {
            "index": "0",
            "clocks.sm": "1980",
            "power.draw": "690.12",
            "reasons": "0x0000000000000004",
        },
        {"index": "0", "clocks.sm": None, "power.draw": None, "reasons": None},
    ]
    assert [number(r["reasons"]) for r in rows] == [4.0, None]
    assert number("x1") is None and number("") is None


def test_the_sampler_falls_back_to_the_older_field_names(tmp_path: Path) -> None:
    new, old, _ = gemm.FIELDS
    argv = lambda fields: (  # noqa: E731
        f"nvidia-smi --query-gpu={','.join(fields)} --format=csv,noheader,nounits --id=0"
    )
    commands = {
        argv(new): ('Field "clocks_event_reasons.active" is not a valid field to query.', 2),
        argv(old): "0, 1755, 700.5, 61, 0x0000000000000020\n",
    }
    host = TreeHost(make_tree(tmp_path, {"etc/hostname": "n\n"}, commands))
    with Sampler(host, 0, gemm.FIELDS, every_s=0.01) as s:
        import time

        time.sleep(0.1)
    assert s.series("clocks.sm")[:1] == [1755.0]
    assert gemm.throttled(s.series("clocks_throttle_reasons.active")) is True


def test_the_sampler_says_why_it_has_nothing(tmp_path: Path) -> None:
    host = TreeHost(make_tree(tmp_path, {"etc/hostname": "n\n"}))
    with Sampler(host, 0, (memory.LINK_MAX, memory.LINK), every_s=0.01) as s:
        pass
    assert s.rows == [] and "nvidia-smi" in s.why


H200 = "nvidia_gpu_exporter__linux-x86_64__nvidia-h200__590.48.01.txt"
# The capture's header names (with their units) of the fields the GEMM samples.
CAPTURED = {
    "index": "index",
    "clocks.sm": "clocks.current.sm [MHz]",
    "power.draw": "power.draw [W]",
    "temperature.gpu": "temperature.gpu",
    "clocks_event_reasons.active": "clocks_event_reasons.active",
}


def _h200_query(state: str) -> str:
    """What ``--query-gpu=<gemm fields> --format=csv,noheader,nounits`` printed on the real
    H200 of nvidia_gpu_exporter's capture (``idle`` or under gpu-burn, ``load``): its
    ``--query-gpu=... --format=csv`` row, these columns, the units dropped (nounits)."""
    from tests.conftest import recording
    from tests.host.gpu.captures import CAPTURES, capture_section

    text = recording(CAPTURES + H200).read_text()
    command = next(x for x in text.splitlines() if x.startswith("# $ nvidia-smi --query-gpu="))
    lines = [x for x in capture_section(H200, state, command[4:].strip()).splitlines() if x]
    header = [h.strip() for h in lines[0].split(",")]
    values = [v.strip() for v in lines[1].split(", ")]
    row = [values[header.index(CAPTURED[f])] for f in gemm.FIELDS[0]]
    return ", ".join(v.rsplit(" ", 1)[0] if v.endswith((" MHz", " W")) else v for v in row) + "\n"


@pytest.mark.parametrize(
    ("state", "clock", "power"), [("load", 1980.0, 627.4), ("idle", None, None)]
)
def test_the_sampler_reads_a_real_h200_query(
    tmp_path: Path, state: str, clock: float | None, power: float | None
) -> None:
    """The nvidia-smi fallback on a host tree holding the real H200's answer: a tree is not
    sampled through NVML (that reads the machine dolmen runs on), and says so."""
    answer = _h200_query(state)
    argv = f"nvidia-smi --query-gpu={','.join(gemm.FIELDS[0])} --format=csv,noheader,nounits --id=0"
    host = TreeHost(make_tree(tmp_path, {"etc/hostname": "n\n"}, {argv: answer}))
    with Sampler(host, 0, gemm.FIELDS, every_s=0.01) as s:
        import time

        time.sleep(0.1)
    assert s.source == "nvidia-smi" and s.rows
    assert s.why.startswith("nvml: not sampled on a recorded host")
    if clock is not None:
        assert s.series("clocks.sm")[0] == clock and s.series("power.draw")[0] == power
        assert s.series("temperature.gpu")[0] == 52.0
    # gpu-burn at 627 W of 700: no clock event; idle: only the idle bit (0x1), not throttling
    assert gemm.throttled(s.series("clocks_event_reasons.active")) is False


def test_on_this_live_host_each_source_says_why_it_sampled_nothing() -> None:
    """No libnvidia-ml and no nvidia-smi here: both fallbacks, their reasons, no rows."""
    from dolmen.host.gpu.nvml_sampler import open_sampler
    from dolmen.host.live import LiveHost

    probe = open_sampler("live", 0, gemm.FIELDS[0], 0.5)
    if not isinstance(probe, str):  # pragma: no cover - a GPU machine
        probe.close()
        pytest.skip("NVML samples here")
    with Sampler(LiveHost(), 0, gemm.FIELDS, every_s=0.01) as s:
        pass
    assert s.rows == [] and s.source == ""
    assert s.why.startswith("nvml: not loaded: ") and "; nvidia-smi: " in s.why


@pytest.mark.parametrize(
    ("rows", "link"),
    [
        (
            [
                {"pcie.link.gen.current": "1", "pcie.link.width.current": "16"},  # idle
                {
                    "pcie.link.gen.current": "5",
                    "pcie.link.width.current": "16",
                    "pcie.link.gen.max": "5",
                    "pcie.link.width.max": "16",
                },
            ],
            {"gen": 5, "width": 16, "gen_max": 5, "width_max": 16},
        ),
        ([{"pcie.link.gen.current": "4", "pcie.link.width.current": None}], None),
        ([], None),
    ],
)
def test_link_under_load(rows: list[dict[str, str | None]], link: dict[str, int] | None) -> None:
    assert memory.link_under_load(rows) == link


def test_a_cpu_run_has_the_json_shapes_of_the_interface() -> None:
    pytest.importorskip("torch", reason="torch is not installed (scripts/ci: torch==2.13.0+cpu)")
    g = gemm.run(Request(device="cpu", budget_s=0.05, smoke=True))
    m = memory.run(Request(device="cpu", budget_s=0.05, smoke=True))
    gj, mj = json.loads(json.dumps(g.to_json())), json.loads(json.dumps(m.to_json()))
    assert [(e["gpu"], e["subject"], e["dtype"]) for e in gj["gpus"]] == [
        (None, "host", "fp32"),
        (None, "host", "bf16"),
    ]
    assert all(e["tflops"] > 0 and e["peak_tflops"] is None for e in gj["gpus"])
    assert set(gj["gpus"][0]["samples"]) == {"clock_mhz", "power_w", "temp_c"}
    assert mj["peer"] is None and mj["gpus"][0]["d2d_gbps"] > 0
    assert mj["gpus"][0]["h2d_gbps"] is None and mj["gpus"][0]["pcie"] is None

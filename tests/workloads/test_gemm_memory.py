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

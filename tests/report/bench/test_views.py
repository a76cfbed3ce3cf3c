"""The terminal view and the comparison of two runs, on the hand-written documents."""

from __future__ import annotations

import pytest

from dolmen.report.bench.compare import compare_rows, notes, render_compare
from dolmen.report.bench.figures import figures, human_bytes
from dolmen.report.bench.terminal import bar, render_bench, sparkline
from tests.report.bench.conftest import fixture_doc


@pytest.mark.parametrize(
    ("values", "top", "line"),
    [
        ([], None, ""),
        ([0, 0], None, "▁▁"),
        ([1, 2, 4, 8], None, "▂▃▅█"),  # from zero, not from the smallest
        ([5, 5], 10, "▅▅"),
        ([20], 10, "█"),  # above the top: clipped, not an index error
        ([-3, 3], None, "▁█"),
    ],
)
def test_sparkline(values: list[float], top: float | None, line: str) -> None:
    assert sparkline(values, top=top) == line


def test_a_long_series_is_averaged_to_the_width() -> None:
    assert sparkline([1.0] * 500 + [0.0] * 500, width=10) == "█████▁▁▁▁▁"


def test_bar_marks_the_peak() -> None:
    assert bar(50, 100, mark=100) == "█" * 15 + "·" * 14 + "|"
    assert bar(100, 100) == "█" * 30
    assert bar(1, 0) == ""


def test_view_of_a_gpu_run() -> None:
    text = "\n".join(render_bench(fixture_doc("h100x8")))
    assert "gpu:0000:18:00.0 bf16      712.40" in text and "72.0% of peak" in text
    assert "throttled under load" in text  # gpu5 of the fixture
    assert "Gen5 x8" in text  # the downtrained slot
    assert "all_reduce x8 nccl" in text and "8B" in text and "1G" in text
    assert "/scratch (builtin)" in text and "IOPS  - read, - write" in text
    assert "Warn     targeted_power gpu5" in text


def test_view_of_a_cpu_run_names_what_was_not_measured() -> None:
    lines = render_bench(fixture_doc("cpu-smoke"))
    assert "smoke sizes: these figures test the machinery, not the machine" in lines
    assert "on the CPU (--device cpu): measured only, no GPU peak or link to hold them to" in lines
    # a host copy, not a device copy with a PCIe link that was "not read": there is none
    memory = lines.index("Memory  GB/s: host memory copy (no device link on the CPU)")
    assert lines[memory + 1].split() == ["host", "6.1"]
    assert not any("link not read" in line for line in lines)
    assert any("no published peak" in line for line in lines)
    assert "GEMM  TFLOP/s per dtype on the CPU" in lines
    assert lines[-1].startswith("dcgm: not measured: dcgmi is not installed")


def test_host_text_is_escaped() -> None:
    doc = fixture_doc("cpu-smoke")
    doc["host"] = "evil\x1b]0;owned\x07"
    doc["results"]["storage"]["mounts"][0]["mount"] = "/mnt/\r\x1b[2J"
    text = "\n".join(render_bench(doc) + render_compare(doc, doc))
    assert "\x1b" not in text and "\r" not in text and "\\x1b" in text


def test_figures_pair_by_key() -> None:
    keys = [f.key for f in figures(fixture_doc("h100x8"))]
    assert len(keys) == len(set(keys))
    assert "gemm/gpu:0000:68:00.0/fp8" in keys
    assert "memory/peer/min" in keys and "collective/all_reduce/8/nccl/peak" in keys
    assert "storage//raid/rand_read_iops" in keys


def test_compare_ratios_and_missing_sides() -> None:
    a = fixture_doc("h100x8")
    b = fixture_doc("h100x8")
    b["results"]["gemm"]["gpus"][0]["tflops"] = a["results"]["gemm"]["gpus"][0]["tflops"] * 1.1
    del b["results"]["gemm"]["gpus"][1]
    b["results"]["storage"]["mounts"].append(
        dict(b["results"]["storage"]["mounts"][0], mount="/new")
    )
    rows = {(r.workload, r.label): r for r in compare_rows(a, b)}
    first = rows[("gemm", "gpu:0000:18:00.0 bf16")]
    assert first.ratio == pytest.approx(1.1)
    gone = rows[("gemm", "gpu:0000:18:00.0 fp8")]
    assert gone.b is None and gone.ratio is None
    new = rows[("storage", "/new sequential read")]
    assert new.a is None and new.b == 24100.0
    assert rows[("storage", "/scratch random read")].ratio is None  # not measured: no ratio
    lines = render_compare(a, b, a_name="before.json", b_name="after.json")
    assert lines[0].startswith("A: before.json  (fixture-h100x8, cuda")
    assert any(line.startswith("gpu:0000:18:00.0 bf16") and "1.100" in line for line in lines)


def test_compare_notes_what_differs() -> None:
    said = notes(fixture_doc("h100x8"), fixture_doc("cpu-smoke"))
    assert said[0] == "note: A ran on cuda, B on cpu"
    assert any("smoke sizes" in n for n in said)
    assert said[-1].startswith("note: B has no dcgm: dcgmi is not installed")


def test_compare_says_which_workloads_a_run_left_out() -> None:
    """A run with --only has neither results nor errors for the rest: its "-" rows once
    came with no note, where a failed workload's come with its reason."""
    a = fixture_doc("h100x8")
    b = fixture_doc("h100x8")
    for name in ("storage", "collective"):
        b["results"].pop(name, None)
        b["errors"].pop(name, None)
    said = notes(a, b)
    assert "note: B has no collective: not run (--only)" in said
    assert "note: B has no storage: not run (--only)" in said
    assert not any(n.startswith("note: A has no") for n in said)
    lines = render_compare(a, b)
    assert "note: B has no storage: not run (--only)" in lines
    assert not any("not run" in n for n in notes(a, a))


def test_a_zero_is_no_ratio() -> None:
    a = fixture_doc("cpu-smoke")
    a["results"]["gemm"]["gpus"][0]["tflops"] = 0.0
    row = compare_rows(a, fixture_doc("cpu-smoke"))[0]
    assert row.a == 0.0 and row.ratio is None


@pytest.mark.parametrize(
    ("n", "text"), [(8, "8B"), (1000, "1000B"), (1024, "1K"), (3 << 20, "3M"), (1 << 30, "1G")]
)
def test_human_bytes(n: int, text: str) -> None:
    assert human_bytes(n) == text

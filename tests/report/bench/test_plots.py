"""The charts: valid PNG (signature, IHDR size) and SVG (parsed as XML), one per chart the
run has data for, whole or absent; drawn by matplotlib for real (the test extra has it)."""

from __future__ import annotations

import os
import struct
import xml.etree.ElementTree as ET
from pathlib import Path
from typing import Any

import pytest

from dolmen.errors import UsageError
from dolmen.report.bench.plots import matplotlib_missing, render, write_plots
from tests.report.bench.conftest import fixture_doc

PNG = b"\x89PNG\r\n\x1a\n"


def png_size(data: bytes) -> tuple[int, int]:
    """The width and height of a PNG, from its IHDR chunk (the first, by the format)."""
    assert data[:8] == PNG, "no PNG signature"
    length, kind = struct.unpack(">I4s", data[8:16])
    assert kind == b"IHDR" and length == 13
    width, height = struct.unpack(">II", data[16:24])
    return width, height


def assert_svg(data: bytes) -> None:
    root = ET.fromstring(data)
    assert root.tag == "{http://www.w3.org/2000/svg}svg"
    assert float(root.attrib["width"].removesuffix("pt")) > 100


@pytest.fixture(scope="module")
def drawn(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Every chart of the 8-GPU document, drawn once (a few seconds on two cores)."""
    assert not matplotlib_missing()
    folder = tmp_path_factory.mktemp("h100x8")
    write_plots(fixture_doc("h100x8"), folder)
    return folder


def test_every_chart_of_a_full_run(drawn: Path) -> None:
    folder = drawn
    names = sorted(p.name for p in folder.iterdir())
    assert names == sorted(
        f"{s}.{f}" for s in ("gemm", "peer", "busbw", "storage") for f in ("png", "svg")
    )
    for stem in ("gemm", "peer", "busbw", "storage"):
        width, height = png_size((folder / f"{stem}.png").read_bytes())
        assert 500 <= width <= 2000 and 300 <= height <= 1400, (stem, width, height)
        assert_svg((folder / f"{stem}.svg").read_bytes())
    svg = (folder / "gemm.svg").read_text()
    assert ">bf16 peak 989.4<" in svg  # text stays text (svg.fonttype none): searchable
    assert not any(p.name.startswith(".") for p in folder.iterdir())  # no temporary left


def test_a_cpu_run_has_no_peer_chart() -> None:
    from dolmen.report.bench import charts

    assert charts.peer_chart(fixture_doc("cpu-smoke")["results"]["memory"], "t") is None


def test_charts_without_data_are_left_out(tmp_path: Path) -> None:
    doc: dict[str, Any] = fixture_doc("cpu-smoke")
    doc["results"] = {
        "gemm": {"gpus": []},
        "collective": {"runs": [{"op": "all_reduce", "world": 1, "backend": "gloo", "points": []}]},
    }
    assert write_plots(doc, tmp_path) == []
    assert list(tmp_path.iterdir()) == []


def test_svg_is_the_same_for_the_same_run(tmp_path: Path) -> None:
    from dolmen.report.bench import charts

    body = fixture_doc("cpu-smoke")["results"]["storage"]
    first = render(charts.storage_chart(body, "t"), "svg")  # type: ignore[arg-type]
    again = render(charts.storage_chart(body, "t"), "svg")  # type: ignore[arg-type]
    assert first == again and b"<dc:date>" not in first


def test_a_fifo_in_place_of_a_chart_is_refused(tmp_path: Path) -> None:
    os.mkfifo(tmp_path / "gemm.png")
    with pytest.raises(UsageError, match="is a FIFO, not a regular file"):
        write_plots(fixture_doc("cpu-smoke"), tmp_path)


def test_host_text_is_drawn_as_text_not_mathtext(tmp_path: Path) -> None:
    doc = fixture_doc("cpu-smoke")
    doc["host"] = "node$\\frac{$"
    doc["results"] = {"storage": doc["results"]["storage"]}
    doc["results"]["storage"]["mounts"][0]["mount"] = "/mnt/$\\sqrt$x"
    assert [p.name for p in write_plots(doc, tmp_path)] == ["storage.png", "storage.svg"]
    assert "/mnt/$\\sqrt$x" in (tmp_path / "storage.svg").read_text()

"""``dolmen baseline show`` never prints ``None`` (issue 17): what the capture could not read
is said to be "not read"."""

from __future__ import annotations

from pathlib import Path

from click.testing import CliRunner

from dolmen.baseline import (
    Baseline,
    BaselineGpu,
    BaselineLink,
    BaselinePort,
    describe_baseline,
    dump_baseline,
)
from dolmen.cli.group import cli

EMPTY = Baseline(
    gpus=(BaselineGpu("0000:53:00.0", None, None, None, None, None),),
    ib_ports=(BaselinePort("mlx5_0", 1, None, None, None),),
    pcie=(BaselineLink("0000:04:00.0", None, None, None, None),),
)


def test_nothing_read_is_said_so() -> None:
    text = "\n".join(describe_baseline(EMPTY))
    assert "None" not in text
    assert "gpu 0000:53:00.0  model not read  VBIOS not read  PCIe link not read" in text
    assert "driver not read  CUDA not read" in text
    assert "ib mlx5_0/1  rate not read" in text


def test_what_was_read_is_printed() -> None:
    full = Baseline(
        gpus=(BaselineGpu("0000:53:00.0", "NVIDIA H100 80GB HBM3", "96.00.99", 5, 16, 18),),
        driver_version="580.105.08",
        memory_bytes=2 << 40,
        cpu_model="Xeon",
        cpu_threads=224,
    )
    lines = describe_baseline(full)
    assert "gpu 0000:53:00.0  NVIDIA H100 80GB HBM3  VBIOS 96.00.99  Gen5 x16  NVLinks 18" in lines
    assert "memory 2048 GiB  CPU Xeon x224  NVMe not read" in lines


def test_show_prints_no_none(tmp_path: Path) -> None:
    path = tmp_path / "b.json"
    path.write_text(dump_baseline(EMPTY))
    result = CliRunner().invoke(cli, ["baseline", "show", str(path)])
    assert result.exit_code == 0 and "None" not in result.output and "not read" in result.output

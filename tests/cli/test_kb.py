"""``dolmen kb``: in-process runs of every subcommand, text and JSON, and the exit codes
(0 answered, 1 driver not enough, 2 unknown name with the valid choices on one line)."""

from __future__ import annotations

import json

import pytest

from dolmen.cli.main import main
from tests.report.contract import assert_valid


def run(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str, str]:
    rc = main(["kb", *args])
    out, err = capsys.readouterr()
    return rc, out, err


def test_cuda_version(capsys: pytest.CaptureFixture[str]) -> None:
    rc, out, _ = run(capsys, "cuda", "12.4")
    assert rc == 0
    assert "550.54.14" in out and "525.60.13" in out and "docs.nvidia.com" in out


def test_cuda_all_json(capsys: pytest.CaptureFixture[str]) -> None:
    rc, out, _ = run(capsys, "cuda", "--json")
    doc = assert_valid(json.loads(out))
    assert rc == 0
    assert {f["major"] for f in doc["families"]} == {11, 12, 13}
    assert any(t["versions"] == ["12.6.1", "12.6.2"] for t in doc["toolkits"])
    assert all(t["source"] for t in doc["toolkits"])


def test_cuda_table_text(capsys: pytest.CaptureFixture[str]) -> None:
    rc, out, _ = run(capsys, "cuda")
    assert rc == 0 and "13.1 GA" in out and "590.44.01" in out and "(unverified)" in out


def test_unknown_cuda_names_valid_choices(capsys: pytest.CaptureFixture[str]) -> None:
    rc, out, err = run(capsys, "cuda", "14.0")
    assert rc == 2 and out == ""
    first = err.splitlines()[0]
    assert "unknown CUDA version '14.0'" in first and "13.1" in first and "11.0" in first


@pytest.mark.parametrize(
    ("driver", "cuda", "rc", "word"),
    [
        ("550.54.15", "12.4", 0, "native"),
        ("535.54.03", "12.4", 0, "minor-version"),
        ("470.74", "12.4", 1, "too-old"),
        ("384.111", "11.8", 1, "too-old"),
    ],
)
def test_check_driver(
    capsys: pytest.CaptureFixture[str], driver: str, cuda: str, rc: int, word: str
) -> None:
    code, out, _ = run(capsys, "check-driver", driver, "--cuda", cuda)
    assert code == rc and word in out
    code, out, _ = run(capsys, "check-driver", driver, "--cuda", cuda, "--json")
    doc = assert_valid(json.loads(out))
    assert code == rc and doc["mode"] == word and doc["ok"] is (rc == 0) and doc["why"]


@pytest.mark.parametrize(
    ("args", "needle"),
    [
        (("check-driver", "latest", "--cuda", "12.4"), "not a driver version"),
        (("check-driver", "550.54.15", "--cuda", "twelve"), "not a CUDA version"),
        (("check-driver", "440.33", "--cuda", "10.2"), "not in the knowledge base"),
        (("gpu", "no-such-board"), "valid ids: a100-sxm4-40gb"),
        (("ngc", "99.99"), "known releases: 25.12"),
        (("xid", "99999"), "unknown Xid '99999'"),
        (("xid", "abc"), "unknown Xid 'abc'"),
    ],
)
def test_unknown_or_malformed_exit_2(
    capsys: pytest.CaptureFixture[str], args: tuple[str, ...], needle: str
) -> None:
    rc, out, err = run(capsys, *args)
    assert rc == 2 and out == ""
    assert needle in err.splitlines()[0]


def test_gpu_by_product_name(capsys: pytest.CaptureFixture[str]) -> None:
    rc, out, _ = run(capsys, "gpu", "NVIDIA H100 80GB HBM3")
    assert rc == 0 and "[h100-sxm]" in out and "3350 GB/s" in out and "900 GB/s" in out
    assert "[h100-pcie]" not in out


def test_gpu_partial_name_lists_every_match(capsys: pytest.CaptureFixture[str]) -> None:
    rc, out, _ = run(capsys, "gpu", "h100", "--json")
    doc = assert_valid(json.loads(out))
    assert rc == 0 and {m["id"] for m in doc["gpus"]} == {"h100-sxm", "h100-pcie", "h100-nvl"}


def test_gpu_marks_unverified_figures(capsys: pytest.CaptureFixture[str]) -> None:
    rc, out, _ = run(capsys, "gpu", "h100-pcie")
    assert rc == 0
    lines = {ln.split()[0]: ln for ln in out.splitlines() if ln.startswith("  ")}
    assert "(unverified)" in lines["bf16"] and "(unverified)" not in lines["TDP"]


def test_gpu_table(capsys: pytest.CaptureFixture[str]) -> None:
    rc, out, _ = run(capsys, "gpu")
    assert rc == 0 and "gb200" in out and "rtx-pro-6000-blackwell-maxq" in out


def test_ngc(capsys: pytest.CaptureFixture[str]) -> None:
    rc, out, _ = run(capsys, "ngc", "24.05")
    assert rc == 0 and "12.4.1" in out and "550.54.15" in out and "470.57" in out
    rc, out, _ = run(capsys, "ngc", "24.07")
    assert rc == 0 and "9.2.1 (unverified)" in out
    rc, out, _ = run(capsys, "ngc", "--json")
    doc = assert_valid(json.loads(out))
    releases = doc["releases"]
    assert rc == 0 and releases[0]["release"] == "23.10"
    assert releases[-1]["cuda_min_driver"] == "590.44.01"


def test_xid(capsys: pytest.CaptureFixture[str]) -> None:
    rc, out, _ = run(capsys, "xid", "79")
    assert rc == 0 and out.startswith("Xid 79") and "source" in out
    rc, out, _ = run(capsys, "xid", "48", "--json")
    assert rc == 0 and assert_valid(json.loads(out))["code"] == 48
    rc, out, _ = run(capsys, "xid")
    assert rc == 0 and "severity" in out.splitlines()[0]

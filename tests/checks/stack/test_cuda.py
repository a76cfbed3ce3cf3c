"""stack.cuda.driver_compat and stack.nvcc on host trees.

Real inputs: nvidia-smi XMLs (driver 535.54.03 / CUDA 12.2 on an A100, 580.105.08 /
CUDA 13.0 on 8x H100, 384.111 without a CUDA version on a GT 730) and nvcc output
quoted in an NVIDIA/nccl issue (release 12.4, V12.4.131). Synthetic: the toolkits'
version.json files (their real layout: {"cuda": {"version": ...}}) and the NVRM line.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from dolmen.checks.model import Status
from tests.checks.stack.hosts import (
    NVSMI,
    OS_RELEASE,
    XML_A100_535,
    XML_GT730_384,
    XML_H100_580,
    by_subject,
    gpus_on_bus,
    link,
    run,
)
from tests.conftest import make_tree, recording

COMPAT = "stack.cuda.driver_compat"
NVCC = "stack.nvcc"
NVCC_EXCERPTS = "cuda-env/issues__nvcc-version-excerpts.md"


def _version_json(version: str) -> str:
    return json.dumps({"cuda": {"name": "CUDA SDK", "version": version}})


def _nvcc_12_4() -> str:
    text = recording(NVCC_EXCERPTS).read_text()
    block = re.findall(r"```\n(.*?)```", text, re.S)[0]
    return block.split("$ nvidia-smi")[0].replace("$ nvcc -V\n", "")


def _host(root: Path, xml: str, toolkits: dict[str, str | None], **extra: str) -> Path:
    files = {**gpus_on_bus(1), "etc/os-release": OS_RELEASE["ubuntu"], **extra}
    for folder, version in toolkits.items():
        files[f"usr/local/{folder}/version.json" if version else f"usr/local/{folder}/README"] = (
            _version_json(version) if version else "no version here\n"
        )
    return make_tree(root, files=files, commands={NVSMI: recording(xml).read_text()})


# --- stack.cuda.driver_compat -------------------------------------------------------------


@pytest.mark.parametrize(
    ("version", "status", "words"),
    [
        ("12.2.0", Status.PASS, "runs natively on driver 535.54.03"),
        ("12.4.1", Status.WARN, "minor-version compatibility"),
        ("13.0.2", Status.FAIL, "older than 580, the CUDA 13.x family minimum"),
    ],
)
def test_compat_535_driver(tmp_path: Path, version: str, status: Status, words: str) -> None:
    """The A100's 535.54.03 (CUDA 12.2): 12.2 native, 12.4 by minor-version, 13.0 too old."""
    root = _host(tmp_path, XML_A100_535, {f"cuda-{version[:4]}": version})
    [f] = run(root, COMPAT)
    assert f.status is status and f.subject == f"cuda:/usr/local/cuda-{version[:4]}"
    assert words in f.summary
    assert f.evidence["driver"] == "535.54.03" and f.evidence["driver_cuda"] == "12.2"
    if status is not Status.PASS:
        assert f.remedy is not None
        assert "nvidia-driver-" in f.remedy and "-server-open" in f.remedy  # Ubuntu's packages
        assert "cuda-compat-" in f.remedy


def test_compat_one_finding_per_toolkit(tmp_path: Path) -> None:
    root = _host(
        tmp_path,
        XML_H100_580,
        {"cuda-12.4": "12.4.1", "cuda-13.0": "13.0.2", "cuda-13.1": "13.1.0", "cuda-x": None},
    )
    found = by_subject(run(root, COMPAT))
    assert found["cuda:/usr/local/cuda-12.4"].status is Status.PASS
    assert found["cuda:/usr/local/cuda-13.0"].status is Status.PASS
    # 13.1 needs 590.44.01: 580.105.08 runs it by minor-version compatibility only.
    assert found["cuda:/usr/local/cuda-13.1"].status is Status.WARN
    assert found["cuda:/usr/local/cuda-x"].status is Status.UNKNOWN


def test_compat_toolkit_unknown_to_the_kb(tmp_path: Path) -> None:
    """A minor release the KB does not list falls under its family's rule (13.9: minor-version);
    an unknown major is decided by the driver's own CUDA version when there is one (13.0 on
    the H100 XML), else unknown (the GT 730's 384.111 reports none)."""
    root = _host(tmp_path / "a", XML_H100_580, {"cuda-14.0": "14.0.0", "cuda-13.9": "13.9.0"})
    found = by_subject(run(root, COMPAT))
    assert found["cuda:/usr/local/cuda-13.9"].status is Status.WARN
    assert "not in the release-notes table" in found["cuda:/usr/local/cuda-13.9"].summary
    assert found["cuda:/usr/local/cuda-14.0"].status is Status.FAIL
    assert "driver reports CUDA 13.0" in found["cuda:/usr/local/cuda-14.0"].summary
    root = _host(tmp_path / "b", XML_GT730_384, {"cuda-14.0": "14.0.0"})
    [f] = run(root, COMPAT)
    assert f.status is Status.UNKNOWN and "not in the knowledge base" in f.summary


def test_compat_skip_without_toolkit(tmp_path: Path) -> None:
    (tmp_path / "a/usr/local").mkdir(parents=True)  # a host that recorded usr/local: none
    [f] = run(_host(tmp_path / "a", XML_H100_580, {}), COMPAT)
    assert f.status is Status.SKIP and "supports CUDA 13.0" in f.summary
    [f] = run(_host(tmp_path / "b", XML_H100_580, {}), COMPAT)
    assert f.status is Status.SKIP and f.summary == "not in this bundle: usr/local"


def test_compat_unknown_without_driver(tmp_path: Path) -> None:
    root = make_tree(
        tmp_path,
        files={**gpus_on_bus(1), "usr/local/cuda-13.0/version.json": _version_json("13.0.2")},
        commands={NVSMI: ("", 9, "couldn't communicate with the NVIDIA driver\n")},
    )
    [f] = run(root, COMPAT)
    assert f.status is Status.UNKNOWN and f.evidence["toolkits"] == {
        "/usr/local/cuda-13.0": "13.0.2"
    }


# --- stack.nvcc -----------------------------------------------------------------------------


def _nvcc_host(root: Path, xml: str, toolkits: dict[str, str], default: str | None) -> Path:
    _host(root, xml, toolkits)
    make_tree(root, commands={"nvcc --version": _nvcc_12_4()})
    if default:
        link(root, "usr/local/cuda", default)
    return root


def test_nvcc_pass(tmp_path: Path) -> None:
    root = _nvcc_host(tmp_path, XML_H100_580, {"cuda-12.4": "12.4.1"}, "cuda-12.4")
    [f] = run(root, NVCC)
    assert f.status is Status.PASS and "12.4.131" in f.summary
    assert f.evidence["cuda_default"] == "/usr/local/cuda-12.4"


def test_nvcc_warn_not_the_default_toolkit(tmp_path: Path) -> None:
    root = _nvcc_host(
        tmp_path, XML_H100_580, {"cuda-12.4": "12.4.1", "cuda-13.0": "13.0.2"}, "cuda-13.0"
    )
    [f] = run(root, NVCC)
    assert f.status is Status.WARN
    assert "nvcc is CUDA 12.4 but /usr/local/cuda is CUDA 13.0.2" in f.summary


def test_nvcc_warn_from_no_toolkit(tmp_path: Path) -> None:
    root = _nvcc_host(tmp_path, XML_H100_580, {"cuda-13.0": "13.0.2"}, None)
    [f] = run(root, NVCC)
    assert f.status is Status.WARN and "none of the installed toolkits (13.0.2)" in f.summary


def test_nvcc_vs_driver(tmp_path: Path) -> None:
    """nvcc 12.4 on driver 535.54.03: minor-version compatibility at best (warn)."""
    root = _nvcc_host(tmp_path, XML_A100_535, {"cuda-12.4": "12.4.1"}, "cuda-12.4")
    [f] = run(root, NVCC)
    assert f.status is Status.WARN and "minor-version" in f.summary
    assert f.evidence["driver"] == "535.54.03"


def test_nvcc_skip_and_unknown(tmp_path: Path) -> None:
    [f] = run(_host(tmp_path / "a", XML_H100_580, {}), NVCC)
    assert f.status is Status.SKIP
    root = _host(tmp_path / "b", XML_H100_580, {})
    make_tree(root, commands={"nvcc --version": ("", 139, "Segmentation fault\n")})
    [f] = run(root, NVCC)
    assert f.status is Status.UNKNOWN and "command failed" in f.summary

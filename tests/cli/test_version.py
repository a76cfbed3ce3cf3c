"""``dolmen version``: dolmen, Python, the driver and NVML; what cannot be read is unknown
with its reason (this machine has no NVIDIA driver: the live run shows exactly that), and
the JSON holds dolmen.version/1."""

from __future__ import annotations

import json
import platform
from pathlib import Path
from typing import Any

import pytest

from dolmen import __version__
from dolmen.cli.main import main
from dolmen.cli.version import collect, render
from dolmen.host.gpu.versions import read_nvml_version
from dolmen.host.tree import TreeHost
from tests.conftest import make_tree
from tests.facts.test_stack import OPEN_580, PROPRIETARY_550
from tests.host.gpu.test_read import FakeNvml
from tests.report.contract import assert_valid


def test_live_run_says_what_it_could_not_read(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["version", "--json"]) == 0
    doc = assert_valid(json.loads(capsys.readouterr().out))
    assert doc["dolmen"] == __version__ and doc["python"]["version"] == platform.python_version()
    for part in ("driver", "nvml"):  # either read, or null with a reason: never a bare null
        assert doc[part]["version"] or doc[part]["reason"]
    assert main(["version"]) == 0
    out = capsys.readouterr().out
    assert out.splitlines()[0] == f"dolmen        {__version__}"
    assert [line.split()[0] for line in out.splitlines()] == [
        "dolmen", "python", "driver", "nvml", "nvidia-ml-py",
    ]  # fmt: skip


@pytest.mark.parametrize(
    ("files", "version", "flavour", "reason"),
    [
        ({"proc/driver/nvidia/version": OPEN_580}, "580.95.05", "open", None),
        ({"proc/driver/nvidia/version": PROPRIETARY_550}, "550.135", "proprietary", None),
        ({"proc/driver/nvidia/version": OPEN_580[:30]}, None, None, "malformed"),  # cut
        ({"proc/driver/nvidia/version": "\x00\xffjunk"}, None, None, "malformed"),
        ({"proc/cpuinfo": "processor: 0\n"}, None, None, "missing: proc/driver/nvidia/version"),
    ],
    ids=["open-580", "proprietary-550", "cut", "junk", "no-driver"],
)
def test_driver_from_the_kernel_module(
    tmp_path: Path, files: dict[str, str], version: str | None, flavour: str | None,
    reason: str | None,
) -> None:  # fmt: skip
    doc = collect(TreeHost(make_tree(tmp_path, files=files)))
    assert_valid(doc)
    assert (doc["driver"]["version"], doc["driver"]["flavour"]) == (version, flavour)
    assert reason is None or doc["driver"]["reason"].startswith(reason)
    # a host tree's NVML is not here: unknown, saying why, never "absent"
    assert doc["nvml"] == {
        "version": None,
        "reason": "not read: NVML is read on a live host only (tree)",
    }


def test_nvml_version_and_its_failures(tmp_path: Path) -> None:
    host = TreeHost(make_tree(tmp_path, files={"proc/driver/nvidia/version": OPEN_580}))
    doc = collect(host, nvml=lambda: ("12.580.95.05", None))
    assert doc["nvml"] == {"version": "12.580.95.05"}
    assert "12.580.95.05" in render(assert_valid(doc))
    doc = collect(host, nvml=lambda: (None, "not loaded: NVML Shared Library Not Found"))
    assert "nvml          unknown (not loaded: NVML Shared Library Not Found)" in render(doc)


class _Versioned(FakeNvml):
    def nvmlSystemGetNVMLVersion(self) -> Any:
        return b"12.580.95.05"  # older nvidia-ml-py returns bytes


def test_nvml_version_is_read_in_the_worker() -> None:
    """The host layer's reader: NVML's answer (bytes as text), or the reason it gave none."""
    assert read_nvml_version(lib=_Versioned()) == ("12.580.95.05", None)
    pynvml = pytest.importorskip("pynvml")
    broken = FakeNvml(fail={"nvmlInit": pynvml.NVML_ERROR_DRIVER_NOT_LOADED})
    version, why = read_nvml_version(lib=broken)
    assert version is None and why is not None and why.startswith("not loaded: "), why
    assert read_nvml_version(lib=FakeNvml()) == (
        None, "not supported: nvidia-ml-py has no nvmlSystemGetNVMLVersion",
    )  # fmt: skip

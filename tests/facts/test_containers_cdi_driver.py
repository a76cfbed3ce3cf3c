"""CdiSpec.driver_version: the driver a CDI spec was generated for (real excerpts)."""

from __future__ import annotations

import json
import re

import pytest

from dolmen.facts.containers import parse_cdi_spec
from tests.conftest import recording

CDI_EXCERPTS = "cuda-env/issues__cdi-spec-excerpts.md"


def _excerpts() -> list[str]:
    return re.findall(r"```\n(.*?)```", recording(CDI_EXCERPTS).read_text(), re.S)


def test_real_excerpts_name_their_driver() -> None:
    """The 575 spec passes --host-driver-version to its hook; the 460 one mounts
    libnvidia-ml.so.460.91.03 (both cut short by the index: the version is still read)."""
    first, second = _excerpts()[:2]
    assert parse_cdi_spec("a.yaml", first).driver_version == "575.57.08"
    assert parse_cdi_spec("b.yaml", second).driver_version == "460.91.03"


def test_json_spec_library_mount() -> None:
    doc = {
        "cdiVersion": "0.6.0",
        "kind": "nvidia.com/gpu",
        "devices": [{"name": "0"}],
        "containerEdits": {
            "mounts": [{"hostPath": "/usr/lib64/libcuda.so.550.54.15", "containerPath": "x"}]
        },
    }
    assert parse_cdi_spec("s.json", json.dumps(doc)).driver_version == "550.54.15"


@pytest.mark.parametrize(
    "text",
    [
        "",
        "kind: nvidia.com/gpu\ncdiVersion: 0.5.0\n",
        "libcuda.so.1\nlibcuda.so\n",  # unversioned names say nothing
        "\x00\xff libcuda.so.550.54.15",  # binary junk is rejected before any search
        "{",
    ],
)
def test_no_driver_named(text: str) -> None:
    assert parse_cdi_spec("x.yaml", text).driver_version is None

"""``dcgmi nvlink --link-status``: the real DCGM 3.3.7 output (DCGM#198, all 18 links of
two H100 NVL Down), plus cut, junk and hostile text; detected as a pasted kind."""

from __future__ import annotations

import pytest

from dolmen.facts.gpu_nvlink import parse_dcgmi_link_status
from dolmen.host.gpu import NOT_SUPPORTED
from dolmen.host.paste.detect import detect
from tests.conftest import recording


def _real() -> str:
    text = recording("dcgm/issues__dcgmi-diag-excerpts.md").read_text()
    return text[text.index("+----------------------+") : text.index("dcgmi diag -r 2")]


def test_real_all_down() -> None:
    gpus = parse_dcgmi_link_status(_real())
    assert [g.position for g in gpus] == [0, 1]
    assert all(len(g.links) == 18 and {lk.state for lk in g.links} == {"down"} for g in gpus)
    found = detect(_real())
    assert found is not None and found.kind.name == "dcgm-nvlink" and found.count == 2


@pytest.mark.parametrize(
    ("text", "want"),
    [
        (
            "gpuId 0:\n    U U D X _ _\n",
            [(0, [(0, "up"), (1, "up"), (2, "down"), (3, "disabled")])],
        ),
        ("gpuId 3:\n    _ _ _\n", [(3, [])]),
        ("gpuId 0:\n    U U\n    gpuId 1:\n", [(0, [(0, "up"), (1, "up")]), (1, [])]),  # cut
        ("gpuId 0:\n  junk here\n    U U\n", [(0, [])]),  # the row must be right under it
        ("", []),
        ("U D U\nD D\n", []),  # states with no gpuId
        ("gpuId 99999:\nU\n", []),  # not a GPU id DCGM writes
        ("\x00\xffgpuId 0:\n" * 3, []),
    ],
)
def test_table(text: str, want: list[tuple[int, list[tuple[int, str]]]]) -> None:
    got = [
        (g.position, [(lk.link, lk.state) for lk in g.links]) for g in parse_dcgmi_link_status(text)
    ]
    assert got == want


def test_no_link_supported_is_not_supported() -> None:
    (g,) = parse_dcgmi_link_status("gpuId 3:\n    _ _ _\n")
    assert g.note == NOT_SUPPORTED

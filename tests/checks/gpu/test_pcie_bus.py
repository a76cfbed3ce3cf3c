"""gpu.pcie.link from the PCI listing alone (issue 8): ``lspci -vvv`` pasted without
nvidia-smi. The real 8x H100 HGX listing, edited where a fault is wanted (the lines are
lspci's own, only the numbers change), a small GPU-only switch written as lspci prints
one, and the listing cut at every place, junk and access-denied variants."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from dolmen.checks.model import Status
from dolmen.facts.pci.lspci import parse_lspci_vvv
from tests.checks.helpers import by_subject, run_check
from tests.conftest import make_tree, recording

LINK = "gpu.pcie.link"
HGX = "lspci/gpud__lspci-vvv"
GPUS = ("19", "3b", "4c", "5d", "9b", "bb", "cb", "db")


def _judge(tmp_path: Path, text: str) -> dict[str, object]:
    return by_subject(run_check(make_tree(tmp_path, commands={"lspci -vvv": text}), LINK))


def _edit_block(text: str, header: str, find: str, replace: str) -> str:
    """``find`` -> ``replace`` inside the device block that starts with ``header``."""
    start = text.index(f"\n{header} ") + 1
    end = text.find("\n\n", start)
    block = text[start:end]
    assert find in block
    return text[:start] + block.replace(find, replace, 1) + text[end:]


def test_the_real_listing_gives_every_gpu_its_parents() -> None:
    devices = {d.bdf: d for d in parse_lspci_vvv(recording(HGX).read_text())}
    assert devices["0000:19:00.0"].parent == "0000:17:01.0"  # the switch's downstream port
    assert devices["0000:17:01.0"].parent == "0000:16:00.0"  # its upstream port
    assert devices["0000:16:00.0"].parent == "0000:15:01.0"  # the root port
    assert devices["0000:15:01.0"].parent is None  # on the root bus


def test_the_real_hgx_passes_every_gpu_from_lspci(tmp_path: Path) -> None:
    by = _judge(tmp_path, recording(HGX).read_text())
    for bus in GPUS:
        f = by[f"gpu:00000000:{bus.upper()}:00.0"]
        assert f.status is Status.PASS and "Gen5 x16, the maximum (lspci)" in f.summary  # type: ignore[attr-defined]
        assert f.evidence["slot"] is not None  # type: ignore[attr-defined]
    # the switches above hold NVMe drives and NICs too: system.pcie.downgraded's links
    assert not [s for s in by if s.startswith("pci:")]


def test_missing_lanes_fail_on_the_gpu(tmp_path: Path) -> None:
    text = _edit_block(
        recording(HGX).read_text(), "3b:00.0", "Width x16 (ok)", "Width x8 (downgraded)"
    )
    by = _judge(tmp_path, text)
    f = by["gpu:00000000:3B:00.0"]
    assert f.status is Status.FAIL and "width x8 of x16" in f.summary  # type: ignore[attr-defined]
    others = [by[f"gpu:00000000:{b.upper()}:00.0"].status for b in GPUS if b != "3b"]  # type: ignore[attr-defined]
    assert set(others) == {Status.PASS}


def test_a_slower_gpu_link_is_unknown_without_its_load(tmp_path: Path) -> None:
    """A GPU lowers its link speed at idle: without nvidia-smi's load, neither pass nor fail."""
    text = _edit_block(
        recording(HGX).read_text(),
        "19:00.0",
        "LnkSta:\tSpeed 32GT/s (ok)",
        "LnkSta:\tSpeed 2.5GT/s (downgraded)",
    )
    f = _judge(tmp_path, text)["gpu:00000000:19:00.0"]
    assert f.status is Status.UNKNOWN  # type: ignore[attr-defined]
    assert "Gen1 of Gen5" in f.summary and "load is unread" in f.summary  # type: ignore[attr-defined]


def _switch(up_sta: str, gpu_sta: str = "Speed 32GT/s (ok), Width x16 (ok)") -> str:
    """A root port, a GPU-only PCIe switch (upstream and downstream port), a GPU; lspci's
    own line forms (trimmed to the lines dolmen reads)."""

    def block(head: str, bus: str | None, cap: str, sta: str) -> str:
        lines = [head]
        if bus:
            lines.append(
                f"\tBus: primary={bus[:2]}, secondary={bus[3:5]}, subordinate={bus[6:]}, sec-latency=0"
            )
        lines += [f"\t\tLnkCap:\tPort #0, {cap}, ASPM L1", f"\t\tLnkSta:\t{sta}"]
        return "\n".join(lines)

    gen5 = "Speed 32GT/s, Width x16"
    return (
        "\n\n".join(
            [
                block(
                    "00:01.0 PCI bridge [0604]: Intel Corporation Device [8086:352a]",
                    "00,01,03",
                    gen5,
                    "Speed 32GT/s (ok), Width x16 (ok)",
                ),
                block(
                    "01:00.0 PCI bridge [0604]: Broadcom / LSI PEX890xx PCIe Gen 5 Switch [1000:c030]",
                    "01,02,03",
                    gen5,
                    up_sta,
                ),
                block(
                    "02:00.0 PCI bridge [0604]: Broadcom / LSI PEX890xx PCIe Gen 5 Switch [1000:c030]",
                    "02,03,03",
                    gen5,
                    gpu_sta,
                ),
                block(
                    "03:00.0 3D controller [0302]: NVIDIA Corporation Device [10de:2330] (rev a1)",
                    None,
                    gen5,
                    gpu_sta,
                ),
            ]
        )
        + "\n"
    )


@pytest.mark.parametrize(
    ("uplink", "status", "words"),
    [
        ("Speed 32GT/s (ok), Width x16 (ok)", Status.PASS, "Gen5 x16, the maximum"),
        ("Speed 32GT/s (ok), Width x8 (downgraded)", Status.FAIL, "width x8 of x16"),
        ("Speed 16GT/s (downgraded), Width x16 (ok)", Status.WARN, "Gen4 of Gen5"),
    ],
)
def test_the_uplink_of_a_gpu_only_switch_is_judged(
    tmp_path: Path, uplink: str, status: Status, words: str
) -> None:
    by = _judge(tmp_path, _switch(uplink))
    assert by["gpu:00000000:03:00.0"].status is Status.PASS  # type: ignore[attr-defined]
    f = by["pci:0000:01:00.0"]
    assert f.status is status and words in f.summary  # type: ignore[attr-defined]
    assert f.evidence["gpu_below"] == "0000:03:00.0" and f.evidence["slot"] == "0000:00:01.0"  # type: ignore[attr-defined]


def test_a_gpu_whose_port_is_not_shown_warns_on_missing_lanes(tmp_path: Path) -> None:
    """Cut above the GPU: its own maximum alone, which a narrower slot would explain."""
    text = _switch("Speed 32GT/s (ok), Width x16 (ok)", "Speed 32GT/s (ok), Width x8 (ok)")
    gpu_only = text[text.index("03:00.0 3D controller") :]
    f = _judge(tmp_path, gpu_only)["gpu:00000000:03:00.0"]
    assert f.status is Status.WARN and "slot is narrower" in f.summary  # type: ignore[attr-defined]


def test_access_denied_and_plain_lspci_leave_it_unknown(tmp_path: Path) -> None:
    """lspci without root prints no link; lspci without -vvv neither: nothing to judge."""
    denied = re.sub(r"\t\tLnk(Cap|Sta|Ctl)[^\n]*\n", "", recording(HGX).read_text())
    by = _judge(tmp_path / "a", denied)
    assert [f.status for f in by.values()] == [Status.UNKNOWN]  # type: ignore[attr-defined]
    by = _judge(tmp_path / "b", recording("lspci/gpud__lspci.nn.a100").read_text())
    assert [f.status for f in by.values()] == [Status.UNKNOWN]  # type: ignore[attr-defined]


def test_cut_anywhere_never_fails_a_healthy_listing(tmp_path: Path) -> None:
    """The real listing cut at many places (a paste cut short): whatever is left is judged
    or unknown, never failed, and nothing raises."""
    lines = recording(HGX).read_text().splitlines(keepends=True)
    for i, cut in enumerate(range(1, len(lines), 487)):
        by = _judge(tmp_path / str(i), "".join(lines[:cut]))
        bad = [(s, f.summary) for s, f in by.items() if f.status in (Status.FAIL, Status.ERROR)]  # type: ignore[attr-defined]
        assert not bad, (cut, bad)


@pytest.mark.parametrize(
    "junk",
    [
        "",
        "19:00.0 3D controller: NVIDIA Corporation Device 2330\n\t\tLnkSta:\tSpeed fastGT/s, Width xwide\n",
        "03:00.0 3D controller [0302]: NVIDIA Corporation Device [10de:2330]\n\t\tLnkCap:\tSpeed 32GT/s, Width x16\n\t\tLnkSta:\tSpeed 32GT/s\n",
        "\x00\x01 not lspci at all \u202e\n" * 50,
    ],
)
def test_junk_is_never_a_fault(tmp_path: Path, junk: str) -> None:
    by = _judge(tmp_path, junk)
    assert not [f for f in by.values() if f.status in (Status.FAIL, Status.ERROR)]  # type: ignore[attr-defined]

"""A GPU exists if any source shows it (issue 8): PCI tree, inventory, a cut XML, the
driver's proc files, lspci, nvidia-smi nvlink, the kernel log's NVRM lines. Each bundle
here holds one source alone, as users paste them; absent sources are "not in this bundle"."""

from __future__ import annotations

from pathlib import Path

import pytest

from dolmen.checks.context import PREDICATES, Context
from dolmen.checks.model import Status
from dolmen.facts.gpu import (
    INVENTORY,
    LSPCI,
    NVLINK,
    PCI_TREE,
    collect,
    parse_xml_gpu_ids,
)
from dolmen.facts.pci import PciDevice, is_gpu
from dolmen.facts.reading import READ
from dolmen.host import open_host
from dolmen.values.busid import BusId
from tests.checks.helpers import run_check
from tests.conftest import make_tree, recording

H100_XML = "nvidia-smi-xml/k8s-test-infra__hardware__qx-h100.xml"
XID48 = "[Tue Jun  4 10:00:00 2024] NVRM: Xid (PCI:0000:19:00): 48, pid=1234, name=python, DBE\n"
NO_DRIVER = (
    "NVIDIA-SMI has failed because it couldn't communicate with the NVIDIA driver. "
    "Make sure that the latest NVIDIA driver is installed and running.\n"
)


def _applies(root: Path) -> str | None:
    return PREDICATES["nvidia_gpu"][0](Context(open_host(root)))


def test_empty_bundle_names_what_it_lacks(tmp_path: Path) -> None:
    facts = collect(open_host(make_tree(tmp_path)))
    assert not facts.present and facts.seen == ()
    assert facts.sources[PCI_TREE] == "not in this bundle: sys/bus/pci/devices"
    assert facts.sources[INVENTORY] == "not in this bundle: nvidia-smi -q -x"
    reason = _applies(tmp_path)
    assert reason is not None and reason.startswith("no NVIDIA GPU seen: no GPU source read")
    assert "not in this bundle: PCI tree, GPU driver inventory" in reason
    assert "kernel log" in reason


def test_sysfs_without_gpus_is_read(tmp_path: Path) -> None:
    """A tree that recorded sys/bus/pci with no NVIDIA function: read, and none there."""
    root = make_tree(
        tmp_path,
        files={"sys/bus/pci/devices/0000:00:00.0/vendor": "0x8086\n"},
        commands={"dmesg": "[    0.000000] Linux version 6.8.0\n"},
    )
    facts = collect(open_host(root))
    assert not facts.present and facts.sources[PCI_TREE] == READ
    reason = _applies(root)
    assert reason is not None and reason.startswith("no NVIDIA GPU seen: PCI tree, ")
    assert "kernel log" in reason.split(";")[0]  # the log was read, and names none


def test_dmesg_alone_draws_the_xid_on_its_gpu(tmp_path: Path) -> None:
    root = make_tree(tmp_path, commands={"dmesg": XID48})
    assert _applies(root) is None
    findings = run_check(root, "gpu.xid")
    by = {f.subject: f for f in findings}
    f = by["gpu:00000000:19:00.0"]
    assert f.status is Status.FAIL and "48" in f.summary


def test_lspci_alone_lists_eight_h100s(tmp_path: Path) -> None:
    text = recording("lspci/gpud__lspci-vvv").read_text()
    facts = collect(open_host(make_tree(tmp_path, commands={"lspci -vvv": text})))
    assert facts.present and facts.sources[LSPCI] == READ
    assert len(facts.seen) == 8 and all(g.sources == (LSPCI,) for g in facts.seen)
    assert facts.seen[0].bus == BusId.parse("0000:19:00.0")  # "19:00.0 3D controller: ..."


def test_nvlink_alone_all_inactive(tmp_path: Path) -> None:
    text = recording("nvidia-smi-nvlink/azurehpc__bad_nvlink_status_a100.txt").read_text()
    root = make_tree(tmp_path, commands={"nvidia-smi nvlink -s": text})
    facts = collect(open_host(root))
    assert facts.present and facts.unnamed[NVLINK] == 1 and facts.seen == ()  # GPU 6 alone
    assert set(facts.nvlink_notes.values()) == {"all links inactive"}
    assert _applies(root) is None


def test_truncated_xml_still_shows_its_gpus(tmp_path: Path) -> None:
    text = recording(H100_XML).read_text()
    root = make_tree(tmp_path, commands={"nvidia-smi -q -x": text[: len(text) // 3]})
    facts = collect(open_host(root))
    assert facts.gpus == () and facts.present
    assert facts.seen and all(g.sources == (INVENTORY,) for g in facts.seen)


def test_driver_not_communicating_is_a_gpu_unless_the_bus_has_none(tmp_path: Path) -> None:
    root = make_tree(tmp_path / "a", commands={"nvidia-smi -q -x": (NO_DRIVER, 9)})
    facts = collect(open_host(root))
    assert facts.present and facts.unnamed == {INVENTORY: 1}
    [f] = run_check(root, "stack.driver.loaded")
    assert f.status is Status.FAIL and "couldn't communicate" in f.summary
    bare = make_tree(
        tmp_path / "b",
        files={"sys/bus/pci/devices/0000:00:00.0/vendor": "0x8086\n"},
        commands={"nvidia-smi -q -x": (NO_DRIVER, 9)},
    )
    assert not collect(open_host(bare)).present  # the bus read shows none: it outweighs


def test_driver_proc_files(tmp_path: Path) -> None:
    root = make_tree(
        tmp_path, files={"proc/driver/nvidia/gpus/0000:19:00.0/information": "Model: H100\n"}
    )
    facts = collect(open_host(root))
    assert facts.present and [g.bus for g in facts.seen] == [BusId.parse("0000:19:00.0")]


@pytest.mark.parametrize(
    ("cls", "vendor", "desc", "gpu"),
    [
        ("0302", "10de", "3D controller: NVIDIA Corporation GH100", True),
        ("0680", "10de", "Bridge: NVIDIA Corporation NVSwitch", False),
        ("0380", "10de", "Display controller: NVIDIA Corporation", False),  # not 0300/0302
        (None, None, "3D controller: NVIDIA Corporation Device 2330", True),
        (None, None, "VGA compatible controller: NVIDIA Corporation GA102GL", True),
        (None, None, "Display controller: NVIDIA Corporation Device 1234", False),
        (None, None, "VGA compatible controller: Matrox G200eR2", False),
        (None, None, "", False),
    ],
)
def test_is_gpu_by_ids_else_lspcis_words(
    cls: str | None, vendor: str | None, desc: str, gpu: bool
) -> None:
    device = PciDevice("0000:19:00.0", vendor_id=vendor, class_id=cls, description=desc or None)
    assert is_gpu(device) is gpu


@pytest.mark.parametrize(
    ("text", "ids", "attached"),
    [
        ('<attached_gpus>8</attached_gpus><gpu id="00000000:19:00.0">', ("00000000:19:00.0",), 8),
        ("<attached_gpus>2", (), 0),
        ("\x00junk", (), 0),
        ("", (), 0),
    ],
)
def test_parse_xml_gpu_ids(text: str, ids: tuple[str, ...], attached: int) -> None:
    assert parse_xml_gpu_ids(text) == (ids, attached)


def test_nvlink_alone_draws_the_nvlink_finding(tmp_path: Path) -> None:
    """An A100-SXM4 (12 links in the KB) with every link inactive, from nvlink -s alone."""
    text = recording("nvidia-smi-nvlink/azurehpc__bad_nvlink_status_a100.txt").read_text()
    root = make_tree(tmp_path, commands={"nvidia-smi nvlink -s": text})
    [f] = run_check(root, "interconnect.nvlink.state")
    assert f.status is Status.FAIL and f.summary == "all NVLinks inactive (12 expected up)"
    assert f.subject == "gpu:GPU-9667d95e-6d22-0c22-1f57-c481f13e7c44"

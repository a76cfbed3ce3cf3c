"""GPU facts: nvlink -s parsing, NVIDIA functions on the PCI bus, collect() on trees and live."""

from __future__ import annotations

import re
import time
from dataclasses import replace
from functools import cached_property
from pathlib import Path

import pytest

from dolmen.checks.context import PREDICATES, Context
from dolmen.facts import to_jsonable
from dolmen.facts.gpu import collect, is_nvidia_gpu, parse_nvlink_status
from dolmen.facts.gpu_nvlink import MIG_MODE
from dolmen.host import open_host
from dolmen.host.gpu import NOT_SUPPORTED, GpuInventory, NvLink
from dolmen.host.gpu.nvsmi import parse_nvsmi_xml
from dolmen.host.tree import TreeHost
from tests.conftest import make_tree, recording, recordings_in
from tests.facts.trees import extract_ttar

NVLINK = "nvidia-smi-nvlink/"
H100_XML = "nvidia-smi-xml/k8s-test-infra__hardware__qx-h100.xml"
CAPTURES = "nvidia-smi-captures/nvidia_gpu_exporter__"


def capture_section(rel: str, command: str) -> str:
    """One command's output in an nvidia_gpu_exporter capture (between ``#`` banners)."""
    text = recording(rel).read_text()
    start = text.index(f"# $ {command}\n")
    body = text[text.index("\n", text.index("\n", start) + 1) + 1 :]
    return body[: body.index("\n#####")]


def sysfs_from_lspci(rel: str) -> dict[str, str]:
    """sys/bus/pci/devices/<bdf>/{vendor,class} for each line of a real ``lspci -nn``."""
    files: dict[str, str] = {}
    for line in recording(rel).read_text().splitlines():
        m = re.match(r"^(\S+) .*\[([0-9a-f]{4})\]: .*\[([0-9a-f]{4}):[0-9a-f]{4}\]", line)
        if m:
            bdf = m[1] if m[1].count(":") == 2 else f"0000:{m[1]}"
            files[f"sys/bus/pci/devices/{bdf}/vendor"] = f"0x{m[3]}\n"
            files[f"sys/bus/pci/devices/{bdf}/class"] = f"0x{m[2]}00\n"
    return files


def test_every_nvlink_recording_parses() -> None:
    for path in recordings_in("nvidia-smi-nvlink"):
        for gpu in parse_nvlink_status(path.read_text()):
            assert gpu.links or gpu.note, path.name


def test_nvlink_eight_a100_with_twelve_links_each() -> None:
    gpus = parse_nvlink_status(
        recording(NVLINK + "gpud__nvidia-smi.nvlink.status.a100").read_text()
    )
    assert [g.position for g in gpus] == list(range(8))
    assert gpus[0].uuid == "GPU-5269b708-678a-b1a8-60f0-c90406537486"
    assert gpus[0].name == "NVIDIA A100-SXM4-80GB"
    for gpu in gpus:
        assert gpu.links == tuple(NvLink(n, "up", 25.0) for n in range(12))


def test_nvlink_good_and_bad_azure_a100() -> None:
    (good,) = parse_nvlink_status(
        recording(NVLINK + "azurehpc__good_nvlink_status_a100.txt").read_text()
    )
    assert (good.position, len(good.links), good.note) == (7, 12, None)
    (bad,) = parse_nvlink_status(
        recording(NVLINK + "azurehpc__bad_nvlink_status_a100.txt").read_text()
    )
    assert (bad.position, bad.links, bad.note) == (6, (), "all links inactive")


def test_nvlink_a10_prints_nothing() -> None:
    assert (
        parse_nvlink_status(recording(NVLINK + "gpud__nvidia-smi.nvlink.status.a10").read_text())
        == ()
    )


@pytest.mark.parametrize(
    ("machine", "links", "speed", "note"),
    [
        ("linux-x86_64__nvidia-h100-80gb-hbm3__590.48.01.txt", 18, 26.562, None),
        ("linux-x86_64__nvidia-l40s__595.80.txt", 0, None, NOT_SUPPORTED),
        ("linux-x86_64__nvidia-h100-mig__590.48.01.txt", 0, None, MIG_MODE),
        (
            "linux-x86_64__nvidia-geforce-rtx-2080-super__595.71.05.txt",
            0,
            None,
            "all links inactive",
        ),
        (
            "windows-x86_64__nvidia-geforce-rtx-2080-super__591.86.txt",
            0,
            None,
            "all links inactive",
        ),
    ],
)
def test_nvlink_in_captures(
    machine: str, links: int, speed: float | None, note: str | None
) -> None:
    (gpu,) = parse_nvlink_status(capture_section(CAPTURES + machine, "nvidia-smi nvlink -s"))
    assert (len(gpu.links), gpu.note) == (links, note)
    assert all(link.speed_gbps == speed and link.state == "up" for link in gpu.links)


def test_nvlink_inactive_and_down_links() -> None:
    text = (
        "GPU 0: NVIDIA H100 (UUID: GPU-1)\n"
        "\t Link 0: 26.562 GB/s\n\t Link 1: <inactive>\n\t Link 2: N/A\n"
    )
    (gpu,) = parse_nvlink_status(text)
    assert gpu.links == (NvLink(0, "up", 26.562), NvLink(1, "inactive"), NvLink(2, "down"))


@pytest.mark.parametrize(
    "text", ["", "\x00\xff\x00garbage", "Link 0: 25 GB/s\n", "GPU x: broken\n", "GPU 0: A (UUID: "]
)
def test_nvlink_junk_gives_no_links_and_no_exception(text: str) -> None:
    for gpu in parse_nvlink_status(text):
        assert gpu.links == ()


@pytest.mark.parametrize(
    ("vendor", "pci_class", "gpu"),
    [
        ("0x10de", "0x030200", True),  # 3D controller (data-center boards)
        ("0x10de", "0x030000", True),  # VGA controller (workstation boards)
        ("0x10de", "0x068000", False),  # NVSwitch / Hyper-V NVLink bridge
        ("0x10de", "0x038000", False),  # other display controller: not a class go-nvlib counts
        ("0x10de", "0x040300", False),  # the board's HDMI audio function
        ("0x1af4", "0x030000", False),  # virtio GPU
        ("0x15b3", "0x020700", False),  # ConnectX
        ("garbage", "0x030200", False),
        (None, None, False),
    ],
)
def test_is_nvidia_gpu(vendor: str | None, pci_class: str | None, gpu: bool) -> None:
    assert is_nvidia_gpu(vendor, pci_class) is gpu


def test_collect_8_gpu_h100_tree(tmp_path: Path) -> None:
    xml = recording(H100_XML).read_text()
    inv = parse_nvsmi_xml(xml)
    sysfs = {}
    for g in inv.gpus:
        sysfs[f"sys/bus/pci/devices/{g.pci_address}/vendor"] = "0x10de\n"
        sysfs[f"sys/bus/pci/devices/{g.pci_address}/class"] = "0x030200\n"
    nvlink = recording(NVLINK + "gpud__nvidia-smi.nvlink.status.a100").read_text()
    root = make_tree(
        tmp_path, files=sysfs, commands={"nvidia-smi -q -x": xml, "nvidia-smi nvlink -s": nvlink}
    )
    collect(open_host(root))  # the imports and the KB load once, as a warm agent has them
    host = open_host(root)  # a fresh host: nothing of the first read is cached
    start = time.process_time()  # CPU time: a loaded machine's wall clock says nothing
    facts = collect(host)
    elapsed = time.process_time() - start
    assert elapsed < 0.3, f"{elapsed * 1000:.0f} ms of CPU"  # the whole quick tier has 0.3 s
    assert facts.present and facts.source == "nvidia-smi" and facts.error is None
    assert len(facts.gpus) == 8 and len(facts.pci_gpus) == 8
    assert facts.pci_gpus_missing_from_driver == ()
    assert (facts.driver_version, facts.cuda_version) == ("580.105.08", "13.0")
    # UUIDs differ (another machine's nvlink output): joined by position, GPU N <-> N-th block.
    assert facts.nvlinks["gpu:00000000:53:00.0"] == tuple(NvLink(n, "up", 25.0) for n in range(12))
    assert set(facts.nvlinks) == {g.subject for g in facts.gpus}
    assert facts.unread == {}
    assert to_jsonable(facts)["gpus"][0]["fabric"]["state"] == "Completed"


def test_nvlinks_join_by_uuid_before_position(tmp_path: Path) -> None:
    uuid = "GPU-c7e253b0-c227-6f10-e860-7482c85e7ce8"  # GPU 7 in the Azure recording
    xml = f"<nvidia_smi_log><gpu id='00000001:00:00.0'><uuid>{uuid}</uuid></gpu></nvidia_smi_log>"
    good = recording(NVLINK + "azurehpc__good_nvlink_status_a100.txt").read_text()
    root = make_tree(tmp_path, commands={"nvidia-smi -q -x": xml, "nvidia-smi nvlink -s": good})
    facts = collect(open_host(root))
    assert len(facts.nvlinks["gpu:00000001:00:00.0"]) == 12


def test_all_links_inactive_is_a_note(tmp_path: Path) -> None:
    xml = "<nvidia_smi_log><gpu id='00000006:00:00.0'><uuid>GPU-x</uuid></gpu></nvidia_smi_log>"
    bad = (
        "GPU 0: NVIDIA A100-SXM4-80GB (UUID: GPU-x)\n"
        + recording(NVLINK + "azurehpc__bad_nvlink_status_a100.txt").read_text().split("\n", 1)[1]
    )
    root = make_tree(tmp_path, commands={"nvidia-smi -q -x": xml, "nvidia-smi nvlink -s": bad})
    facts = collect(open_host(root))
    assert facts.nvlinks == {"gpu:00000006:00:00.0": ()}
    assert facts.nvlink_notes == {"gpu:00000006:00:00.0": "all links inactive"}


def test_azure_a100_vm_without_driver(tmp_path: Path) -> None:
    # Eight A100s on the bus (Hyper-V domains), NVLink bridges and IB VFs beside them,
    # and nvidia-smi failing: the GPU is present, the inventory says why it is empty.
    err = "NVIDIA-SMI has failed because it couldn't communicate with the NVIDIA driver.\n"
    root = make_tree(
        tmp_path,
        files=sysfs_from_lspci("lspci/gpud__lspci.nn.a100"),
        commands={"nvidia-smi -q -x": (err, 9)},
    )
    facts = collect(open_host(root))
    assert facts.present and facts.gpus == ()
    assert facts.pci_gpus == tuple(f"{d:04x}:00:00.0" for d in (1, 2, 3, 4, 11, 12, 13, 14))
    assert facts.error and facts.error.startswith(
        "command failed: nvidia-smi -q -x: exit 9: NVIDIA"
    )
    assert facts.unread["gpus"] == facts.error
    assert "nvlinks" not in facts.unread  # no GPU listed: nvlink -s is not run
    assert PREDICATES["nvidia_gpu"][0](Context(open_host(root))) is None


def test_a10_vm_counts_the_a10_not_the_virtio_gpu(tmp_path: Path) -> None:
    root = make_tree(tmp_path, files=sysfs_from_lspci("lspci/gpud__lspci.nn.a10"))
    assert collect(open_host(root)).pci_gpus == ("0000:06:00.0",)


@pytest.mark.parametrize(
    ("rel", "argv", "count"),
    [
        ("lspci/gpud__lspci.nn.a10", "lspci -nn", 1),
        ("lspci/gpud__lspci.gb200", "lspci", 4),
        ("lspci/gpud__lspci-vvv", "lspci -vvv", 8),
    ],
)
def test_a_bundle_with_lspci_alone_shows_its_gpus(
    tmp_path: Path, rel: str, argv: str, count: int
) -> None:
    # No PCI tree: the listing the bundle holds (-vvv, -nn or plain) is the bus's witness.
    root = make_tree(tmp_path, commands={argv: recording(rel).read_text()})
    facts = collect(open_host(root))
    assert facts.present and facts.sources["lspci"] == "read"
    assert len([g for g in facts.seen if "lspci" in g.sources]) == count


def test_topo_matrix_alone_counts_its_gpus(tmp_path: Path) -> None:
    topo = "\tGPU0\tGPU1\tCPU Affinity\tNUMA Affinity\nGPU0\t X \tNV18\t0-55\t0\n"
    topo += "GPU1\tNV18\t X \t0-55\t0\n"
    facts = collect(open_host(make_tree(tmp_path, commands={"nvidia-smi topo -m": topo})))
    assert facts.present and facts.unnamed == {"nvidia-smi topo": 2} and facts.count == 2
    junk = make_tree(tmp_path / "junk", commands={"nvidia-smi topo -m": "GPU0 garbage\n"})
    assert not collect(open_host(junk)).present


def test_gpu_fell_off_the_bus(tmp_path: Path) -> None:
    # The driver lists 8 GPUs; sysfs shows a ninth NVIDIA 3D controller it does not list.
    xml = recording(H100_XML).read_text()
    files = {}
    for bdf in [g.pci_address for g in parse_nvsmi_xml(xml).gpus] + ["0000:db:00.0"]:
        files[f"sys/bus/pci/devices/{bdf}/vendor"] = "0x10de\n"
        files[f"sys/bus/pci/devices/{bdf}/class"] = "0x030200\n"
    root = make_tree(tmp_path, files=files, commands={"nvidia-smi -q -x": xml})
    facts = collect(open_host(root))
    assert facts.pci_gpus_missing_from_driver == ("0000:db:00.0",)
    assert (
        facts.unread["nvlinks"] == "missing: nvidia-smi nvlink -s: not recorded in this host tree"
    )


def test_real_sysfs_without_nvidia(tmp_path: Path) -> None:
    archive = recording("sysfs/node_exporter__sys.ttar")
    root = extract_ttar(archive, tmp_path, only=("sys/bus/pci", "sys/devices/pci"))
    facts = collect(open_host(root))
    assert not facts.present and facts.pci_gpus == ()
    assert "pci_gpus" not in facts.unread
    reason = PREDICATES["nvidia_gpu"][0](Context(open_host(root)))
    assert reason and reason.startswith("no NVIDIA GPU")


def test_tree_without_sysfs_says_so(tmp_path: Path) -> None:
    facts = collect(open_host(make_tree(tmp_path, files={"etc/hostname": "n1\n"})))
    # The tree recorded etc/ only: sysfs and the commands were not in this bundle.
    assert facts.unread["pci_gpus"] == "not in this bundle: sys/bus/pci/devices"
    assert facts.unread["gpus"] == "not in this bundle: nvidia-smi -q -x"
    assert not facts.present
    (tmp_path / "sys").mkdir()
    (tmp_path / "commands").mkdir()
    recorded = collect(open_host(tmp_path))
    assert recorded.unread["pci_gpus"] == "missing: sys/bus/pci/devices is absent"
    assert recorded.unread["gpus"].startswith("missing: ")


class NvmlTree(TreeHost):
    """A tree whose inventory came from NVML (NVLink states included), as on a live host."""

    @cached_property
    def gpus(self) -> GpuInventory:
        inv = parse_nvsmi_xml(recording(H100_XML).read_text())
        links = tuple(NvLink(n, "up", 26.562) for n in range(18))
        return replace(inv, source="nvml", gpus=tuple(replace(g, nvlinks=links) for g in inv.gpus))


def test_nvlinks_from_nvml_need_no_command(tmp_path: Path) -> None:
    facts = collect(NvmlTree(make_tree(tmp_path, files={"etc/hostname": "n1\n"})))
    assert facts.source == "nvml"
    assert all(len(links) == 18 for links in facts.nvlinks.values())
    assert "nvlinks" not in facts.unread  # nvidia-smi nvlink -s was not needed


def test_live_host_collects_without_exceptions() -> None:
    facts = collect(open_host())
    assert facts.present == bool(facts.pci_gpus or facts.gpus)
    if not facts.gpus:
        assert facts.source == "none" and facts.error

"""PCI facts: sysfs devices (links, AER, parents), lspci -vvv, GCM maps, malformed input, live."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from dolmen.facts import pci, to_jsonable
from dolmen.facts.pci.lspci import lspci_cut, parse_lspci_vvv
from dolmen.host.live import LiveHost
from dolmen.host.tree import TreeHost
from tests.conftest import make_tree, recording
from tests.facts.trees import extract_ttar, load_sysfs_map

NE_DEV = "sysfs/node_exporter__sys_extracted/sys/devices/pci0000:40/0000:40:01.3/0000:45:00.0"
PF_DEV = "procfs/procfs__fixtures_extracted/fixtures/sys/devices/pci0000:00/0000:00:1f.6"


@pytest.mark.parametrize(
    ("text", "speed", "generation"),
    [
        ("2.5 GT/s PCIe", 2.5, 1),
        ("5.0 GT/s PCIe\n", 5.0, 2),
        ("8 GT/s", 8.0, 3),  # older kernels: no ".0", no "PCIe" (GCM's recordings)
        ("16.0 GT/s PCIe", 16.0, 4),
        ("32.0 GT/s PCIe", 32.0, 5),
        ("64.0 GT/s PCIe", 64.0, 6),
        ("Unknown", None, None),
        ("Unknown speed", None, None),
        ("", None, None),
        ("\x00\xff", None, None),
    ],
)
def test_link_speed_and_generation(text: str, speed: float | None, generation: int | None) -> None:
    assert pci.parse_link_speed(text) == speed
    link = pci.make_link(speed, 16)
    assert link is not None and link.generation == generation


def test_make_link_unknown_parts() -> None:
    assert pci.make_link(None, None) is None
    assert pci.make_link(12.0, 4) == pci.PciLink(12.0, 4, None)  # no such generation


def test_parse_aer_recorded_counts() -> None:
    base = recording(PF_DEV)
    cor = pci.parse_aer((base / "aer_dev_correctable").read_text())
    assert cor is not None
    counters, total = cor
    assert counters["RxErr"] == 1 and counters["HeaderOF"] == 8 and total == 9
    fatal = pci.parse_aer((base / "aer_dev_fatal").read_text())
    assert fatal is not None and fatal[0]["PoisonTLPBlocked"] == 27 and fatal[1] == 28
    zero = pci.parse_aer(recording(f"{NE_DEV}/aer_dev_correctable").read_text())
    assert zero is not None and zero[1] == 0 and set(zero[0]) >= {"RxErr", "BadTLP"}


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("RxErr 1\nBadTLP 2\n", ({"RxErr": 1, "BadTLP": 2}, 3)),  # no TOTAL line: the sum
        ("RxErr 1\nBadTL", ({"RxErr": 1}, 1)),  # truncated
        ("", None),
        ("garbage\n\x00\xff", None),
        ("RxErr x\n", None),
    ],
)
def test_parse_aer_edge_cases(text: str, expected: object) -> None:
    assert pci.parse_aer(text) == expected


@pytest.mark.parametrize(
    ("target", "parent"),
    [
        ("../../../devices/pci0000:00/0000:00:02.1/0000:01:00.0", "0000:00:02.1"),
        ("../../../devices/pci0000:40/0000:40:01.3/0000:45:00.0", "0000:40:01.3"),
        ("../../../devices/pci0000:a2/0000:a2:00.0", None),  # on a root bus
        ("../../../devices/LNXSYSTM:00/pci0001:00/0001:00:00.0", None),  # Hyper-V domains
        ("", None),
    ],
)
def test_parent_from_link(target: str, parent: str | None) -> None:
    assert pci.parent_from_link(target) == parent


def test_parse_lspci_vvv_recorded_h100() -> None:
    text = recording("lspci/gpud__lspci-vvv").read_text()
    devices = parse_lspci_vvv(text)
    headers = [ln for ln in text.splitlines() if ln and not ln[0].isspace()]
    assert len(devices) == len(headers) == 517
    gpus = [d for d in devices if d.description and d.description.startswith("3D controller")]
    assert [g.bdf for g in gpus] == [
        "0000:19:00.0",
        "0000:3b:00.0",
        "0000:4c:00.0",
        "0000:5d:00.0",
        "0000:9b:00.0",
        "0000:bb:00.0",
        "0000:cb:00.0",
        "0000:db:00.0",
    ]
    g = gpus[0]
    assert g.driver == "nvidia" and g.numa_node == 0 and g.source == "lspci"
    assert g.current_link == pci.PciLink(32.0, 16, 5) and g.max_link == pci.PciLink(32.0, 16, 5)
    # no -nn: ids read back from pci.ids names (NVIDIA Corporation, 3D controller, Device 2330)
    assert (g.vendor_id, g.device_id, g.class_id) == ("10de", "2330", "0302")
    assert (g.subsystem_vendor_id, g.subsystem_device_id) == ("10de", "16c1")
    # lspci's own "(downgraded)" marks and ours agree, line for line.
    marked = sum(1 for ln in text.splitlines() if "LnkSta:" in ln and "downgraded" in ln)
    assert sum(1 for d in devices if d.link_downgraded) == marked == 16
    switch = {d.bdf: d for d in devices}["0000:17:00.0"]
    assert switch.current_link is not None and switch.current_link.generation == 4
    assert switch.max_link is not None and switch.max_link.generation == 5


def test_parse_lspci_nn_and_domains() -> None:
    a100 = parse_lspci_vvv(recording("lspci/gpud__lspci.nn.a100").read_text())
    gpus = [d for d in a100 if d.class_id == "0302"]
    assert len(gpus) == 8 and {g.vendor_id for g in gpus} == {"10de"}
    assert {g.device_id for g in gpus} == {"20b2"} and gpus[0].bdf == "0001:00:00.0"
    assert gpus[0].description == "3D controller: NVIDIA Corporation GA100 [A100 SXM4 80GB]"
    text = recording("lspci/gpud__lspci.gb200").read_text()
    gb200 = parse_lspci_vvv(text)
    assert len(gb200) == len(text.splitlines()) == 87 and gb200[-1].bdf.startswith("0019:")
    assert all(d.current_link is None for d in gb200)  # plain lspci: no capabilities
    gb_gpus = [d for d in gb200 if d.vendor_id == "10de" and d.class_id == "0302"]
    assert len(gb_gpus) == 4 and {g.device_id for g in gb_gpus} == {"2941"}
    bridge = gb200[1]  # "PCI bridge: Mellanox Technologies MT2910 Family [ConnectX-7 ...]"
    assert (bridge.vendor_id, bridge.class_id, bridge.device_id) == ("15b3", "0604", None)


def test_parse_lspci_names_never_guess() -> None:
    text = (
        "00:01.0 VGA compatible controller: Red Hat, Inc. Virtio GPU (rev 01)\n"
        "00:02.0 Frobnicator: NVIDIA Corporation Device 12\n"
        "00:03.0 3D controller: NVIDIA Corporation\n"
    )
    a, b, c = parse_lspci_vvv(text)
    assert (a.vendor_id, a.class_id) == (None, "0300")  # vendor not in the table
    assert (b.vendor_id, b.device_id, b.class_id) == ("10de", None, None)
    assert (c.vendor_id, c.class_id) == (None, "0302")  # no name after the vendor: no match


@pytest.mark.parametrize(
    "text",
    ["", "\n\n", "\x00\xff garbage", "not a header\n\tLnkSta: Speed 8GT/s, Width x4\n"],
)
def test_parse_lspci_junk(text: str) -> None:
    assert parse_lspci_vvv(text) == []


def test_parse_lspci_truncated_and_denied() -> None:
    text = recording("lspci/gpud__lspci-vvv").read_text()
    cut = text[: text.index("LnkSta:", text.index("19:00.0 3D")) + 12]  # mid LnkSta line
    devices = parse_lspci_vvv(cut)
    assert devices[-1].bdf == "0000:19:00.0" and devices[-1].max_link is not None
    denied = (
        "19:00.0 3D controller: NVIDIA Corporation Device 2330\n\tCapabilities: <access denied>\n"
    )
    assert parse_lspci_vvv(denied)[0].current_link is None


H100_HEAD = "19:00.0 3D controller: NVIDIA Corporation Device 2330 (rev a1)\n"


@pytest.mark.parametrize(
    ("text", "cut"),
    [
        ("", None),
        (H100_HEAD, None),  # a one-line listing (plain lspci, -nn) ends with its last line
        (H100_HEAD.rstrip("\n"), None),  # saved without the final newline
        ("19:00.0 3D contro", "19:00.0's line"),  # cut mid-line
        (H100_HEAD + "\tNUMA node: 0\n\n", None),  # -vvv's closing blank line
        (H100_HEAD + "\tKernel driver in use: nvidia\n", None),  # the block's last line
        (H100_HEAD + "\tKernel modules: nvidia\n", None),
        (H100_HEAD + "\tNUMA node: 0\n", "19:00.0's block"),  # ends mid-block
        (H100_HEAD + "\tNUMA node: 0\n\n" + H100_HEAD, "19:00.0's block"),  # a bare header
        (H100_HEAD + "\t\tLnkSta:\tSpeed 16GT/s (down", "19:00.0's block"),
    ],
)
def test_lspci_cut(text: str, cut: str | None) -> None:
    """A listing cut before its last block ends cannot show a device is absent (issue 8)."""
    got = lspci_cut(text)
    assert got == (None if cut is None else f"cut off: the listing ends inside {cut}")


def test_lspci_cut_recordings() -> None:
    """Whole recordings are whole; their first 200 lines (head -200) are cut."""
    vvv = recording("lspci/gpud__lspci-vvv").read_text()
    assert lspci_cut(vvv) is None
    head = "".join(vvv.splitlines(keepends=True)[:200])
    assert lspci_cut(head) == "cut off: the listing ends inside 00:0e.0's block"
    for name in ("gpud__lspci.nn.a100", "gpud__lspci.nn.a10", "gpud__lspci.gb200"):
        assert lspci_cut(recording(f"lspci/{name}").read_text()) is None


@pytest.fixture(scope="module")
def ne_tree(tmp_path_factory: pytest.TempPathFactory) -> Path:
    archive = recording("sysfs/node_exporter__sys.ttar")
    return extract_ttar(
        archive, tmp_path_factory.mktemp("ne"), only=("sys/bus/pci", "sys/devices/pci")
    )


def test_collect_node_exporter_tree(ne_tree: Path) -> None:
    facts = pci.collect(TreeHost(ne_tree))
    by = facts.by_bdf()
    assert sorted(by) == ["0000:00:02.1", "0000:01:00.0", "0000:45:00.0"]
    nvme = by["0000:01:00.0"]
    assert (nvme.vendor_id, nvme.device_id, nvme.class_id) == ("c0a9", "540a", "0108")
    assert nvme.driver == "nvme" and nvme.parent == "0000:00:02.1"
    assert nvme.current_link == pci.PciLink(8.0, 4, 3)
    assert nvme.max_link == pci.PciLink(16.0, 4, 4) and nvme.link_downgraded is True
    assert nvme.aer is not None and nvme.aer.total_correctable == 0
    nic = by["0000:45:00.0"]
    assert nic.numa_node == 0 and nic.local_cpus == (*range(64), *range(128, 192))
    assert nic.parent == "0000:40:01.3" and nic.link_downgraded is False
    assert by["0000:00:02.1"].class_id == "0604" and by["0000:00:02.1"].parent is None
    assert "lspci" not in facts.unread  # sysfs had links: lspci never ran


def test_collect_gcm_map_links_only(tmp_path: Path) -> None:
    rec = recording("sysfs/gcm__learn_good.json")
    facts = pci.collect(TreeHost(load_sysfs_map(rec, tmp_path)))
    data = json.loads(rec.read_text())
    speeds = {k.split("/")[-2]: v for k, v in data.items() if k.endswith("current_link_speed")}
    by = facts.by_bdf()
    assert set(speeds) <= set(by)
    for bdf, text in speeds.items():
        link = by[bdf].current_link
        assert link is not None and link.speed_gts == pci.parse_link_speed(text)
    assert by["0000:0c:00.0"].current_link == pci.PciLink(16.0, 16, 4)
    # GCM recorded no ids: unread with a reason, not guessed.
    assert by["0000:0c:00.0"].vendor_id is None
    assert facts.unread["0000:0c:00.0.vendor_id"] == "missing"


def test_collect_sysfs_without_links_falls_back_to_lspci(tmp_path: Path) -> None:
    lspci = recording("lspci/gpud__lspci-vvv").read_text()
    dev = "sys/bus/pci/devices/0000:19:00.0"
    root = make_tree(
        tmp_path,
        files={
            f"{dev}/vendor": "0x10de\n",
            f"{dev}/device": "0x2330\n",
            f"{dev}/class": "0x030200\n",
            f"{dev}/numa_node": "0\n",
        },
        commands={"lspci -vvv": lspci},
    )
    facts = pci.collect(TreeHost(root))
    (gpu,) = facts.devices
    assert (gpu.vendor_id, gpu.device_id, gpu.class_id) == ("10de", "2330", "0302")
    assert gpu.source == "sysfs+lspci" and gpu.current_link == pci.PciLink(32.0, 16, 5)
    assert "0000:19:00.0.current_link" not in facts.unread


def test_collect_lspci_only_and_nothing(tmp_path: Path) -> None:
    lspci = recording("lspci/gpud__lspci-vvv").read_text()
    facts = pci.collect(TreeHost(make_tree(tmp_path / "a", commands={"lspci -vvv": lspci})))
    assert len(facts.devices) == 517 and facts.devices[0].source == "lspci"
    assert facts.unread["aer"].startswith("not supported")
    assert "lspci" not in facts.unread
    head = "".join(lspci.splitlines(keepends=True)[:200])
    facts = pci.collect(TreeHost(make_tree(tmp_path / "c", commands={"lspci -vvv": head})))
    assert facts.devices and facts.unread["lspci"].startswith("cut off")
    failed = make_tree(tmp_path / "b", commands={"lspci -vvv": ("", 1, "pcilib: no access")})
    facts = pci.collect(TreeHost(failed))
    assert facts.devices == () and facts.unread["devices"].startswith("missing")
    assert facts.unread["lspci"].startswith("command failed")


def test_collect_malformed_device_files(tmp_path: Path) -> None:
    dev = "sys/bus/pci/devices/0000:01:00.0"
    root = make_tree(
        tmp_path,
        files={
            f"{dev}/vendor": "\x00\xff",
            f"{dev}/device": "",
            f"{dev}/class": "0x0108",
            f"{dev}/numa_node": "x",
            f"{dev}/current_link_speed": "Unknown\n",
            f"{dev}/current_link_width": "junk\n",
            f"{dev}/max_link_speed": "8.0 GT/s PCIe\n",
            f"{dev}/aer_dev_correctable": "\x00",
            f"{dev}/local_cpulist": "0-",
        },
    )
    facts = pci.collect(TreeHost(root))
    (d,) = facts.devices
    assert d.vendor_id is None and facts.unread["0000:01:00.0.vendor_id"].startswith("malformed")
    assert d.numa_node is None and facts.unread["0000:01:00.0.numa_node"].startswith("malformed")
    assert d.current_link is None and facts.unread["0000:01:00.0.current_link"]
    assert d.max_link == pci.PciLink(8.0, None, 3) and d.link_downgraded is None
    assert d.aer is not None and d.aer.total_correctable is None
    assert d.local_cpus is None and "0000:01:00.0.local_cpus" in facts.unread


def test_live_smoke() -> None:
    facts = pci.collect(LiveHost())
    assert json.loads(json.dumps(to_jsonable(facts)))  # dolmen facts --json
    on_bus = list(Path("/sys/bus/pci/devices").iterdir())
    assert len(facts.devices) == len(on_bus)
    for d in facts.devices:
        assert pci.is_sysfs_name(d.bdf) and d.vendor_id and len(d.vendor_id) == 4
        assert d.class_id is not None


def test_collect_nothing_recorded_is_not_in_this_bundle(tmp_path: Path) -> None:
    """No sys/ and no commands/: the bus was not in this bundle (never "no devices")."""
    facts = pci.collect(TreeHost(make_tree(tmp_path)))
    assert (
        facts.devices == () and facts.unread["devices"] == "not in this bundle: sys/bus/pci/devices"
    )

"""CPU facts: cpuinfo of x86 and arm64, topology, CPU lists, cpufreq policies; trees and live."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from dolmen.facts import cpu, to_jsonable
from dolmen.facts.reading import parse_cpulist
from dolmen.host.live import LiveHost
from dolmen.host.tree import TreeHost
from tests.conftest import make_tree, recording
from tests.facts.trees import extract_ttar

PROCFS = "procfs/procfs__fixtures_extracted/fixtures"

# The block format of a Grace CPU (Neoverse V2 cores) as an NVIDIA forum post quotes
# /proc/cpuinfo of a GH200 (processor 0..71), repeated for each core.
GRACE_FEATURES = (
    "fp asimd evtstrm aes pmull sha1 sha2 crc32 atomics fphp asimdhp cpuid asimdrdm jscvt "
    "fcma lrcpc dcpop sha3 sm3 sm4 asimddp sha512 sve asimdfhm dit uscat ilrcpc flagm sb "
    "paca pacg dcpodp sve2 sveaes svepmull svebitperm svesha3 svesm4 flagm2 frint svei8mm "
    "svebf16 i8mm bf16 dgh bti"
)
GRACE_CPUINFO = "".join(
    f"processor\t: {n}\nBogoMIPS\t: 2000.00\nFeatures\t: {GRACE_FEATURES}\n"
    "CPU implementer\t: 0x41\nCPU architecture: 8\nCPU variant\t: 0x0\n"
    "CPU part\t: 0xd4f\nCPU revision\t: 0\n\n"
    for n in range(72)
)


def test_parse_cpuinfo_recorded_intel() -> None:
    info = cpu.parse_cpuinfo(recording(f"{PROCFS}/proc/cpuinfo").read_text())
    assert info is not None
    assert info.vendor == "GenuineIntel"
    assert info.model_name == "Intel(R) Core(TM) i7-8650U CPU @ 1.90GHz"
    # 8 processors, physical id 0, core ids 0-3 twice (hyper-threading).
    assert (info.threads, info.sockets, info.cores) == (8, 1, 4)
    assert info.hypervisor is False and "avx2" in info.flags
    assert info.implementer is None


def test_parse_cpuinfo_grace() -> None:
    info = cpu.parse_cpuinfo(GRACE_CPUINFO)
    assert info is not None
    assert (info.vendor, info.model_name) == ("ARM", "Neoverse-V2")
    assert (info.implementer, info.part) == (0x41, 0xD4F)
    assert info.threads == 72 and info.sockets is None and info.cores is None
    assert info.hypervisor is None and "sve2" in info.flags


def test_parse_cpuinfo_unknown_arm_part_and_no_blank_lines() -> None:
    text = "processor\t: 0\nCPU implementer\t: 0x41\nCPU part\t: 0xfff\nprocessor\t: 1\n"
    info = cpu.parse_cpuinfo(text)
    assert info is not None and info.threads == 2
    assert info.vendor == "ARM" and info.model_name is None


@pytest.mark.parametrize(
    "text", ["", "\n", "garbage\n", "\x00\xff", "model name\t: no processor line\n"]
)
def test_parse_cpuinfo_malformed(text: str) -> None:
    assert cpu.parse_cpuinfo(text) is None


def test_parse_cpuinfo_truncated_keeps_what_is_there() -> None:
    full = recording(f"{PROCFS}/proc/cpuinfo").read_text()
    info = cpu.parse_cpuinfo(full[: len(full) // 3])
    assert info is not None and 1 <= info.threads < 8


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("0-3\n", (0, 1, 2, 3)),
        ("0-63,128-191", (*range(64), *range(128, 192))),
        ("1,3-5,9", (1, 3, 4, 5, 9)),
        ("1,2-7,9", (1, 2, 3, 4, 5, 6, 7, 9)),
        ("", ()),
        ("\n", ()),
        ("3-1", None),
        ("a-b", None),
        ("0-3,", None),
        ("\x00", None),
    ],
)
def test_parse_cpulist(text: str, expected: tuple[int, ...] | None) -> None:
    assert parse_cpulist(text) == expected


@pytest.mark.parametrize(
    ("text", "expected"),
    [("0 1 2 3 \n", (0, 1, 2, 3)), ("5", (5,)), ("0-3", (0, 1, 2, 3)), ("", ()), ("x y", None)],
)
def test_parse_cpu_numbers(text: str, expected: tuple[int, ...] | None) -> None:
    assert cpu.parse_cpu_numbers(text) == expected


def test_parse_topology() -> None:
    assert cpu.parse_topology({0: (0, 0), 1: (0, 1), 2: (1, 0), 3: (1, 1)}) == (2, 4)
    assert cpu.parse_topology({0: (0, 0), 1: (None, 1)}) is None
    assert cpu.parse_topology({}) is None


@pytest.fixture(scope="module")
def node_exporter_tree(tmp_path_factory: pytest.TempPathFactory) -> Path:
    archive = recording("sysfs/node_exporter__sys.ttar")
    return extract_ttar(archive, tmp_path_factory.mktemp("ne"), only=("sys/devices/system",))


@pytest.fixture(scope="module")
def procfs_tree(tmp_path_factory: pytest.TempPathFactory) -> Path:
    archive = recording("procfs/procfs__fixtures.ttar")
    return extract_ttar(
        archive, tmp_path_factory.mktemp("pf"), strip="fixtures/", only=("proc/", "sys/devices")
    )


def test_collect_node_exporter_per_cpu_cpufreq(node_exporter_tree: Path) -> None:
    facts = cpu.collect(TreeHost(node_exporter_tree))
    assert facts.online == (0, 1, 2, 3) and facts.isolated == (1, 3, 4, 5, 9)
    # Per-CPU folders (no policy*): one policy each, values as recorded.
    assert [p.cpus for p in facts.cpufreq] == [(0,), (1,), (2,), (3,)]
    assert facts.governors == {"powersave"}
    assert [(p.min_khz, p.max_khz) for p in facts.cpufreq] == [
        (800000, 3700000),
        (800000, 3700000),
        (1000, 4200000),
        (1000, 4200000),
    ]
    assert {p.driver for p in facts.cpufreq} == {"intel_pstate"}
    assert facts.unread["cpufreq.epp"].startswith("not supported")
    assert facts.unread["cpufreq.hw_max_khz"] == "missing"
    # The tree holds sys/ only: cpuinfo was not in this bundle (not "missing").
    assert facts.model_name is None and facts.unread["cpuinfo"] == "not in this bundle"


def test_collect_procfs_policies_and_links(procfs_tree: Path) -> None:
    facts = cpu.collect(TreeHost(procfs_tree))
    assert (facts.sockets, facts.cores, facts.threads) == (1, 4, 8)
    by_name = {p.name: p for p in facts.cpufreq}
    # cpu0/cpufreq is a link to policy0; cpu1/cpufreq is its own folder in this recording.
    assert by_name["policy0"].cpus == (0,) and by_name["policy0"].hw_max_khz == 2400000
    assert by_name["cpu1"].cpus == (1,) and by_name["cpu1"].max_khz == 3300000
    # policy1 is an empty folder in the recording: every value unread, with the reason.
    assert by_name["policy1"].governor is None
    assert facts.unread["cpufreq.policy1.governor"] == "missing"
    assert facts.isolated == (1, 2, 3, 4, 5, 6, 7, 9)


def test_collect_grace_tree_with_epp_and_topology(tmp_path: Path) -> None:
    files: dict[str, str] = {"proc/cpuinfo": GRACE_CPUINFO}
    base = "sys/devices/system/cpu"
    files[f"{base}/online"] = "0-71\n"
    for n in range(72):
        files[f"{base}/cpu{n}/topology/physical_package_id"] = "0\n"
        files[f"{base}/cpu{n}/topology/core_id"] = f"{n}\n"
    for p, (gov, epp) in enumerate(
        [("performance", "performance"), ("powersave", "balance_power")]
    ):
        d = f"{base}/cpufreq/policy{p}"
        files.update(
            {
                f"{d}/affected_cpus": " ".join(str(c) for c in range(p * 36, p * 36 + 36)),
                f"{d}/scaling_driver": "cppc_cpufreq\n",
                f"{d}/scaling_governor": f"{gov}\n",
                f"{d}/energy_performance_preference": f"{epp}\n",
                f"{d}/scaling_min_freq": "81000\n",
                f"{d}/scaling_max_freq": "3447000\n",
                f"{d}/cpuinfo_min_freq": "81000\n",
                f"{d}/cpuinfo_max_freq": "garbage\n",
            }
        )
    facts = cpu.collect(TreeHost(make_tree(tmp_path, files=files)))
    assert (facts.vendor, facts.model_name) == ("ARM", "Neoverse-V2")
    assert (facts.sockets, facts.cores, facts.threads) == (1, 72, 72)
    assert facts.hypervisor is None and facts.unread["hypervisor"].startswith("not supported")
    assert facts.governors == {"performance", "powersave"}
    assert [p.epp for p in facts.cpufreq] == ["performance", "balance_power"]
    # affected_cpus is written as space-separated numbers by cpufreq.
    assert facts.cpufreq[0].cpus == tuple(range(36))
    assert facts.cpufreq[1].cpus == tuple(range(36, 72))
    assert facts.unread["cpufreq.hw_max_khz"].startswith("malformed")


def test_collect_empty_tree(tmp_path: Path) -> None:
    facts = cpu.collect(TreeHost(make_tree(tmp_path, files={"proc/cpuinfo": "\x00junk"})))
    assert facts.threads is None and facts.unread["cpuinfo"].startswith("malformed")
    # No sys/ in the tree: nothing of sysfs is known, not even that cpufreq is absent.
    assert facts.online is None and facts.unread["online"] == "not in this bundle"
    assert facts.unread["cpufreq"] == "not in this bundle: sys/devices/system/cpu"
    (tmp_path / "s" / "sys/devices/system/cpu").mkdir(parents=True)
    bare = cpu.collect(TreeHost(tmp_path / "s"))
    assert bare.online is None and bare.unread["online"] == "missing"
    assert bare.cpufreq == () and bare.unread["cpufreq"].startswith("not supported")


def test_live_smoke() -> None:
    facts = cpu.collect(LiveHost())
    assert json.loads(json.dumps(to_jsonable(facts)))  # dolmen facts --json
    assert facts.threads is not None and facts.threads >= 1
    assert facts.online is not None and len(facts.online) >= 1
    assert facts.cores is not None and 1 <= facts.cores <= facts.threads
    assert facts.sockets is not None and facts.sockets >= 1
    assert facts.vendor and facts.flags

"""Memory facts: meminfo, huge page pools, THP choice files, swaps; trees and live."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from dolmen.facts import memory, to_jsonable
from dolmen.host.live import LiveHost
from dolmen.host.tree import TreeHost
from tests.conftest import make_tree, recording

PROCFS = "procfs/procfs__fixtures_extracted/fixtures"
NODE0 = "sysfs/node_exporter__sys_extracted/sys/devices/system/node/node0/meminfo"


def test_parse_meminfo_recorded() -> None:
    info = memory.parse_meminfo(recording(f"{PROCFS}/proc/meminfo").read_text())
    assert info["MemTotal"] == 15666184 * 1024
    assert info["Active(anon)"] == 267256 * 1024
    assert info["HugePages_Total"] == 0 and info["Hugepagesize"] == 2048 * 1024
    assert "MemAvailable" not in info  # this recording predates it


def test_parse_meminfo_numa_node_prefix() -> None:
    info = memory.parse_meminfo(recording(NODE0).read_text())
    assert info["MemTotal"] == 134182340 * 1024 and info["MemFree"] == 53030372 * 1024
    assert info["HugePages_Total"] == 0


@pytest.mark.parametrize("text", ["", "\x00\xff", "MemTotal: lots\n", "no colon 12 kB\n"])
def test_parse_meminfo_malformed(text: str) -> None:
    assert memory.parse_meminfo(text) == {}


def test_parse_meminfo_truncated_line_is_skipped() -> None:
    assert memory.parse_meminfo("MemTotal:  100 kB\nMemFree:  ") == {"MemTotal": 102400}


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("always [madvise] never\n", "madvise"),
        ("always defer defer+madvise [madvise] never", "madvise"),
        ("[always] madvise never", "always"),
        ("always madvise never", None),
        ("", None),
        ("[]", None),
    ],
)
def test_parse_bracketed(text: str, expected: str | None) -> None:
    assert memory.parse_bracketed(text) == expected


def test_parse_swaps_recorded_and_edge_cases() -> None:
    swaps = memory.parse_swaps(recording(f"{PROCFS}/proc/swaps").read_text())
    assert swaps == (memory.SwapArea("/dev/dm-2", "partition", 131068 * 1024, 176 * 1024, -2),)
    header = "Filename\t\t\t\tType\t\tSize\t\tUsed\t\tPriority\n"
    assert memory.parse_swaps(header) == ()
    escaped = memory.parse_swaps(header + "/swap\\040file file 1024 0 -3\ntrunc")
    assert escaped is not None and escaped[0].filename == "/swap file" and len(escaped) == 1
    assert memory.parse_swaps("") is None
    assert memory.parse_swaps("/dev/sda2 partition 1 0 -2\n") is None


def test_collect_tree_with_pools_and_thp(tmp_path: Path) -> None:
    meminfo = recording(f"{PROCFS}/proc/meminfo").read_text()
    pools = "sys/kernel/mm/hugepages"
    root = make_tree(
        tmp_path,
        files={
            "proc/meminfo": meminfo,
            "proc/swaps": recording(f"{PROCFS}/proc/swaps").read_text(),
            "sys/kernel/mm/transparent_hugepage/enabled": "[always] madvise never\n",
            "sys/kernel/mm/transparent_hugepage/defrag": "always defer [madvise] never\n",
            f"{pools}/hugepages-2048kB/nr_hugepages": "1024\n",
            f"{pools}/hugepages-2048kB/free_hugepages": "1000\n",
            f"{pools}/hugepages-2048kB/resv_hugepages": "0\n",
            f"{pools}/hugepages-2048kB/surplus_hugepages": "0\n",
            f"{pools}/hugepages-1048576kB/nr_hugepages": "8\n",
            f"{pools}/hugepages-1048576kB/free_hugepages": "junk\n",
        },
    )
    facts = memory.collect(TreeHost(root))
    assert facts.total_bytes == 15666184 * 1024 and facts.free_bytes == 440324 * 1024
    assert facts.available_bytes is None
    assert facts.unread["available_bytes"] == "missing (MemAvailable not in proc/meminfo)"
    assert (facts.thp_enabled, facts.thp_defrag) == ("always", "madvise")
    assert [(p.size_kb, p.total, p.free) for p in facts.hugepage_pools] == [
        (2048, 1024, 1000),
        (1048576, 8, None),
    ]
    assert facts.unread["hugepage_pools.1048576kB.free"].startswith("malformed")
    assert facts.swaps is not None and facts.swaps[0].type == "partition"


def test_collect_empty_tree(tmp_path: Path) -> None:
    facts = memory.collect(TreeHost(make_tree(tmp_path, files={"proc/meminfo": "\x00\x01"})))
    assert facts.total_bytes is None and facts.unread["total_bytes"].startswith("malformed")
    # No sys/ recorded: THP is unknown, not "missing"; proc/ was recorded without swaps.
    assert facts.thp_enabled is None and facts.unread["thp_enabled"] == "not in this bundle"
    assert facts.swaps is None and facts.unread["swaps"] == "missing"
    assert facts.hugepage_pools == ()


def test_live_smoke() -> None:
    facts = memory.collect(LiveHost())
    assert json.loads(json.dumps(to_jsonable(facts)))  # dolmen facts --json
    assert facts.total_bytes is not None and facts.total_bytes > 64 << 20
    assert facts.available_bytes is not None and 0 < facts.available_bytes <= facts.total_bytes
    assert facts.swaps is not None
    assert facts.thp_enabled in ("always", "madvise", "never") or "thp_enabled" in facts.unread

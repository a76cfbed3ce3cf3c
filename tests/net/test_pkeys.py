"""The sysfs PKey table (dolmen.net.pkeys): entries, GUIDs, the diff against a grant.

No recording in ../shared/recordings holds a pkeys/ folder (gpud's H100 tree and the
procfs/node_exporter fixtures stop at counters; GCM's maps redact the ipoib ``pkey``):
the trees below are in the kernel's format (``0x%04x`` per entry, ``0x0000`` unused,
GIDs as eight groups of four hex digits).
"""

from __future__ import annotations

from pathlib import Path

import pytest

from dolmen.host.tree import TreeHost
from dolmen.net.pkeys import PkeyDiff, compare, parse_gid_guid, parse_pkey, read_port_pkeys
from tests.conftest import make_tree

PORT = "sys/class/infiniband/mlx5_0/ports/1"
GID = "fe80:0000:0000:0000:9803:9b03:00a1:b2c2\n"


@pytest.mark.parametrize(
    ("text", "value"),
    [
        ("0xffff\n", 0xFFFF),
        ("0x7fff", 0x7FFF),
        ("0x8001\n", 0x8001),
        ("0x0000\n", 0),
        ("0x1", 1),
        ("0x10000\n", None),  # five digits: not a 16-bit entry
        ("ffff\n", None),  # no 0x
        ("0x\n", None),  # truncated
        ("", None),
        ("0xffff 0x7fff\n", None),
        ("-0x1\n", None),
        ("0xgggg\n", None),
    ],
)
def test_parse_pkey(text: str, value: int | None) -> None:
    assert parse_pkey(text) == value


@pytest.mark.parametrize(
    ("text", "guid"),
    [
        (GID, "98039b0300a1b2c2"),
        ("FE80:0000:0000:0000:0002:C903:0043:F0A1\n", "0002c9030043f0a1"),
        ("fe80:0000:0000:0000:9803:9b03:00a1\n", None),  # truncated
        ("fe80::9803:9b03:a1:b2c2\n", None),  # compressed form: not what sysfs prints
        ("", None),
    ],
)
def test_parse_gid(text: str, guid: str | None) -> None:
    assert parse_gid_guid(text) == guid


def _table(*entries: str, size: int = 8) -> dict[str, str]:
    rows = [*entries, *["0x0000"] * (size - len(entries))]
    return {f"{PORT}/pkeys/{i}": f"{e}\n" for i, e in enumerate(rows)}


def test_read_tree(tmp_path: Path) -> None:
    files = {
        **_table("0x7fff", "0x8001", "0x0002"),
        f"{PORT}/gids/0": GID,
        f"{PORT}/link_layer": "InfiniBand\n",
        "sys/class/infiniband/mlx5_1/ports/1/link_layer": "InfiniBand\n",  # no pkeys folder
        "sys/class/infiniband/mlx5_2/ports/1/pkeys/0": "0xffff\n",
        "sys/class/infiniband/mlx5_2/ports/1/pkeys/1": "junk\n",
    }
    ports, unread = read_port_pkeys(TreeHost(make_tree(tmp_path, files)))
    by = {p.subject: p for p in ports}
    assert by["ib:mlx5_0/1"].pkeys == (0x7FFF, 0x8001, 0x0002)
    assert by["ib:mlx5_0/1"].guid == "98039b0300a1b2c2"
    assert by["ib:mlx5_0/1"].link_layer == "InfiniBand"
    assert "ib:mlx5_1/1" not in by and unread["mlx5_1/1"].startswith("missing")
    assert by["ib:mlx5_2/1"].pkeys == (0xFFFF,) and unread["mlx5_2/1"].startswith("malformed")
    assert by["ib:mlx5_2/1"].guid is None


def test_read_no_class(tmp_path: Path) -> None:
    assert read_port_pkeys(TreeHost(make_tree(tmp_path))) == ([], {})


@pytest.mark.parametrize(
    ("actual", "granted", "diff"),
    [
        ([0x7FFF, 0x8001], {0x7FFF: "limited", 0x0001: "full"}, PkeyDiff()),
        ([0x7FFF, 0xFFFF], {0x7FFF: "both"}, PkeyDiff()),
        (
            [0xFFFF],
            {0x7FFF: "limited"},
            PkeyDiff(membership=("0x7fff: full, the policy grants limited",)),
        ),
        ([0x7FFF], {0x7FFF: "limited", 0x0001: "full"}, PkeyDiff(missing=("0x0001 (full)",))),
        ([0x7FFF, 0x0005], {0x7FFF: "limited"}, PkeyDiff(extra=("0x0005 (limited)",))),
        (
            [0x7FFF, 0x0001],
            {0x7FFF: "limited", 0x0001: "full"},
            PkeyDiff(membership=("0x0001: limited, the policy grants full",)),
        ),
        ([], {0x7FFF: "limited"}, PkeyDiff(missing=("0x7fff (limited)",))),
        (
            [0x7FFF, 0xFFFF],
            {0x7FFF: "limited"},
            PkeyDiff(membership=("0x7fff: both, the policy grants limited",)),
        ),
    ],
)
def test_compare(actual: list[int], granted: dict[int, str], diff: PkeyDiff) -> None:
    got = compare(actual, granted)
    assert got == diff
    assert got.clean is (diff == PkeyDiff())

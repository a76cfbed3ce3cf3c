"""BusId: every spelling the host prints parses to one value; the rest is None."""

from __future__ import annotations

import pytest

from dolmen.values.busid import BusId, sysfs_name

GPU = BusId(0, 0x38, 0, 0)


@pytest.mark.parametrize(
    ("text", "value"),
    [
        ("0000:38:00.0", GPU),  # sysfs, the kernel
        ("00000000:38:00.0", GPU),  # nvidia-smi
        ("PCI:0000:38:00", GPU),  # NVRM Xid lines: no function
        ("pci:0000:38:00", GPU),
        ("38:00.0", GPU),  # lspci without -D
        ("0000:38:00", GPU),
        (" 0000:38:00.0\n", GPU),
        ("00000000:9B:00.0", BusId(0, 0x9B, 0, 0)),
        ("0000:9b:00.0", BusId(0, 0x9B, 0, 0)),
        ("00000001:00:00.0", BusId(1, 0, 0, 0)),  # Hyper-V domains
        ("10000:01:00.0", BusId(0x10000, 1, 0, 0)),  # VMD domain
        ("0000:0b:1f.7", BusId(0, 0x0B, 0x1F, 7)),
        ("PCI:0018:01:00", BusId(0x18, 1, 0, 0)),  # Blackwell domains
        ("0000:B3:00.0", BusId(0, 0xB3, 0, 0)),
        ("0000:zz:00.0", None),
        ("not-a-bus", None),
        ("0:1:2.3", BusId(0, 1, 2, 3)),
        ("0000:38:00.8", None),  # functions are 0-7
        ("0000:38:20.0", None),  # devices are 0-31
        ("000000000:38:00.0", None),  # a domain has at most 8 digits
        ("0000:338:00.0", None),
        ("0000:38:00.0.1", None),
        ("0000-38-00.0", None),
        ("GPU-1234", None),
        ("nvidia0", None),
        ("PCI:", None),
        ("", None),
        (None, None),
    ],
)
def test_parse(text: str | None, value: BusId | None) -> None:
    assert BusId.parse(text) == value


@pytest.mark.parametrize(
    ("text", "sysfs", "nvsmi"),
    [
        ("PCI:0000:38:00", "0000:38:00.0", "00000000:38:00.0"),
        ("00000000:9B:00.0", "0000:9b:00.0", "00000000:9B:00.0"),
        ("00000001:00:00.0", "0001:00:00.0", "00000001:00:00.0"),
        ("10000:01:00.1", "10000:01:00.1", "00010000:01:00.1"),
    ],
)
def test_canonical_forms(text: str, sysfs: str, nvsmi: str) -> None:
    bus = BusId.parse(text)
    assert bus is not None
    assert (bus.sysfs, bus.nvsmi, str(bus)) == (sysfs, nvsmi, sysfs)
    assert BusId.parse(bus.sysfs) == BusId.parse(bus.nvsmi) == bus


def test_functions_of_one_slot_share_it() -> None:
    a, b = BusId.parse("0000:9d:00.0"), BusId.parse("0000:9D:00.1")
    assert a is not None and b is not None
    assert a != b and a.slot == b.slot == (0, 0x9D, 0)
    assert sorted([b, a]) == [a, b]


@pytest.mark.parametrize(
    ("name", "found"),
    [
        ("0000:19:00.0", True),
        ("10000:01:00.0", True),
        ("0000:9B:00.0", False),  # sysfs writes lower case
        ("00000000:19:00.0", False),
        ("19:00.0", False),
        ("pci0000:00", False),
        ("net", False),
    ],
)
def test_sysfs_names(name: str, found: bool) -> None:
    assert (sysfs_name(name) is not None) is found

"""One subject per device (issue 17): every spelling of a GPU's bus id gives one ``gpu:``
subject, in nvidia-smi's form; other PCI functions are ``pci:`` in sysfs's form."""

from __future__ import annotations

import pytest

from dolmen.values.busid import BusId, gpu_subject, parse_subject, pci_subject

GPU_86 = "gpu:00000000:86:00.0"


@pytest.mark.parametrize(
    "spelling",
    [
        "00000000:86:00.0",  # nvidia-smi -q -x
        "0000:86:00.0",  # sysfs, the kernel, NVML's legacy bus id, mock XMLs
        "0000:86:00",  # NVRM Xid lines, without the function
        "PCI:0000:86:00",  # NVRM as printed
        "86:00.0",  # lspci without -D
        " 00000000:86:00.0\n",
        "pci:0000:86:00.0",
    ],
)
def test_every_spelling_of_a_gpu_gives_one_subject(spelling: str) -> None:
    assert gpu_subject(spelling) == GPU_86
    assert gpu_subject(BusId.parse(spelling)) == GPU_86
    assert pci_subject(spelling, gpu=True) == GPU_86
    assert pci_subject(spelling) == "pci:0000:86:00.0"


@pytest.mark.parametrize(
    ("bus", "uuid", "index", "subject"),
    [
        (None, "GPU-1234", 3, "gpu:GPU-1234"),  # nvidia-smi nvlink -s names GPUs by UUID
        (None, None, 3, "gpu:3"),  # topo -m's GPU3, DCGM's GPU id
        ("junk", "GPU-1234", 0, "gpu:GPU-1234"),  # a bus id that does not parse: the UUID
        ("junk", None, 0, "gpu:junk"),  # ... else as printed
        ("", None, None, "gpu:unknown"),
        ("0000:ZZ:00.0", None, 1, "gpu:0000:ZZ:00.0"),
        ("0000:86:40.0", None, 1, "gpu:0000:86:40.0"),  # device 0x40 > 31: no bus id
    ],
)
def test_without_a_bus_id(
    bus: str | None, uuid: str | None, index: int | None, subject: str
) -> None:
    assert gpu_subject(bus, uuid, index) == subject


@pytest.mark.parametrize(
    ("subject", "bus"),
    [
        (GPU_86, BusId(0, 0x86, 0, 0)),
        ("pci:0000:04:00.0", BusId(0, 4, 0, 0)),
        ("pci:10000:e1:00.1", BusId(0x10000, 0xE1, 0, 1)),  # VMD domain
        ("gpu:GPU-1234", None),
        ("gpu:3", None),
        ("host", None),
        ("ib:mlx5_0/1", None),
        ("nic:0000:04:00.0", None),  # a netdev may look like anything: only gpu/pci parse
        ("gpu:", None),
    ],
)
def test_parse_subject(subject: str, bus: BusId | None) -> None:
    assert parse_subject(subject) == bus

"""Findings carry the identity of the GPU they name (issue 17), attached by the runner from
the gpu facts, and one GPU has one subject in every finding of a verdict."""

from __future__ import annotations

from collections import defaultdict
from pathlib import Path

import pytest

from dolmen import demo
from dolmen.checks.identity import device_of, devices
from dolmen.checks.model import Device, Level
from dolmen.checks.suite import validate
from dolmen.config import Config
from dolmen.facts.gpu import GpuFacts, SeenGpu
from dolmen.host import open_host
from dolmen.host.gpu import Gpu
from dolmen.values.busid import BusId, parse_subject


def test_devices_from_the_inventory_nvlink_and_other_sources() -> None:
    facts = GpuFacts(
        gpus=(
            Gpu(position=0, name="NVIDIA H100", uuid="GPU-a", bus_id="0000:53:00.0", serial="165"),
        ),
        nvlink_gpus=(Gpu(position=1, name="NVIDIA H100", uuid="GPU-b"),),
        seen=(SeenGpu(BusId(0, 0x64, 0, 0), ("PCI tree",)),),
    )
    found = devices(facts)
    assert found["gpu:00000000:53:00.0"] == Device(
        index=0, uuid="GPU-a", serial="165", model="NVIDIA H100", pci_bus_id="00000000:53:00.0"
    )
    assert found["gpu:GPU-b"] == Device(index=1, uuid="GPU-b", model="NVIDIA H100")
    assert found["gpu:00000000:64:00.0"] == Device(pci_bus_id="00000000:64:00.0")


@pytest.mark.parametrize(
    ("subject", "device"),
    [
        ("gpu:00000000:86:00.0", Device(pci_bus_id="00000000:86:00.0")),
        ("gpu:3", Device(index=3)),
        ("gpu:GPU-1234", Device(uuid="GPU-1234")),
        ("gpu:junk", None),
        ("pci:0000:04:00.0", None),
        ("host", None),
    ],
)
def test_device_from_the_subject_alone(subject: str, device: Device | None) -> None:
    assert device_of(subject, {}) == device
    assert Device().known() == {}


@pytest.mark.parametrize("sample", ["hgx-h100", "hgx-h100-xid79"])
def test_one_subject_per_device_and_every_gpu_finding_identified(
    sample: str, tmp_path: Path
) -> None:
    tree = demo.build_sample(sample, tmp_path / "t")
    with open_host(tree) as host:
        verdict = validate(host, level=Level.STANDARD, config=Config())
    spellings: dict[BusId, set[str]] = defaultdict(set)
    for f in verdict.findings:
        bus = parse_subject(f.subject)
        if bus is not None:
            spellings[bus].add(f.subject)
        if f.subject.startswith("gpu:"):
            assert f.device is not None and f.device.pci_bus_id == f.subject[4:], f
        else:
            assert f.device is None, f
    assert spellings and all(len(s) == 1 for s in spellings.values()), spellings
    lost = [f for f in verdict.findings if f.check == "gpu.lost" and f.status.value == "fail"]
    ok = [f for f in verdict.findings if f.check == "gpu.temperature" and f.status.value == "pass"]
    assert ok and all(f.device and f.device.uuid and f.device.serial and f.device.model for f in ok)
    if sample.endswith("xid79"):  # the GPU is lost: the driver gave no UUID, its index stays
        assert [f.device.known() for f in lost if f.device] == [
            {"index": 3, "pci_bus_id": "00000000:86:00.0"}
        ]

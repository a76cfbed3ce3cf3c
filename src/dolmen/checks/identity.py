"""Who a GPU finding is about: index, UUID, serial, model and bus id, attached by the runner.

Checks name a GPU by its subject alone (``values.busid.gpu_subject``); the runner looks the
subject up here, once for every check, among the GPUs the gpu facts of the run know: the
driver's inventory first, then the GPUs ``nvidia-smi nvlink -s`` names (position, model,
UUID), then those only some other source shows (a bus id, nothing more). The index is the
driver's enumeration order (``Gpu.position``: NVML's index, ``nvidia-smi -i``, DCGM's GPU
id, dcgm-exporter's ``gpu`` label). Nothing is collected for this: facts the run did not
read give what the subject itself says.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from dolmen.checks.model import Device
from dolmen.values.busid import BusId, gpu_subject, parse_subject

if TYPE_CHECKING:
    from dolmen.facts.gpu import GpuFacts

_cache: list[Any] = [None, {}]  # the last gpu facts seen and their devices: one run at a time


def devices(facts: GpuFacts) -> dict[str, Device]:
    """Subject -> Device for every GPU ``facts`` knows."""
    out: dict[str, Device] = {}
    for s in facts.seen:
        out[gpu_subject(s.bus)] = Device(pci_bus_id=s.bus.nvsmi)
    for g in (*facts.nvlink_gpus, *facts.gpus):
        bus = BusId.parse(g.bus_id) or BusId.parse(g.pci_address)
        out[g.subject] = Device(
            index=g.position,
            uuid=g.uuid,
            serial=g.serial,
            model=g.name,
            pci_bus_id=bus.nvsmi if bus is not None else None,
        )
    return out


def known(facts: object) -> Mapping[str, Device]:
    """``devices(facts)``, computed once per facts object (every check of a run asks);
    nothing where the run did not read the gpu facts (None) or could not (a FactError)."""
    if facts is None:
        return {}
    from dolmen.facts.gpu import GpuFacts  # loaded already: the run read the gpu facts

    if not isinstance(facts, GpuFacts):
        return {}
    if _cache[0] is not facts:
        _cache[:] = [facts, devices(facts)]
    return _cache[1]  # type: ignore[no-any-return]


def device_of(subject: str, by_subject: Mapping[str, Device]) -> Device | None:
    """The identity of the GPU ``subject`` names; from the subject alone where the facts do
    not know it (``gpu:00000000:86:00.0``: its bus id; ``gpu:3``: its index); None for a
    subject that is no GPU."""
    if not subject.startswith("gpu:"):
        return None
    found = by_subject.get(subject)
    if found is not None:
        return found
    bus = parse_subject(subject)
    if bus is not None:
        return Device(pci_bus_id=bus.nvsmi)
    rest = subject[4:]
    if rest.isdigit():
        return Device(index=int(rest))
    if rest.startswith(("GPU-", "MIG-")):
        return Device(uuid=rest)
    return None

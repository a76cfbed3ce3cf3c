"""Which GPU a finding is about, and what the report calls it ("GPU 3 (00000000:86:00.0)").

Subjects name a GPU by its PCI bus id, in whatever spelling the check wrote
(``gpu:00000000:86:00.0``, ``gpu:0000:86:00.0``, ``pci:0000:86:00.0``): parsed once into a
``BusId`` they compare as one device (STYLE 19). The index comes from the verdict's
inventory (the driver's enumeration); a GPU the driver did not list keeps its bus id.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from dolmen.checks.model import Finding
from dolmen.values.busid import BusId

GPU_KINDS = ("gpu", "pci")  # subject kinds that can name a GPU by bus id


def subject_bus(subject: str) -> BusId | None:
    """The bus id a ``gpu:``/``pci:`` subject names, or None (``host``, ``ib:mlx5_0/1``)."""
    kind, sep, rest = subject.partition(":")
    if not sep or kind not in GPU_KINDS:
        return None
    return BusId.parse(rest)


def indexes(inventory: Mapping[str, Any]) -> dict[BusId, int]:
    """Bus id -> index of each GPU the inventory lists with both."""
    out: dict[BusId, int] = {}
    for d in inventory.get("gpus", {}).get("devices", ()) or ():
        bus = BusId.parse(d.get("bus_id"))
        if bus is not None and isinstance(d.get("index"), int):
            out[bus] = d["index"]
    return out


def gpu_buses(findings: Iterable[Finding], inventory: Mapping[str, Any]) -> list[BusId]:
    """Every GPU of the verdict: the inventory's in index order, then those only findings
    name (``gpu:`` subjects), by bus id. A ``pci:`` subject is a GPU only if listed."""
    known = indexes(inventory)
    order = sorted(known, key=lambda b: known[b])
    extra = {
        b
        for f in findings
        if f.subject.startswith("gpu:") and (b := subject_bus(f.subject)) is not None
    }
    return order + sorted(extra - set(known))


def labels(findings: Sequence[Finding], inventory: Mapping[str, Any]) -> dict[str, str]:
    """Subject -> "GPU 3 (00000000:86:00.0)" for each GPU subject the inventory indexes."""
    known = indexes(inventory)
    out: dict[str, str] = {}
    for f in findings:
        bus = subject_bus(f.subject)
        if bus is not None and bus in known:
            out[f.subject] = f"GPU {known[bus]} ({bus.nvsmi})"
    return out


def select_gpu(text: str, inventory: Mapping[str, Any]) -> BusId | None:
    """``--gpu N`` (an index the inventory lists) or a bus id in any spelling; None if the
    inventory has no GPU of that index."""
    if text.isdigit():
        wanted = int(text)
        return next((b for b, i in indexes(inventory).items() if i == wanted), None)
    return BusId.parse(text)


def valid_gpu_word(text: str) -> bool:
    """What ``--gpu`` accepts before any host is read: an index or a bus id."""
    return text.isdigit() or BusId.parse(text) is not None

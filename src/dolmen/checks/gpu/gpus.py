"""How ``gpu.*`` checks walk the driver's GPUs: lost GPUs, unread fields, subjects, load.

Every per-GPU check goes through ``per_gpu``: with no GPU in the driver's list it
answers ``unknown`` on the host (the inventory could not be read, so nothing can
pass), and a GPU that answered "GPU is lost" is ``unknown`` in every check but
``gpu.lost`` (whatever else its block holds is stale). ``unread`` turns a field
the facts could not read into ``skip`` (not supported, deprecated) or ``unknown``
(lost, permissions, malformed...), the split of docs/architecture.md.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence

from dolmen.checks.context import Context
from dolmen.checks.model import Outcome, skipped, unknown
from dolmen.facts.gpu import GpuFacts
from dolmen.host.gpu import DEPRECATED, NOT_SUPPORTED, Gpu
from dolmen.values.busid import BusId, gpu_subject

# A pointer, not the commands: every check of a lost GPU says it, gpu.lost gives the drain.
LOST_REMEDY = "See gpu.lost: drain the node and reboot it; service the GPU if it is lost again."
# Brands of data-center boards (Tesla before Ampere, "NVIDIA" after); GeForce, Quadro and
# "NVIDIA RTX" are workstation or desktop boards.
DATACENTER_BRANDS = frozenset({"Tesla", "NVIDIA"})

Body = Callable[[Gpu], Outcome | Iterable[Outcome]]


def is_skippable(reason: str) -> bool:
    """Whether an unread reason means "the hardware or driver does not offer it" (skip)."""
    return reason.startswith((NOT_SUPPORTED, DEPRECATED))


def reason_of(gpu: Gpu, keys: Sequence[str]) -> str:
    """The first reason the facts give for ``keys``; a hard reason wins over a soft one."""
    reasons = [gpu.unread[k] for k in keys if k in gpu.unread]
    hard = [r for r in reasons if not is_skippable(r)]
    if hard:
        return hard[0]
    return reasons[0] if reasons else "missing: no value and no reason in the facts"


def unread(gpu: Gpu, keys: str | Sequence[str], what: str) -> Outcome:
    """``skip`` or ``unknown`` for a GPU whose ``keys`` could not be read."""
    names = (keys,) if isinstance(keys, str) else tuple(keys)
    why = reason_of(gpu, names)
    if is_skippable(why):
        return skipped(gpu.subject, f"{what}: {why}", fields=list(names), reason=why)
    return unknown(gpu.subject, f"{what} could not be read: {why}", fields=list(names), reason=why)


def no_inventory(facts: GpuFacts) -> Outcome:
    """The host-level ``unknown`` of a check that has no GPU to look at."""
    why = facts.error or "the driver's output lists no GPU"
    return unknown(
        "host",
        f"the driver listed no GPU ({why})",
        remedy="See gpu.driver.responds: the GPU inventory must be readable first.",
        pci_gpus=list(facts.pci_gpus),
        error=facts.error,
        attempts=dict(facts.inventory.attempts),
    )


def per_gpu(ctx: Context, body: Body) -> list[Outcome]:
    """``body`` applied to each GPU the driver lists (lost GPUs and no GPUs handled here)."""
    facts = ctx.gpu
    if not facts.gpus:
        return [no_inventory(facts)]
    out: list[Outcome] = []
    for gpu in facts.gpus:
        if gpu.lost:
            out.append(
                unknown(
                    gpu.subject,
                    "the GPU is lost: none of its readings can be trusted",
                    remedy=LOST_REMEDY,
                )
            )
            continue
        got = body(gpu)
        out.extend([got] if isinstance(got, Outcome) else got)
    return out


def is_datacenter(gpu: Gpu) -> bool:
    """Whether the GPU is a data-center board (by the brand the driver reports)."""
    return gpu.brand in DATACENTER_BRANDS


def subject_for_bus(bdf: str | None, gpus: Sequence[Gpu]) -> str:
    """The subject of a GPU named by bus id (any spelling): the listed GPU's, else
    ``values.busid.gpu_subject`` of the bus id, the same text; ``host`` without one."""
    if bdf is None:
        return "host"
    gpu = gpu_by_bus(bdf, gpus)
    return gpu.subject if gpu is not None else gpu_subject(bdf)


def gpu_by_bus(bdf: str | None, gpus: Sequence[Gpu]) -> Gpu | None:
    """The listed GPU at ``bdf`` (any spelling of its bus id), if any."""
    bus = BusId.parse(bdf)
    return next((g for g in gpus if bus is not None and BusId.parse(g.pci_address) == bus), None)


def target(gpu: Gpu) -> str:
    """How nvidia-smi ``-i`` names this GPU: its bus id (stable across reboots) as its subject
    spells it, else uuid, else position."""
    bus = BusId.parse(gpu.bus_id) or BusId.parse(gpu.pci_address)
    return bus.nvsmi if bus is not None else gpu.uuid or str(gpu.position)

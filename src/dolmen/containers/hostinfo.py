"""The driver and GPU class a resolution needs, from a host's stack and GPU facts."""

from __future__ import annotations

import contextlib
from dataclasses import dataclass

from dolmen.containers.resolve import gpu_class
from dolmen.host import Host


@dataclass(frozen=True)
class HostGpus:
    """The loaded driver (or why it is unknown) and the GPUs' names and class."""

    driver: str | None
    driver_unknown: str  # why ``driver`` is None
    gpus: tuple[str, ...]
    datacenter: bool | None  # True: every GPU is a data-center one; None: unknown
    subjects: tuple[str, ...] = ()  # the GPUs the driver answered for, in its (PCI) order
    silent: str = ""  # why no GPU answered (NVML, nvidia-smi); "" when some did
    no_gpu: bool = False  # the PCI tree was read and no source shows an NVIDIA GPU


def read(host: Host) -> HostGpus:
    """The driver from the stack facts (proc, module, libraries) or the GPU inventory."""
    from dolmen.facts import FactError, FactStore
    from dolmen.facts.gpu import PCI_TREE
    from dolmen.facts.reading import READ

    store = FactStore(host)
    driver = None
    why = "the driver version could not be read"
    names: list[str] = []
    subjects: tuple[str, ...] = ()
    silent = "the GPU facts could not be read"
    no_gpu = False
    try:
        gpu = store.get("gpu")
        names = [g.name for g in gpu.gpus if g.name]
        subjects = tuple(g.subject for g in gpu.gpus)
        silent = "" if subjects else (gpu.error or "neither NVML nor nvidia-smi listed a GPU")
        # evidence of absence: the bus was read and shows none (not merely "unread")
        no_gpu = gpu.sources.get(PCI_TREE) == READ and gpu.count == 0
        driver = gpu.driver_version
        if driver is None:
            reason = gpu.unread.get("driver_version", gpu.error or "missing")
            why = f"the driver version could not be read ({reason})"
    except FactError as e:
        why = f"the GPU facts could not be read ({e.message})"
        silent = why
    if driver is None:
        with contextlib.suppress(FactError):
            driver = store.get("stack").driver_version
    classes = {gpu_class(n) for n in names}
    datacenter = None
    if names and classes == {"datacenter"}:
        datacenter = True
    elif "consumer" in classes:
        datacenter = False
    return HostGpus(driver, why, tuple(names), datacenter, subjects, silent, no_gpu)

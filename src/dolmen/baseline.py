"""Baselines: the expected state of a known-good host, and how to read one back.

``dolmen baseline capture -o FILE`` records what a fleet of alike nodes shares:
GPU count, models, VBIOS and PCIe capability per bus id, NVLinks per GPU, IB ports
with rate and firmware, the PCIe capability of NICs, NVMe and NVSwitches, driver
and CUDA versions, memory and CPUs. Nothing that identifies one machine (serials,
UUIDs, GUIDs, the hostname other than as provenance) goes in, so one file serves
every node of the same build. ``dolmen validate --baseline FILE`` runs the
``baseline.*`` checks against it.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import asdict, field
from datetime import datetime
from pathlib import Path
from typing import Any

from dolmen import __version__
from dolmen.compat import UTC
from dolmen.errors import InputError
from dolmen.frozen import frozen
from dolmen.fsutil import read_regular

SCHEMA = "dolmen.baseline/1"
MAX_BASELINE_BYTES = 16 << 20  # a baseline is a few KiB; 16 MiB is far past any real one

# PCI functions whose link capability is part of a node's build (vendor, class prefix).
_TRACKED = (("15b3", ""), ("", "0108"), ("10de", "0680"))  # Mellanox NICs, NVMe, NVSwitch


@frozen
class BaselineGpu:
    """One GPU slot: what should sit at this bus id."""

    bus_id: str  # normalised like sysfs: 0000:9b:00.0
    model: str | None
    vbios: str | None
    pcie_gen_max: int | None
    pcie_width_max: int | None
    nvlinks: int | None  # links reported (any state) ; None when not read


@frozen
class BaselinePort:
    """One InfiniBand/RoCE port."""

    device: str
    port: int
    rate_gbps: float | None
    link_layer: str | None
    fw_version: str | None


@frozen
class BaselineLink:
    """The PCIe capability of a tracked device (NIC, NVMe, NVSwitch)."""

    bdf: str
    vendor_id: str | None
    class_id: str | None
    generation: int | None
    width: int | None


@frozen
class Baseline:
    """The expected state of a known-good host (see module docstring)."""

    gpus: tuple[BaselineGpu, ...] = ()
    ib_ports: tuple[BaselinePort, ...] = ()
    pcie: tuple[BaselineLink, ...] = ()
    driver_version: str | None = None
    cuda_version: str | None = None
    memory_bytes: int | None = None
    cpu_model: str | None = None
    cpu_threads: int | None = None
    nvme_count: int | None = None
    captured_from: str = ""
    created: str = ""
    path: str = ""
    tolerances: Mapping[str, float] = field(default_factory=lambda: {"memory_pct": 5.0})

    @property
    def gpu_count(self) -> int:
        """How many GPUs the node should have."""
        return len(self.gpus)


def capture_baseline(facts: Mapping[str, Any], hostname: str) -> Baseline:
    """A baseline from collected facts (``FactStore.collect`` output; errors are skipped)."""
    from dolmen.facts import FactError

    def get(name: str) -> Any:
        value = facts.get(name)
        return None if value is None or isinstance(value, FactError) else value

    gpu, ib, pci, mem, cpu, storage = (
        get(n) for n in ("gpu", "infiniband", "pci", "memory", "cpu", "storage")
    )
    sysfs = pci.by_bdf() if pci is not None else {}
    gpus: list[BaselineGpu] = []
    for g in gpu.gpus if gpu is not None else ():
        dev = sysfs.get(g.pci_address or "")
        top = dev.max_link if dev is not None else None
        links = gpu.nvlinks.get(g.subject) if gpu is not None else None
        gpus.append(
            BaselineGpu(
                bus_id=g.pci_address or g.bus_id or str(g.position),
                model=g.name,
                vbios=g.vbios,
                pcie_gen_max=(top.generation if top and top.generation else g.pcie.gen_max),
                pcie_width_max=(top.width if top and top.width else g.pcie.width_max),
                nvlinks=None if links is None else len(links),
            )
        )
    ports = tuple(
        BaselinePort(p.device, p.port, p.rate_gbps, p.link_layer, p.fw_version)
        for p in (ib.ports if ib is not None else ())
    )
    links = tuple(
        BaselineLink(
            d.bdf,
            d.vendor_id,
            d.class_id,
            d.max_link.generation if d.max_link else None,
            d.max_link.width if d.max_link else None,
        )
        for d in (pci.devices if pci is not None else ())
        if tracked(d.vendor_id, d.class_id)
    )
    return Baseline(
        gpus=tuple(sorted(gpus, key=lambda g: g.bus_id)),
        ib_ports=tuple(sorted(ports, key=lambda p: (p.device, p.port))),
        pcie=tuple(sorted(links, key=lambda link: link.bdf)),
        driver_version=gpu.driver_version if gpu is not None else None,
        cuda_version=gpu.cuda_version if gpu is not None else None,
        memory_bytes=mem.total_bytes if mem is not None else None,
        cpu_model=cpu.model_name if cpu is not None else None,
        cpu_threads=cpu.threads if cpu is not None else None,
        nvme_count=len(storage.nvme) if storage is not None else None,
        captured_from=hostname,
        created=datetime.now(UTC).isoformat(timespec="seconds").replace("+00:00", "Z"),
    )


def tracked(vendor_id: str | None, class_id: str | None) -> bool:
    """Whether a PCI function's link capability belongs in a baseline."""
    return any(
        (not v or v == vendor_id) and (not c or (class_id or "").startswith(c)) for v, c in _TRACKED
    )


def dump_baseline(b: Baseline) -> str:
    """The baseline as its JSON document."""
    body = asdict(b)
    body.pop("path")
    return json.dumps({"schema": SCHEMA, "dolmen_version": __version__, **body}, indent=2) + "\n"


def load_baseline(path: str | Path) -> Baseline:
    """Read a baseline file; InputError names what is wrong with it."""
    p = Path(path)
    hint = "make one on a known-good node: dolmen baseline capture -o FILE"
    try:
        # A baseline is a few KiB; a FIFO or a device given as one must not block or fill memory.
        doc = json.loads(read_regular(p, MAX_BASELINE_BYTES).decode("utf-8"))
    except FileNotFoundError as e:
        raise InputError("no such baseline file", path=str(p), hint=hint) from e
    except OSError as e:
        why = e.strerror or str(e)
        raise InputError(f"not a readable baseline ({why})", path=str(p), hint=hint) from e
    except (UnicodeDecodeError, ValueError) as e:
        raise InputError(f"not a readable baseline ({e})", path=str(p), hint=hint) from e
    if not isinstance(doc, dict) or doc.get("schema") != SCHEMA:
        got = doc.get("schema") if isinstance(doc, dict) else type(doc).__name__
        raise InputError(f"not a {SCHEMA} document (schema: {got!r})", path=str(p), hint=hint)
    try:
        return Baseline(
            gpus=tuple(BaselineGpu(**g) for g in doc.get("gpus", [])),
            ib_ports=tuple(BaselinePort(**x) for x in doc.get("ib_ports", [])),
            pcie=tuple(BaselineLink(**x) for x in doc.get("pcie", [])),
            driver_version=doc.get("driver_version"),
            cuda_version=doc.get("cuda_version"),
            memory_bytes=doc.get("memory_bytes"),
            cpu_model=doc.get("cpu_model"),
            cpu_threads=doc.get("cpu_threads"),
            nvme_count=doc.get("nvme_count"),
            captured_from=str(doc.get("captured_from", "")),
            created=str(doc.get("created", "")),
            path=str(p),
            tolerances=dict(doc.get("tolerances", {"memory_pct": 5.0})),
        )
    except TypeError as e:
        raise InputError(f"baseline has unexpected fields ({e})", path=str(p), hint=hint) from e


NOT_READ = "not read"  # what the text says of a value the capture could not read (never None)


def describe_baseline(b: Baseline) -> list[str]:
    """``dolmen baseline show``'s lines: every value the capture could not read is said to
    be "not read" (a baseline made from a partial bundle has many), never ``None``."""

    def said(label: str, value: object, unit: str = "") -> str:
        return f"{label} {NOT_READ}" if value is None or value == "" else f"{label} {value}{unit}"

    def link(gen: int | None, width: int | None) -> str:
        if gen is None and width is None:
            return f"PCIe link {NOT_READ}"
        return f"Gen{gen if gen is not None else '?'} x{width if width is not None else '?'}"

    mem = None if not b.memory_bytes else f"{b.memory_bytes / 2**30:.0f} GiB"
    cpu = None if b.cpu_model is None else f"{b.cpu_model} x{b.cpu_threads or '?'}"
    lines = [
        f"captured from {b.captured_from or 'an unnamed host'} at {b.created or 'an unknown time'}",
        f"{said('driver', b.driver_version)}  {said('CUDA', b.cuda_version)}",
        f"{said('memory', mem)}  {said('CPU', cpu)}  {said('NVMe', b.nvme_count)}",
    ]
    lines += [
        f"gpu {g.bus_id}  {g.model or 'model ' + NOT_READ}  {said('VBIOS', g.vbios)}  "
        f"{link(g.pcie_gen_max, g.pcie_width_max)}  {said('NVLinks', g.nvlinks)}"
        for g in b.gpus
    ]
    lines += [
        f"ib {p.device}/{p.port}  {said('rate', p.rate_gbps, ' Gb/s')}  "
        f"{said('link layer', p.link_layer)}  {said('fw', p.fw_version)}"
        for p in b.ib_ports
    ]
    lines += [
        f"pci {x.bdf}  {x.vendor_id or '?'}:{x.class_id or '?'}  {link(x.generation, x.width)}"
        for x in b.pcie
    ]
    return lines

"""``dolmen facts --summary``: the inventory of a host, one screen instead of 8,000 lines.

What an operator checks first about a node (or a bundle sent by one): its GPUs with
index, model, bus id and driver, its CPUs and memory, NICs and InfiniBand ports with
rate and state, mounts, and the versions of the stack. It is made from the
``dolmen.facts/1`` document (``render_summary(doc)`` is pure: a saved ``facts --json`` gives
the same table), so it shows what the facts hold and nothing else: a value the facts
could not read says ``not read`` and the facts' reason (a bundle without ``sys/class/net``
does not have "no NICs"). Identifiers are never cut; columns are plain text, so a pipe or
a file gets the same table as a terminal.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

# The subsystems the summary reads (the kernel log, security and tuning are left out).
NEEDS = ("os", "cpu", "memory", "pci", "gpu", "infiniband", "network", "storage", "stack")
NOT_READ = "not read"


def render_summary(doc: dict[str, Any]) -> str:
    """The inventory text of one facts document (see the module docstring)."""
    out: list[str] = []
    host = doc.get("host") or {}
    where = host.get("root") if host.get("kind") != "live" else None
    out.append(
        f"host: {host.get('hostname') or NOT_READ} ({host.get('kind', '?')}"
        + (f" {where})" if where else ")")
    )
    out += _os(doc.get("os"))
    out += _gpus(doc.get("gpu"), doc.get("pci"))
    out += _cpu(doc.get("cpu"))
    out += _memory(doc.get("memory"))
    out += _nics(doc.get("network"))
    out += _ib(doc.get("infiniband"))
    out += _mounts(doc.get("storage"))
    out += _stack(doc.get("stack"), doc.get("gpu"))
    return "\n".join(out) + "\n"


def _failed(facts: Any, what: str, keys: Sequence[str] = ()) -> list[str] | None:
    """The line for a subsystem that could not be collected at all (or was not asked), or
    whose ``keys`` were all unread (one reason, not one per field)."""
    if facts is None:
        return [f"{what}: {NOT_READ} (not collected)"]
    if set(facts) == {"error"}:
        return [f"{what}: {NOT_READ}: {facts['error']}"]
    if keys and all(facts.get(k) is None for k in keys):
        return [f"{what}: {value(facts, keys[0])}"]
    return None


def value(facts: dict[str, Any], key: str, shown: Any = None) -> str:
    """``shown`` (or the field) as text, or ``not read`` with the facts' reason for it."""
    got = facts.get(key)
    if got is None or got == []:
        why = (facts.get("unread") or {}).get(key)
        return f"{NOT_READ} ({why})" if why else NOT_READ
    return str(got if shown is None else shown)


def table(header: Sequence[str], rows: Sequence[Sequence[str]], indent: str = "  ") -> list[str]:
    """Aligned plain-text columns, nothing cut (the last column is not padded)."""
    widths = [max(len(str(r[i])) for r in (header, *rows)) for i in range(len(header))]
    return [
        (indent + "  ".join(str(c).ljust(w) for c, w in zip(r, widths))).rstrip()
        for r in (header, *rows)
    ]


def _os(os: Any) -> list[str]:
    failed = _failed(os, "os", ("kernel_release", "distribution", "architecture"))
    if failed:
        return failed
    dist = (os.get("distribution") or {}).get("pretty_name")
    virt = os.get("virtualization") or (
        "none"
        if os.get("hypervisor_flag") is False and "virtualization" not in (os.get("unread") or {})
        else value(os, "virtualization")
    )
    return [
        f"os: {dist or value(os, 'distribution')}, kernel {value(os, 'kernel_release')}, "
        f"{value(os, 'architecture')}, virtualization: {virt}"
    ]


def _gpus(gpu: Any, pci: Any) -> list[str]:
    failed = _failed(gpu, "GPUs")
    if failed:
        return ["", *failed]
    listed = gpu.get("gpus") or []
    on_bus = gpu.get("pci_gpus") or []
    driver = value(gpu, "driver_version")
    cuda = value(gpu, "cuda_version")
    if listed:
        models = sorted({str(g.get("name") or NOT_READ) for g in listed})
        head = (
            f"GPUs: {len(listed)} ({', '.join(models)}); driver {driver}, CUDA {cuda}; "
            f"from {gpu.get('source') or '?'}"
        )
        if on_bus and len(on_bus) != len(listed):
            head += f"; {len(on_bus)} on the PCI bus"
        rows = [
            [
                _text(g.get("index")),
                _text(g.get("name")),
                _text(g.get("pci_address") or g.get("bus_id")),
                str(gpu.get("driver_version") or NOT_READ),
                _text(g.get("serial")),
                _text(g.get("uuid")),
            ]
            for g in listed
        ]
        return ["", head, *table(["INDEX", "MODEL", "BUS ID", "DRIVER", "SERIAL", "UUID"], rows)]
    if on_bus:
        why = (gpu.get("sources") or {}).get("GPU driver inventory") or gpu.get("error")
        head = f"GPUs: {len(on_bus)} on the PCI bus; the driver's inventory {NOT_READ}: {why}"
        rows = [["-", NOT_READ, str(b), NOT_READ] for b in on_bus]
        return ["", head, *table(["INDEX", "MODEL", "BUS ID", "DRIVER"], rows)]
    sources = gpu.get("sources") or {}
    read = [k for k, v in sources.items() if v == "read"]
    if {"PCI tree", "lspci"} & set(read):  # only the bus itself can show there is none
        return ["", f"GPUs: none found (read: {', '.join(read)})"]
    why = "; ".join(f"{k}: {v}" for k, v in sources.items()) or gpu.get("error") or "no source"
    return ["", f"GPUs: {NOT_READ} ({why})"]


def _cpu(cpu: Any) -> list[str]:
    failed = _failed(cpu, "CPUs", ("model_name", "sockets", "cores", "threads"))
    if failed:
        return ["", *failed]
    return [
        "",
        f"CPUs: {value(cpu, 'sockets')} sockets, {value(cpu, 'cores')} cores, "
        f"{value(cpu, 'threads')} threads: {value(cpu, 'model_name')} ({value(cpu, 'vendor')})",
    ]


def _memory(mem: Any) -> list[str]:
    failed = _failed(mem, "memory", ("total_bytes", "available_bytes"))
    if failed:
        return failed
    total, avail = mem.get("total_bytes"), mem.get("available_bytes")
    huge = ""
    if mem.get("hugepages_total") is not None:
        size = mem.get("hugepage_size_bytes")
        each = f" of {size >> 20} MiB" if isinstance(size, int) else ""
        huge = f"; hugepages {mem['hugepages_total']}{each}, {mem.get('hugepages_free')} free"
    return [
        f"memory: {value(mem, 'total_bytes', _gib(total))} total, "
        f"{value(mem, 'available_bytes', _gib(avail))} available{huge}"
    ]


def _nics(net: Any) -> list[str]:
    failed = _failed(net, "NICs")
    if failed:
        return ["", *failed]
    found = [i for i in net.get("interfaces") or [] if i.get("name") != "lo"]
    if not found:
        return [
            "",
            f"NICs: {value(net, 'interfaces')}"
            if "interfaces" in (net.get("unread") or {})
            else "NICs: none but lo",
        ]
    unread = net.get("unread") or {}
    rows = [
        [
            str(i.get("name")),
            _text(i.get("operstate")),
            _speed(i, unread),
            _text(i.get("driver")),
            _text(i.get("pci_bdf")),
            _text(i.get("address")),
        ]
        for i in found
    ]
    return [
        "",
        f"NICs: {len(found)}",
        *table(["NAME", "STATE", "SPEED", "DRIVER", "PCI", "MAC"], rows),
    ]


def _speed(nic: dict[str, Any], unread: dict[str, str]) -> str:
    if nic.get("speed_mbps") is not None:
        return f"{nic['speed_mbps'] / 1000:g} Gb/s"
    return "not read" if f"{nic.get('name')}.speed_mbps" not in unread else "unknown"


def _ib(ib: Any) -> list[str]:
    failed = _failed(ib, "InfiniBand")
    if failed:
        return ["", *failed]
    ports = ib.get("ports") or []
    if not ports:
        why = (ib.get("unread") or {}).get("ports")
        return ["", f"InfiniBand: {NOT_READ} ({why})" if why else "InfiniBand: no ports"]
    rows = [
        [
            f"{p.get('device')}/{p.get('port')}",
            _text(p.get("state")),
            _text(p.get("phys_state")),
            f"{p['rate_gbps']:g} Gb/s" if p.get("rate_gbps") is not None else NOT_READ,
            _text(p.get("link_layer")),
            _text(p.get("fw_version")),
        ]
        for p in ports
    ]
    read = ", ".join(ib.get("read") or []) or "?"
    head = f"InfiniBand: {len(ports)} ports (from {read})"
    return ["", head, *table(["PORT", "STATE", "PHYSICAL", "RATE", "LINK LAYER", "FIRMWARE"], rows)]


def _mounts(storage: Any) -> list[str]:
    failed = _failed(storage, "mounts")
    if failed:
        return ["", *failed]
    mounts = [m for m in storage.get("mounts") or [] if m.get("kind") not in ("pseudo", None)]
    if not mounts:
        return [
            "",
            f"mounts: {value(storage, 'mounts')}"
            if "mounts" in (storage.get("unread") or {})
            else "mounts: none but pseudo file systems",
        ]
    rows = [
        [
            str(m.get("mountpoint")),
            _text(m.get("device")),
            _text(m.get("fstype")),
            _gib(m.get("size_bytes")),
            _gib(m.get("used_bytes")),
            "ro" if m.get("read_only") else "rw",
        ]
        for m in mounts
    ]
    return [
        "",
        f"mounts: {len(mounts)}",
        *table(["MOUNT", "DEVICE", "TYPE", "SIZE", "USED", "MODE"], rows),
    ]


def _stack(stack: Any, gpu: Any) -> list[str]:
    failed = _failed(stack, "stack")
    if failed:
        return ["", *failed]
    toolkits = ", ".join(
        f"{t.get('version') or '?'} ({t.get('path')})" for t in stack.get("toolkits") or []
    )
    cuda = value(gpu, "cuda_version") if isinstance(gpu, dict) and set(gpu) != {"error"} else None
    rows = [
        [
            "driver",
            value(stack, "driver_version")
            + (f" ({stack['driver_flavour']})" if stack.get("driver_flavour") else ""),
        ],
        ["CUDA (driver API)", cuda or NOT_READ],
        ["CUDA toolkits", toolkits or value(stack, "toolkits")],
        ["cuDNN", _lib(stack, "cudnn")],
        ["NCCL", _lib(stack, "nccl")],
        ["TensorRT", _lib(stack, "tensorrt")],
    ]
    return ["", "stack:", *table(["", ""], rows)[1:]]


def _lib(stack: dict[str, Any], key: str) -> str:
    lib = stack.get(key)
    if isinstance(lib, dict) and lib.get("version"):
        return f"{lib['version']} ({lib.get('source') or '?'})"
    return value(stack, key)


def _text(v: Any) -> str:
    return NOT_READ if v is None or v == "" else str(v)


def _gib(n: Any) -> str:
    return f"{n / (1 << 30):.1f} GiB" if isinstance(n, int) else NOT_READ

"""PCI facts: every device on the bus with ids, driver, NUMA node, PCIe link, AER counters.

Source: ``sys/bus/pci/devices/<bdf>/`` and only the files needed: ``uevent`` (ids,
class, driver in one read; the separate ``vendor``/``device``/``class`` files where
a tree has no uevent), ``numa_node``, ``local_cpulist``,
``{current,max}_link_{speed,width}``, ``aer_dev_{correctable,fatal,nonfatal}``; the
parent bridge comes from the ``sys/bus/pci/devices/<bdf>`` link target
(``../../../devices/pci0000:00/0000:00:02.1/0000:01:00.0``). No recursive walk.

``lspci -vvv`` (tree key ``lspci%20-vvv``, parsed by ``dolmen.facts.pci.lspci``) is a
second source, run only when sysfs has no device or no device shows a link (an
old kernel, a support bundle holding lspci output alone). Without root, lspci
prints ``<access denied>`` instead of the link lines.
"""

from __future__ import annotations

from dataclasses import replace

from dolmen.facts.pci.model import (
    GENERATIONS,
    AerCounters,
    PciDevice,
    PciFacts,
    PciLink,
    is_gpu,
    make_link,
)
from dolmen.facts.pci.sysfs import (
    DEVICES,
    is_sysfs_name,
    parent_from_link,
    parse_aer,
    parse_link_speed,
    parse_uevent,
    read_device,
)
from dolmen.facts.reading import absent
from dolmen.host import NOT_IN_BUNDLE, Host, RunStatus
from dolmen.values.busid import BusId

__all__ = [
    "DEVICES",
    "GENERATIONS",
    "AerCounters",
    "PciDevice",
    "PciFacts",
    "PciLink",
    "collect",
    "is_gpu",
    "is_sysfs_name",
    "make_link",
    "parent_from_link",
    "parse_aer",
    "parse_link_speed",
    "parse_uevent",
    "read_device",
]


# The bus's sysfs folder: every Linux host with a PCI bus has it, whatever its devices.
BUS = "sys/bus/pci"


def unheld_bus(host: Host, lspci: RunStatus) -> bool:
    """Whether a recorded tree lacks the PCI bus because it did not record it: no
    ``sys/bus/pci`` folder at all (a host with a PCI bus always has one, even with no
    device in it) and no lspci run either. On the live host that folder's absence is
    the host's (no PCI bus); a tree with sys/ but no sys/bus/pci (a demo tree, a hand-made
    one) says nothing of the bus: absence of a source is not evidence of absence."""
    unrun = lspci in (RunStatus.UNRECORDED, RunStatus.MISSING)
    return host.kind != "live" and unrun and not host.is_dir(BUS)


def collect(host: Host, *, aer: bool = True) -> PciFacts:
    """Read and parse the PCI facts of ``host`` (``aer=False``: without AER counters)."""
    unread: dict[str, str] = {}
    bdfs = [n for n in host.listdir(DEVICES) if is_sysfs_name(n)]
    devices = [read_device(host, bdf, unread, aer=aer) for bdf in bdfs]
    if devices and any(d.current_link is not None for d in devices):
        return PciFacts(tuple(devices), unread)

    # Imported here: sysfs has the links on most hosts, and lspci's patterns cost 1 ms.
    from dolmen.facts.pci.lspci import lspci_cut, parse_lspci_vvv

    res = host.run(["lspci", "-vvv"], timeout=30)
    # lspci prints what it could before failing; keep it when there is any.
    listed = parse_lspci_vvv(res.stdout) if res.stdout.strip() else []
    if not res.ok:
        unread["lspci"] = res.failure()
    elif listed and (cut := lspci_cut(res.stdout)):
        unread["lspci"] = cut  # the devices after the cut are not listed
    if not devices:
        if not listed:
            why = absent(host, DEVICES)
            if why.startswith(NOT_IN_BUNDLE) and res.status is RunStatus.UNRECORDED:
                unread["devices"] = why
            elif unheld_bus(host, res.status):
                unread["devices"] = f"{NOT_IN_BUNDLE}: {BUS}"
            else:
                unread["devices"] = "missing (no sys/bus/pci/devices and no lspci output)"
        else:
            # lspci -vvv prints no tree, but its bridges' bus numbers give the parents
            gaps = (
                ("aer", "local_cpus")
                if any(d.parent for d in listed)
                else ("aer", "parent", "local_cpus")
            )
            for gap in gaps:
                unread[gap] = "not supported (devices listed by lspci -vvv only)"
        return PciFacts(tuple(listed), unread)
    by_bus = {BusId.parse(d.bdf): d for d in listed}
    merged = []
    for dev in devices:
        extra = by_bus.get(BusId.parse(dev.bdf))
        if extra is not None and (extra.current_link or extra.max_link):
            dev = replace(
                dev,
                current_link=extra.current_link,
                max_link=extra.max_link,
                description=extra.description,
                source="sysfs+lspci",
            )
            unread.pop(f"{dev.bdf}.current_link", None)
            unread.pop(f"{dev.bdf}.max_link", None)
        merged.append(dev)
    return PciFacts(tuple(merged), unread)

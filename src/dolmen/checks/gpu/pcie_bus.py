"""gpu.pcie.link where no driver lists the GPUs: each NVIDIA GPU's link and the links of
the bridges above it, from the PCI listing alone (``lspci -vvv`` pasted into a ticket, a
tree whose nvidia-smi is not there or failed).

Judged as ``gpu.pcie.link`` judges sysfs's link (checks/gpu/pcie.py): the maximum is the
lower of what the device and the port above it can do (LnkCap of both); a narrower width
fails at any load, a lower speed is a fault only under load, and such a bundle holds no
load (no nvidia-smi): unknown, never pass or fail. A link between two bridges (a PCIe
switch's upstream port and the root port above it) carries every GPU below it: narrower
fails, slower warns (its speed does not follow one GPU's idle state). A downstream port's
own LnkSta is the link to the device below it, judged as that device's; so the links in
a GPU's chain are the GPU's and every upstream port's (each bridge whose parent is shown).
An upstream port with other devices below it (an NVMe drive, a NIC) is
``system.pcie.downgraded``'s, which judges it for them all.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from dolmen.checks.gpu.pcie import lowest
from dolmen.checks.model import Outcome, failed, passed, unknown, warned
from dolmen.checks.system.pcie_links import gpu_only_below
from dolmen.facts.pci import PciDevice, is_gpu
from dolmen.values.busid import gpu_subject, pci_subject

NO_LOAD = "the GPU's load is unread (no driver inventory: nvidia-smi)"


def bus_links(devices: Mapping[str, PciDevice]) -> list[Outcome]:
    """The outcomes for every NVIDIA GPU on the bus with a link to read and the upstream
    links above it, once each; [] when no GPU there shows a link."""
    gpus = [d for d in devices.values() if is_gpu(d) and (d.current_link or d.max_link)]
    out: list[Outcome] = []
    judged: set[str] = set()
    for gpu in sorted(gpus, key=lambda d: d.bdf):
        port = devices.get(gpu.parent or "")
        out.append(_judge(gpu, port, gpu_subject(gpu.bdf), gpu=True))
        # Up the chain: the port above the GPU is a root port or a switch's downstream
        # port; the next bridge up, where shown, is that switch's upstream port.
        up = devices.get(port.parent or "") if port else None
        while up is not None and up.parent and up.bdf not in judged:
            above = devices.get(up.parent)
            if above is None:
                break
            judged.add(up.bdf)
            if up.current_link is not None and gpu_only_below(up, devices):
                out.append(_judge(up, above, pci_subject(up.bdf), gpu=False, below=gpu.bdf))
            up = devices.get(above.parent or "")
    return out


def _judge(
    dev: PciDevice, port: PciDevice | None, subject: str, *, gpu: bool, below: str = ""
) -> Outcome:
    cur, cap, slot = dev.current_link, dev.max_link, port.max_link if port else None
    top_gen = lowest(cap.generation if cap else None, slot.generation if slot else None)
    top_w = lowest(cap.width if cap else None, slot.width if slot else None)
    gen = cur.generation if cur else None
    width = cur.width if cur else None
    ev: dict[str, Any] = {
        "gen": gen,
        "gen_max": top_gen,
        "width": width,
        "width_max": top_w,
        "source": dev.source,
        "slot": port.bdf if port else None,
        "load": "unread",
    }
    if below:
        ev["gpu_below"] = below
    what = "link" if gpu else f"upstream link (above GPU {below})"
    if gen is None and width is None:
        return unknown(subject, f"{what} state not shown (LnkSta: lspci -vvv as root)", **ev)
    if width is not None and top_w is not None and width < top_w:
        text = f"{what} width x{width} of x{top_w}: lanes are missing"
        if slot is None or slot.width is None:
            return warned(subject, f"{text}, or the slot is narrower (its port is not shown)", **ev)
        return failed(subject, text, **ev)
    if gen is not None and top_gen is not None and gen < top_gen:
        text = f"{what} at Gen{gen} of Gen{top_gen}"
        if gpu:  # a GPU lowers its speed at idle: a fault only under load, not shown here
            return unknown(subject, f"{text}, and {NO_LOAD}", **ev)
        return warned(subject, f"{text}: the GPUs below it share less bandwidth", **ev)
    shown = f"Gen{gen} x{width}" if gen and width else f"Gen{gen}" if gen else f"x{width}"
    return passed(subject, f"{what} {shown}, the maximum ({dev.source})", **ev)

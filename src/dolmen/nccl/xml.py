"""NCCL_TOPO_FILE: the host topology in NCCL's own XML format, from the PCI tree: pure.

The shape is the one NCCL dumps (NCCL_TOPO_DUMP_FILE) and loads (src/graph/xml.cc,
``ncclTopoGetXmlFromFile``), as Azure ships for its VMs (azhpc-images topology/)::

    <system version="1">
      <cpu numaid="0" affinity="ffffffff,ffffffff" arch="x86_64" vendor="GenuineIntel" ...>
        <pci busid="0000:16:00.0" class="0x060400" link_speed="32.0 GT/s PCIe" ...>
          <pci busid="0000:19:00.0" class="0x030200" ...>
            <gpu dev="0" sm="90" rank="0" gdr="1">
              <nvlink target="0000:83:00.0" count="18" tclass="0x068000"/>
            </gpu>
          </pci>
          <pci busid="0000:1a:00.0" class="0x020700" ...>
            <nic><net name="mlx5_0" dev="0" speed="400000" port="1" guid="0x..."/></nic>
          </pci>
        </pci>
      </cpu>
    </system>

What NCCL's hand-written parser needs, and this writer keeps: no ``<?xml ...?>`` line
(it reads ``?`` as an error), attributes separated by single spaces, every value in
double quotes and under 255 characters (MAX_STR_LEN), no space before ``/>``, newlines and
spaces only between elements (no tabs), bus ids lower case as sysfs writes them (NCCL
finds its GPUs and NICs in the file by ``busid``). The ``pci`` nesting is NCCL's folded
tree (a device under the bridge two levels up: ``facts.topology.tree.folded``), so the
paths NCCL computes from the file are the ones it computes itself. An attribute dolmen
cannot read is left out: NCCL fills a missing one from sysfs for every device it uses
(xml.cc: ``if (index == -1)``), and ``rank`` it always sets itself. NVSwitches are not
``pci`` elements in NCCL's format: a GPU's ``nvlink`` to an NVSwitch (``tclass``
0x068000) is what places them.
"""

from __future__ import annotations

import re
from collections.abc import Iterable

from dolmen.facts.topology.tree import folded
from dolmen.facts.topology.tree_model import Bridge, Device, HostTopology

VERSION = "1"  # NCCL_TOPO_XML_VERSION
NVSWITCH_CLASS = "0x068000"
GPU_CLASS = "0x030200"
UNSEEN_NVSWITCH = "fffffff:ffff:ff"  # what NCCL writes for an NVSwitch a VM hides
MAX_VALUE = 254  # MAX_STR_LEN is 255 with its terminating NUL
_NAME = re.compile(r"[A-Za-z0-9_.:-]{1,64}")


class XmlGap(ValueError):
    """The topology lacks what the file needs (no GPU; a GPU with no PCI location)."""


def cpumap(cpus: Iterable[int], highest: int) -> str:
    """CPUs as the kernel's ``node<N>/cpumap`` writes them: 32-bit words of hex, most
    significant first, as many words as ``highest`` (the host's last CPU) needs."""
    mask = 0
    for c in cpus:
        mask |= 1 << c
    words = highest // 32 + 1
    return ",".join(f"{(mask >> (32 * w)) & 0xFFFFFFFF:08x}" for w in reversed(range(words)))


def _attrs(pairs: Iterable[tuple[str, object]]) -> str:
    out = []
    for key, value in pairs:
        text = str(value)
        if value is None or not text or len(text) > MAX_VALUE or '"' in text:
            continue
        out.append(f' {key}="{text}"')
    return "".join(out)


def _hex(value: str | None) -> str | None:
    return f"0x{value}" if value else None


def _speed(gts: float | None) -> str | None:
    # sysfs's own spelling since Linux 5.7, which NCCL's kvDictPciGen lists
    return f"{gts:.1f} GT/s PCIe" if gts is not None else None


def _pci(d: Device | Bridge, cls: str | None) -> str:
    return _attrs(
        (
            ("busid", d.bdf),
            ("class", cls),
            ("vendor", _hex(d.vendor_id)),
            ("device", _hex(d.device_id)),
            ("subsystem_vendor", _hex(d.subsystem_vendor_id)),
            ("subsystem_device", _hex(d.subsystem_device_id)),
            ("link_speed", _speed(d.link_speed_gts)),
            ("link_width", d.link_width),
        )
    )


def topo_xml(topo: HostTopology) -> tuple[str, tuple[str, ...]]:
    """The file's text and notes on what it leaves to NCCL; XmlGap when it cannot be
    written (the message names what is missing)."""
    if not topo.gpus:
        raise XmlGap("no NVIDIA GPU in the PCI tree")
    unplaced = [g.label for g in topo.gpus if g.root is None]
    if unplaced:
        raise XmlGap(f"{', '.join(unplaced)} without a PCI location (sys/bus/pci/devices link)")
    notes: list[str] = []
    nics = []
    for n in topo.nics:
        if n.root is None or n.name is None or not _NAME.fullmatch(n.name):
            notes.append(f"{n.label} ({n.name or n.bdf}) left out: NCCL places it itself")
        else:
            nics.append(n)
    tree: dict[tuple[str, ...], list[Device]] = {}
    for d in (*topo.gpus, *nics):
        numaid = str(d.numa_node if d.numa_node is not None else -1)
        tree.setdefault((numaid, *folded(d.chain)), []).append(d)
    highest = max((c for cpus in topo.numa.values() for c in cpus), default=0)
    lines = [f'<system version="{VERSION}">']
    for node in sorted({k[0] for k in tree}, key=int):
        cpus = topo.numa.get(int(node))
        cpu = topo.cpu
        lines.append(
            "  <cpu"
            + _attrs(
                (
                    ("numaid", node),
                    ("affinity", cpumap(cpus, highest) if cpus is not None else None),
                    ("arch", cpu.arch),
                    ("vendor", cpu.vendor),
                    ("familyid", cpu.family),
                    ("modelid", cpu.model),
                )
            )
            + ">"
        )
        lines += _subtree(topo, tree, (node,), 2)
        lines.append("  </cpu>")
    lines.append("</system>")
    if topo.gdr is None:
        notes.append("gdr left to NCCL (/proc/modules not read)")
    return "\n".join(lines) + "\n", tuple(notes)


def _subtree(
    topo: HostTopology, tree: dict[tuple[str, ...], list[Device]], key: tuple[str, ...], depth: int
) -> list[str]:
    pad = "  " * depth
    lines: list[str] = []
    bridges = sorted({k[len(key)] for k in tree if len(k) > len(key) and k[: len(key)] == key})
    items: list[tuple[str, Device | None]] = [(b, None) for b in bridges]
    items += [(d.bdf, d) for d in tree.get(key, [])]
    for bdf, dev in sorted(items, key=lambda i: i[0]):
        if dev is None:
            b = topo.bridges.get(bdf, Bridge(bdf))
            cls = f"0x{b.class_id}00" if b.class_id else "0x060400"
            lines.append(f"{pad}<pci{_pci(b, cls)}>")
            lines += _subtree(topo, tree, (*key, bdf), depth + 1)
            lines.append(f"{pad}</pci>")
        else:
            lines += _endpoint(topo, dev, pad)
    return lines


def _endpoint(topo: HostTopology, d: Device, pad: str) -> list[str]:
    cls = f"0x{d.class_id}00" if d.class_id else None
    inner = pad + "  "
    if d.kind == "gpu":
        sm = _sm(d.name)
        gdr = "1" if topo.gdr else None
        head = (
            f"{inner}<gpu{_attrs((('dev', d.index), ('sm', sm), ('rank', d.index), ('gdr', gdr)))}"
        )
        links = _nvlinks(topo, d)
        body = (
            [f"{head}/>"]
            if not links
            else [f"{head}>", *(inner + "  " + x for x in links), f"{inner}</gpu>"]
        )
    else:
        port = next((p for p in d.ports if p.state == "ACTIVE"), d.ports[0] if d.ports else None)
        net = _attrs(
            (
                ("name", d.name),
                ("dev", topo.nics.index(d)),
                ("speed", int(port.rate_gbps * 1000) if port and port.rate_gbps else None),
                ("port", port.port if port else None),
                ("guid", f"0x{d.node_guid}" if d.node_guid else None),
                ("gdr", "1" if topo.gdr else None),
            )
        )
        body = [f"{inner}<nic>", f"{inner}  <net{net}/>", f"{inner}</nic>"]
    return [
        f"{pad}<pci{_pci(d, cls or (GPU_CLASS if d.kind == 'gpu' else '0x020000'))}>",
        *body,
        f"{pad}</pci>",
    ]


def _sm(name: str | None) -> str | None:
    """NCCL's ``sm``: the compute capability of the GPU's model (knowledge base), ``90``."""
    if not name:
        return None
    from dolmen.kb import load_kb

    model = load_kb().gpus.match(name)
    cc = model.compute_capability if model else None
    return cc.replace(".", "") if cc else None


def _nvlinks(topo: HostTopology, g: Device) -> list[str]:
    """``nvlink`` elements: one to the NVSwitches (their first bus id, or NCCL's own
    marker of an unseen one) or one per GPU peer with its link count."""
    if topo.nvlink == "nvswitch" and g.nvlinks:
        switches = topo.nvswitches
        target = switches[0].bdf if switches else UNSEEN_NVSWITCH
        return [f'<nvlink target="{target}" count="{g.nvlinks}" tclass="{NVSWITCH_CLASS}"/>']
    out = []
    for peer in topo.gpus:
        p = topo.path(g.label, peer.label)
        if peer is not g and p is not None and p.kind.value == "NV":
            out.append(f'<nvlink target="{peer.bdf}" count="{p.links}" tclass="{GPU_CLASS}"/>')
    return out

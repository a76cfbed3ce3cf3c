"""``nvidia-smi -q -x`` to the GPU model: a pure function of the text, never raising.

The layout changed across drivers (DTD v8 .. v13, some outputs have no DOCTYPE):
the parser probes for elements and reads each field from the first of its known
paths that holds a value (``nvsmi_sections.FIELDS``; leaves and placeholders
are read by ``nvsmi_values``). The supported-clocks tables are cut out before
parsing, and documents that declare entities are refused.
"""

from __future__ import annotations

import re
import xml.etree.ElementTree as ET
from collections.abc import Sequence
from typing import Any

from dolmen.frozen.regex import pattern
from dolmen.host.gpu import nvsmi_sections as s
from dolmen.host.gpu import nvsmi_values as v
from dolmen.host.gpu.build import build
from dolmen.host.gpu.model import ABSENT, Gpu, GpuInventory
from dolmen.values.busid import BusId

MAX_CHARS = 64 << 20  # an 8-GPU document is ~200 kB; refuse anything absurd before parsing

MAX_GPUS = 1024  # NVML enumerates at most a few dozen; more is not nvidia-smi output
MAX_DEPTH = 8  # <gpu> nests 5 deep at most (mig_devices/mig_device/device_attributes/...)
# Subtrees read as a whole (or not at all): not worth indexing leaf by leaf.
_OPAQUE = frozenset({"processes", "accounted_processes", "mig_devices", "retired_pagelist"})


def parse_nvsmi_xml(text: str) -> GpuInventory:
    """The inventory in an ``nvidia-smi -q -x`` document; a bad document gives ``error``."""
    root, error = _root(text)
    if root is None:
        return GpuInventory(source="none", error=error)
    return from_root(root)


def from_root(
    root: ET.Element, source: str = "nvidia-smi", missing: Sequence[str | None] = ()
) -> GpuInventory:
    """The inventory of a ``<nvidia_smi_log>`` element: the XML document's, or the one
    ``nvsmi_text`` builds from ``nvidia-smi -q`` text. ``missing[i]``, when given, replaces
    "not in this driver's output" for the i-th GPU: an excerpt (``-d``) or a truncated text
    does not show what the driver leaves out."""
    top = {child.tag: child for child in root if child.tag != "gpu"}
    values: dict[str, Any] = {}
    unread: dict[str, str] = {}
    for key, conv in (
        ("driver_version", v.text),
        ("cuda_version", v.text),
        ("attached_gpus", v.integer),
    ):
        v.read_field(top, key, (key,), conv, values, unread)
    blocks = [c for c in root if c.tag == "gpu"]
    if len(blocks) > MAX_GPUS:
        return GpuInventory(source="none", error=f"malformed: {len(blocks)} <gpu> blocks")
    gpus = tuple(
        _gpu(pos, el, missing[pos] if pos < len(missing) else None) for pos, el in enumerate(blocks)
    )
    return GpuInventory(source=source, gpus=gpus, unread=unread, **values)


_ENTITY = pattern(r"<!ENTITY", re.IGNORECASE)


def _root(text: str) -> tuple[ET.Element | None, str]:
    """The parsed document, or None and why not. Entity declarations are refused outright:
    nvidia-smi never writes them, and they are how XML bombs (billion laughs) expand."""
    if not text.strip():
        return None, "malformed: empty output"
    if len(text) > MAX_CHARS:
        return None, f"malformed: {len(text)} characters, more than any nvidia-smi output"
    if _ENTITY.search(text):
        return None, "malformed: the document declares entities; refused"
    try:
        root = ET.fromstring(_drop_supported_clocks(text))
    except (ET.ParseError, ValueError) as e:
        return None, f"malformed: not well-formed XML ({e})"
    if root.tag != "nvidia_smi_log":
        return None, f"malformed: root element <{root.tag[:40]}>, not <nvidia_smi_log>"
    return root, ""


def _drop_supported_clocks(text: str) -> str:
    """The document without its <supported_clocks> tables: they are half of an H100's output
    and nothing reads them, so skipping them halves the parse time."""
    open_tag, close_tag = "<supported_clocks>", "</supported_clocks>"
    start = text.find(open_tag)
    if start < 0:
        return text
    parts: list[str] = []
    pos = 0
    while start >= 0:
        end = text.find(close_tag, start)
        if end < 0:
            break  # truncated: leave it to the parser to say so
        parts.append(text[pos:start])
        pos = end + len(close_tag)
        start = text.find(open_tag, pos)
    parts.append(text[pos:])
    return "".join(parts)


def _index(gpu: ET.Element) -> tuple[dict[str, ET.Element], bool]:
    """Elements under <gpu> by relative path (first of duplicates), and whether any leaf reads
    ``GPU is lost``. Nothing deeper than ``MAX_DEPTH`` is indexed: hostile nesting would
    otherwise cost memory quadratic in its depth."""
    idx: dict[str, ET.Element] = {}
    lost = False
    stack: list[tuple[ET.Element, str, int]] = [(gpu, "", 1)]
    while stack:
        node, prefix, depth = stack.pop()
        for child in node:
            path = prefix + child.tag
            idx.setdefault(path, child)
            if not lost and child.text and "GPU is lost" in child.text:
                lost = True
            if len(child) and child.tag not in _OPAQUE and depth < MAX_DEPTH:
                stack.append((child, path + "/", depth + 1))
    return idx, lost


def _gpu(position: int, el: ET.Element, missing: str | None) -> Gpu:
    idx, lost = _index(el)
    values: dict[str, Any] = {"position": position, "lost": lost}
    unread: dict[str, str] = {}
    for key, paths, conv in s.FIELDS:
        v.read_field(idx, key, paths, conv, values, unread)
    bus, why = v.read_leaf(idx, "pci/pci_bus_id")
    bus = bus or el.get("id")  # the <gpu id="..."> attribute carries it too
    if bus:
        values["bus_id"] = bus
        parsed = BusId.parse(bus)
        values["pci_address"] = parsed.sysfs if parsed else None
        if values["pci_address"] is None:
            unread["pci_address"] = f"malformed: {bus[:40]!r}"
    else:
        unread["bus_id"] = unread["pci_address"] = why
    s.siblings(values, unread)
    s.ecc(idx, values, unread)
    s.clock_events(idx, values, unread)
    values["remapped_rows.histogram"] = v.numbers(
        idx.get("remapped_rows/row_remapper_histogram"),
        "row_remapper_histogram_",
        v.banks,
        unread,
        "remapped_rows.histogram",
    )
    values["fabric.health"] = s.fabric_health(idx.get("fabric/health"))
    values["mig.devices"] = s.mig_devices(idx.get("mig_devices"))
    s.processes(idx, values, unread)
    if missing:
        unread = {k: missing if why == ABSENT else why for k, why in unread.items()}
    values["unread"] = unread
    return build(Gpu, values)

"""``nvidia-smi -q`` text to the GPU model: the same reader as the XML, never raising.

nvidia-smi prints one report two ways: ``-q -x`` as XML, ``-q`` as indented
``Label : value`` lines with the same sections. This module turns the text into
the element tree the XML would have been (labels to tags: ``nvsmi_labels``) and
hands it to ``nvsmi.from_root``, so every field, placeholder and reason is read
by the one reader. It takes whole outputs, ``-d SECTION`` excerpts (a block
without ``Product Name``: what it leaves out is "not shown", not "not supported")
and truncated ones (the GPUs it has; the cut block's absent fields "cut off", and
the inventory says where the text ends). Neither word is "missing" (a source the host
vouches is absent) nor "not supported" (which checks skip): the value is not in this
input, so a check says unknown.
"""

from __future__ import annotations

import dataclasses
import re
import xml.etree.ElementTree as ET

from dolmen.host.gpu import nvsmi_failure as f
from dolmen.host.gpu.model import GpuInventory
from dolmen.host.gpu.nvsmi import MAX_CHARS, MAX_GPUS, from_root
from dolmen.host.gpu.nvsmi_labels import tag_of, value_of

SOURCE = "nvidia-smi -q"
BANNER = "==============NVSMI LOG=============="
MAX_DEPTH = 8  # sections nest 4 deep (MIG Device/Device Attributes/Shared/...)
EXCERPT = "not shown: this nvidia-smi -q output is an excerpt (-d sections only)"
CUT = "cut off: the nvidia-smi -q output ends inside this GPU's block"
_GPU = re.compile(r"^GPU\s+([0-9A-Fa-f]{1,8}:[0-9A-Fa-f]{2}:[0-9A-Fa-f]{2}\.[0-7])\s*$")
_LINE = re.compile(r"^([^:]*?\S)\s*:(?:\s(.*))?$")  # "Label   : value" (the value may be empty)


@dataclasses.dataclass
class _Node:
    """One line of the text: a label, its value (None for a section), what nests under it."""

    label: str
    value: str | None
    indent: int
    children: list[_Node] = dataclasses.field(default_factory=list)


def parse_nvsmi_text(text: str) -> GpuInventory:
    """The inventory in ``nvidia-smi -q`` text (whole, ``-d`` excerpt or truncated).

    Text that holds no GPU block but one of nvidia-smi's failure lines ("couldn't
    communicate with the NVIDIA driver") gives that line as ``error``; GPUs it could not
    open ("Unable to determine the device handle for GPU ...") are listed as lost.
    """
    if len(text) > MAX_CHARS:
        return GpuInventory(source="none", error=f"malformed: {len(text)} characters")
    lines = text.expandtabs().splitlines()
    failures = f.failure_lines(text)
    top, blocks, note = _blocks(lines, frozenset(failures))
    if not blocks:
        if failures:
            return GpuInventory(source="nvidia-smi", error=f.describe(failures, "nvidia-smi"))
        return GpuInventory(source="none", error="malformed: no 'GPU <bus id>' block")
    if len(blocks) > MAX_GPUS:
        return GpuInventory(source="none", error=f"malformed: {len(blocks)} GPU blocks")
    cut = _cut(blocks[-1])
    if cut and not text.endswith("\n"):
        _drop_last(blocks[-1][1])  # the last line may stop mid-value: "120" read as "12"
    root = ET.Element("nvidia_smi_log")
    for node in top:
        _add(root, node, "")
    missing: list[str | None] = []
    for bus, nodes in blocks:
        gpu = ET.SubElement(root, "gpu", id=bus)
        for node in nodes:
            _add(gpu, node, "gpu")
        _group_mig_devices(gpu)
        missing.append(None if gpu.find("product_name") is not None else EXCERPT)
    if cut:
        missing[-1] = CUT
    inv = from_root(root, SOURCE, missing)
    unread = dict(inv.unread)
    if cut:
        attached = f" ({len(blocks)} of {inv.attached_gpus} attached GPUs listed)"
        unread["gpus"] = (
            f"malformed: truncated: the output ends inside the block of GPU {blocks[-1][0]}"
            + (attached if inv.attached_gpus else "")
        )
    if note:
        unread.setdefault("gpus", note)
    gpus = f.with_handle_gpus(inv.gpus, failures)
    error = f.describe(failures, "nvidia-smi") if failures else None
    return dataclasses.replace(inv, gpus=gpus, unread=unread, error=error)


def _blocks(
    lines: list[str], failures: frozenset[str]
) -> tuple[list[_Node], list[tuple[str, list[_Node]]], str]:
    """The lines before the first GPU block, each block (bus id, its tree), and a note when a
    second report follows (only the first is read: a paste of two would list GPUs twice)."""
    top: list[_Node] = []
    blocks: list[tuple[str, list[_Node]]] = []
    stack: list[_Node] = []
    banners = 0
    base = 0
    for number, raw in enumerate(lines, 1):
        line = raw.rstrip()
        stripped = line.strip()
        if not stripped:
            continue
        if stripped == BANNER:
            banners += 1
            if banners > 1:
                return top, blocks, f"a second NVSMI LOG begins at line {number}: not read"
            continue
        indent = len(line) - len(line.lstrip(" "))
        if m := _GPU.match(stripped):
            blocks.append((m[1], []))
            stack, base = [], indent
            continue
        if failures and " ".join(stripped.split()) in failures:
            continue  # read by nvsmi_failure
        m = _LINE.match(stripped)
        node = _Node(stripped, None, indent) if m is None else _Node(m[1], m[2] or "", indent)
        if m is None and not blocks:
            continue  # free text before the report (a prompt, a date line)
        while stack and stack[-1].indent >= indent:
            stack.pop()
        if len(stack) >= MAX_DEPTH:
            continue
        if stack:
            stack[-1].children.append(node)
        elif blocks and indent > base:
            blocks[-1][1].append(node)
        elif not blocks:
            top.append(node)
        else:
            continue  # back at the block's own margin: not part of it
        stack.append(node)
    return top, blocks, ""


def _cut(block: tuple[str, list[_Node]]) -> bool:
    """Whether the last block stops early: a whole block ends with its Processes section
    (580+ adds Capabilities after it), so a block with a Product Name and no Processes
    line was cut off."""
    labels = {n.label for n in block[1]}
    return "Product Name" in labels and "Processes" not in labels


def _drop_last(nodes: list[_Node]) -> None:
    """Remove the last line of the block's tree (the deepest last node)."""
    while nodes:
        last = nodes[-1]
        if not last.children:
            nodes.pop()
            return
        nodes = last.children


def _add(parent: ET.Element, node: _Node, parent_tag: str) -> None:
    """``node`` as the element(s) the XML has for it, under ``parent``."""
    tag = tag_of(parent_tag, node.label)
    if tag is None:  # a wrapper the XML does not have ("GPU Ceiling Power Limit")
        for child in node.children:
            _add(parent, child, parent_tag)
        return
    *outer, leaf = tag.split("/")
    holder = parent
    for name in outer:  # "Single Bit ECC : 0" is multiple_single_bit_retirement/retired_count
        holder = ET.SubElement(holder, name)
    el = ET.SubElement(holder, leaf)
    if node.value is not None:
        el.text = value_of(leaf, node.value)
    # Clock event reasons are flat in the XML: HW Slowdown's two causes are its siblings.
    inner, inner_tag = (parent, parent_tag) if parent_tag.endswith("_reasons") else (el, leaf)
    for child in node.children:
        _add(holder if outer else inner, child, outer[-1] if outer else inner_tag)


def _group_mig_devices(gpu: ET.Element) -> None:
    """The text repeats ``MIG Device`` under the GPU; the XML wraps them in <mig_devices>."""
    devices = gpu.findall("mig_device")
    if devices:
        wrapper = ET.SubElement(gpu, "mig_devices")
        for d in devices:
            gpu.remove(d)
            wrapper.append(d)

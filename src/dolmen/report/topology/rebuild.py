"""The host topology read back from its ``dolmen.topo/1`` document, or from the part of it
a verdict carries (``inventory.topology.tree``, ``facts/topology/tree_json.picture_part``):
pure. The fleet dashboard draws the node's picture from it with ``svg.render_svg``, the
renderer of ``dolmen topo --svg``, so both pictures are one.

Documents come from other machines. Every field is checked against ``dolmen.topo/1``'s
types (labels ``GPU<n>``/``NIC<n>``/``NVS<n>``, the three kinds, path cells through the
matrix parser's ``parse_path``, CPU lists through ``parse_cpulist``), and the first
problem is a ``ValueError`` naming it; text is otherwise kept as it is (the renderer
escapes it). Matrix rows fill both directions, so the GPU rows a verdict carries give
every path the picture draws. What the document does not hold (bridges' identities,
``cpu``, ``gdr``) stays at its default.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

from dolmen.facts.topology.model import Path, PathKind
from dolmen.facts.topology.parse import parse_path
from dolmen.facts.topology.tree_model import GPU, NIC, NVSWITCH, Device, HostTopology, NicPort
from dolmen.values.cpulist import CpuList, parse_cpulist

# Bounds against a hostile document (a verdict may be 64 MiB): the largest hosts have a few
# dozen devices and a few hundred CPUs; one CPU list may name 65,536 of them.
MAX_DEVICES = 256
MAX_CPUS = 1 << 20  # CPUs over every list of the document
_LABEL = re.compile(r"(GPU|NIC|NVS)[0-9]{1,6}")
_KINDS = (GPU, NIC, NVSWITCH)
_SOURCES = ("sysfs", "lspci -vvv")
_NVLINK_SOURCES = (None, "nvswitch", "nvidia-smi topo -m")


def rebuild(doc: Mapping[str, Any]) -> HostTopology:
    """The topology ``doc`` describes (module docstring); ValueError on malformed input."""
    if not isinstance(doc, Mapping):
        raise ValueError(f"not an object: {type(doc).__name__}")
    raw = _get(doc, "devices", list)
    if len(raw) > MAX_DEVICES:
        raise ValueError(f"devices: {len(raw)}, more than any host has ({MAX_DEVICES})")
    budget = [MAX_CPUS]
    devices = tuple(_device(f"devices[{i}]", d, budget) for i, d in enumerate(raw))
    labels = {d.label for d in devices}
    if len(labels) != len(devices):
        raise ValueError("devices: a label given twice")
    numa: dict[int, CpuList] = {}
    for key, cpus in _get(doc, "numa", dict, {}).items():
        if not (isinstance(key, str) and key.isdigit() and len(key) < 7):
            raise ValueError(f"numa: {key!r} is not a node number")
        numa[int(key)] = _cpus(f"numa.{key}", cpus, budget)
    paths: dict[str, dict[str, Path]] = {label: {} for label in labels}
    for a, row in _get(doc, "matrix", dict).items():
        for b, cell in _expect(f"matrix.{a}", row, dict).items():
            path = parse_path(cell) if isinstance(cell, str) else None
            if a not in labels or b not in labels or a == b:
                raise ValueError(f"matrix: {a!r}-{b!r} is not a pair of the devices")
            if path is None or path.kind is PathKind.X:
                raise ValueError(f"matrix.{a}.{b}: {cell!r} is not a path")
            paths[a][b] = paths[b][a] = path
    source = doc.get("source")
    nvlink = doc.get("nvlink_source")
    if source not in _SOURCES or nvlink not in _NVLINK_SOURCES:
        raise ValueError(f"source {source!r} or nvlink_source {nvlink!r} unknown")
    unread = _get(doc, "unread", dict, {})
    return HostTopology(
        devices=devices,
        numa=numa,
        paths=paths,
        nvlink=nvlink or "",
        source=source,
        unread={_text("unread", k): _text(f"unread.{k}", v) for k, v in unread.items()},
    )


def _device(where: str, raw: object, budget: list[int]) -> Device:
    d: dict[str, Any] = _expect(where, raw, dict)
    label = _text(f"{where}.label", d.get("label"))
    if not _LABEL.fullmatch(label):
        raise ValueError(f"{where}.label: {label!r} is not GPU<n>, NIC<n> or NVS<n>")
    kind = d.get("kind")
    if kind not in _KINDS:
        raise ValueError(f"{where}.kind: {kind!r} is not one of {', '.join(_KINDS)}")
    link = _get(d, "link", dict, None, where) or {}
    return Device(
        label=label,
        kind=kind,
        bdf=_text(f"{where}.bdf", d.get("bdf")),
        root=_opt_text(f"{where}.root", d.get("root")),
        chain=tuple(_text(f"{where}.chain", c) for c in _get(d, "chain", list, [], where)),
        numa_node=_opt_int(f"{where}.numa_node", d.get("numa_node")),
        cpus=_cpus(f"{where}.cpus", d["cpus"], budget) if d.get("cpus") is not None else None,
        name=_opt_text(f"{where}.name", d.get("name")),
        index=_opt_int(f"{where}.index", d.get("index")),
        link_speed_gts=_opt_number(f"{where}.link.speed_gts", link.get("speed_gts")),
        link_width=_opt_int(f"{where}.link.width", link.get("width")),
        nvlinks=_opt_int(f"{where}.nvlinks", d.get("nvlinks")),
        ports=tuple(_port(f"{where}.ports", p) for p in _get(d, "ports", list, [], where)),
    )


def _port(where: str, raw: object) -> NicPort:
    p: dict[str, Any] = _expect(where, raw, dict)
    port = _opt_int(f"{where}.port", p.get("port"))
    if port is None:
        raise ValueError(f"{where}.port: missing")
    return NicPort(
        port,
        _opt_text(f"{where}.link_layer", p.get("link_layer")),
        _opt_text(f"{where}.state", p.get("state")),
        _opt_number(f"{where}.rate_gbps", p.get("rate_gbps")),
        _opt_int(f"{where}.roce_v2_gid_index", p.get("roce_v2_gid_index")),
    )


def _get(d: Mapping[str, Any], key: str, kind: type, default: Any = ..., where: str = "") -> Any:
    """``d[key]`` of type ``kind``; ``default`` where absent (or null, for a default of
    None), an error where absent without a default."""
    value = d.get(key)
    if value is None and default is not ...:
        return default
    return _expect(f"{where}.{key}" if where else key, value, kind)


def _expect(where: str, value: Any, kind: type) -> Any:
    if not isinstance(value, kind):
        raise ValueError(f"{where}: expected {kind.__name__}, got {type(value).__name__}")
    return value


def _text(where: str, value: object) -> str:
    text: str = _expect(where, value, str)
    try:
        text.encode()  # a lone surrogate (JSON allows one) could not be sent in a page
    except UnicodeEncodeError:
        raise ValueError(f"{where}: not UTF-8 text") from None
    return text


def _opt_text(where: str, value: object) -> str | None:
    return None if value is None else _text(where, value)


def _opt_int(where: str, value: object) -> int | None:
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int):
        raise ValueError(f"{where}: {value!r} is not an integer")
    return value


def _opt_number(where: str, value: object) -> float | None:
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise ValueError(f"{where}: {value!r} is not a number")
    return float(value)


def _cpus(where: str, value: object, budget: list[int]) -> CpuList:
    """The CPU list, counted against ``budget`` (CPUs left for the whole document)."""
    try:
        cpus = parse_cpulist(_text(where, value))
    except ValueError as e:
        raise ValueError(f"{where}: {e}") from None
    budget[0] -= len(cpus)
    if budget[0] < 0:
        raise ValueError(f"{where}: over {MAX_CPUS} CPUs in the document's lists")
    return cpus

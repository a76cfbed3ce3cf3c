"""NCCL's topology-file reader, as a test oracle: the grammar of src/graph/xml.cc
(``xmlGetNode``, ``xmlGetToken``, ``xmlGetValue``) and the elements each handler takes
(``ncclTopoXmlLoadSystem`` and below), so a file NCCL would refuse fails here.

What xml.cc accepts: between elements only spaces, ``\\n`` and ``\\r``; a name ends at a
space, ``>``, ``/`` or a newline; attributes are separated by one space each, every
value in quotes and shorter than MAX_STR_LEN (255); ``/`` only right before ``>``;
no ``<?xml`` line (``?`` is not a name character it stops on). Elements a handler
does not name are ignored by NCCL; here they are an error, so a typo cannot hide.
"""

from __future__ import annotations

from dataclasses import dataclass, field

MAX_STR_LEN = 255
CHILDREN = {
    None: {"system"},
    "system": {"cpu"},
    "cpu": {"pci", "nic"},
    "pci": {"pci", "gpu", "nic", "pcilink"},
    "gpu": {"nvlink", "c2c"},
    "nic": {"net"},
}


@dataclass
class Node:
    name: str
    attrs: dict[str, str]
    subs: list[Node] = field(default_factory=list)


class Refused(ValueError):
    """What NCCL's parser would WARN about."""


def load(text: str) -> Node:
    """The ``system`` element of ``text``, as NCCL reads it; Refused otherwise."""
    pos = 0
    root = Node("", {})
    stack = [root]
    while True:
        while pos < len(text) and text[pos] in " \n\r":
            pos += 1
        if pos == len(text):
            break
        if text[pos] != "<":
            raise Refused(f"expecting '<', got {text[pos]!r} at {pos}")
        end = text.index(">", pos)
        tag = text[pos + 1 : end]
        pos = end + 1
        if tag.startswith("/"):
            if stack[-1].name != tag[1:]:
                raise Refused(f"mismatch {stack[-1].name} / {tag[1:]}")
            stack.pop()
            continue
        single = tag.endswith("/")
        body = tag[:-1] if single else tag
        name, _, rest = body.partition(" ")
        if not name or any(c in name for c in "?!\t"):
            raise Refused(f"bad element name {name!r}")
        attrs: dict[str, str] = {}
        while rest:
            key, eq, tail = rest.partition("=")
            if not eq or not tail.startswith('"') or " " in key or not key:
                raise Refused(f'{name}: attribute {rest[:30]!r} not key="value"')
            value, quote, rest = tail[1:].partition('"')
            if not quote or len(value) >= MAX_STR_LEN:
                raise Refused(f"{name}.{key}: unterminated or too long")
            if rest and not rest.startswith(" "):
                raise Refused(f"{name}: {rest[:10]!r} after a value")
            rest = rest[1:]
            if not rest and tail.endswith(" "):
                raise Refused(f"{name}: a space before the end")
            attrs[key] = value
        parent = stack[-1]
        if name not in CHILDREN.get(parent.name or None, set()):
            raise Refused(f"{name} is not a child NCCL takes under {parent.name or 'the file'}")
        node = Node(name, attrs)
        parent.subs.append(node)
        if not single:
            stack.append(node)
    if len(stack) != 1 or len(root.subs) != 1:
        raise Refused("unterminated element, or not one system")
    system = root.subs[0]
    if system.attrs.get("version") != "1":
        raise Refused("XML Topology has wrong version")
    return system


def walk(node: Node) -> list[Node]:
    """Every element below ``node``, depth first."""
    out = []
    for s in node.subs:
        out += [s, *walk(s)]
    return out

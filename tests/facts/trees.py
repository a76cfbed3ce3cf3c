"""Build host trees from the shared recordings, at test time, under a test's tmp folder.

- ``extract_ttar``: the prometheus ``ttar`` archives (procfs and node_exporter
  fixtures) with their symbolic links, which the pre-extracted copies in
  ../shared lost (``sys/bus/pci/devices/*``, ``driver``, ``cpu0/cpufreq``).
- ``materialise_sysfs_map``: GCM's ``{sysfs path: content}`` JSON maps, plus the
  ``sys/class/{net,infiniband,nvme}`` links the kernel makes for each device, so a
  collector walking ``sys/class`` finds what GCM recorded under ``sys/bus/pci``.
"""

from __future__ import annotations

import json
import os
import re
from collections.abc import Mapping
from pathlib import Path

_SEPARATOR = "# ttar - "


def _safe(rel: str) -> str:
    rel = rel.strip("/")
    if not rel or any(part in ("", "..") for part in rel.split("/")):
        raise ValueError(f"unsafe path in recording: {rel!r}")
    return rel


def extract_ttar(archive: Path, dest: Path, strip: str = "", only: tuple[str, ...] = ()) -> Path:
    """Extract a ttar archive under ``dest``; ``strip`` drops a leading folder, ``only`` filters.

    Format (prometheus/procfs ttar): ``Directory: p`` / ``Path: p`` followed by
    ``SymlinkTo: target`` or ``Lines: n`` and n lines, the last one ending in ``EOF``
    when the file has no final newline; ``NULLBYTE`` stands for a NUL byte.
    """
    lines = archive.read_text(encoding="utf-8", errors="surrogateescape").split("\n")
    i = 0
    while i < len(lines):
        line = lines[i]
        i += 1
        kind, _, name = line.partition(": ")
        if kind not in ("Directory", "Path"):
            continue
        if strip:
            if not name.startswith(strip):
                continue
            name = name[len(strip) :]
        keep = not only or any(name.startswith(p) for p in only)
        target = dest / _safe(name) if name.strip("/") else dest
        if kind == "Directory":
            if keep:
                target.mkdir(parents=True, exist_ok=True)
            continue
        head, _, value = lines[i].partition(": ")
        i += 1
        if head == "SymlinkTo":
            if keep:
                target.parent.mkdir(parents=True, exist_ok=True)
                os.symlink(value, target)
            continue
        count = int(value)
        body = lines[i : i + count]
        i += count
        text = "\n".join(body) + ("\n" if body else "")
        if text.endswith("EOF\n"):
            text = text[: -len("EOF\n")]
        if keep:
            target.parent.mkdir(parents=True, exist_ok=True)
            data = text.replace("NULLBYTE", "\0").encode("utf-8", errors="surrogateescape")
            target.write_bytes(data)
    return dest


_PCI_BUS = re.compile(r"sys/class/pci_bus/([^/]+)/device/([^/]+)/(.+)")
_PCI_CHILD = re.compile(r"sys/bus/pci/devices/([^/]+)/(net|infiniband|nvme)/([^/]+)/")


def materialise_sysfs_map(mapping: Mapping[str, str], root: Path) -> Path:
    """Write a GCM ``{"/sys/...": content}`` map as a host tree and add the kernel's class links.

    ``sys/class/pci_bus/<bus>/device/<bdf>/x`` is the same folder as
    ``sys/bus/pci/devices/<bdf>/x`` in the kernel: the file is written there and the
    pci_bus path becomes a link to it.
    """
    classes: set[tuple[str, str, str]] = set()
    for key, content in mapping.items():
        rel = _safe(key)
        m = _PCI_BUS.fullmatch(rel)
        if m:
            bus, bdf, rest = m.groups()
            rel = f"sys/bus/pci/devices/{bdf}/{rest}"
            link = root / f"sys/class/pci_bus/{bus}/device/{bdf}"
            if not link.is_symlink():
                link.parent.mkdir(parents=True, exist_ok=True)
                os.symlink(f"../../../../bus/pci/devices/{bdf}", link)
        c = _PCI_CHILD.match(rel)
        if c:
            classes.add(c.groups())  # type: ignore[arg-type]
        path = root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(content)
    for bdf, cls, name in classes:
        link = root / f"sys/class/{cls}/{name}"
        link.parent.mkdir(parents=True, exist_ok=True)
        os.symlink(f"../../bus/pci/devices/{bdf}/{cls}/{name}", link)
        dev = root / f"sys/bus/pci/devices/{bdf}/{cls}/{name}/device"
        if not dev.exists():
            os.symlink("../..", dev)
    root.mkdir(parents=True, exist_ok=True)
    return root


def load_sysfs_map(path: Path, root: Path) -> Path:
    """``materialise_sysfs_map`` of a JSON recording file."""
    return materialise_sysfs_map(json.loads(path.read_text()), root)

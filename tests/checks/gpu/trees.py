"""Host trees for the gpu checks: real nvidia-smi recordings (edited in place to make faults),
sysfs PCI functions with their upstream port, proc/uptime, the kernel log, a snapshot time."""

from __future__ import annotations

import json
import os
import re
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from dolmen.checks import load_registry
from dolmen.checks.context import Context
from dolmen.checks.model import Finding
from dolmen.checks.runner import run_one
from dolmen.config import parse_config
from dolmen.host.tree import TreeHost
from tests.conftest import make_tree, recording

H100 = "nvidia-smi-xml/k8s-test-infra__hardware__qx-h100.xml"
# The eight GPUs of the real qx-h100 capture, as sysfs names them.
H100_BUS = ("53", "64", "75", "86", "97", "a8", "b9", "ca")
H100_BDFS = tuple(f"0000:{b}:00.0" for b in H100_BUS)
GEN5 = "32.0 GT/s PCIe"

_CACHE: dict[str, str] = {}
REGISTRY = load_registry()


def xml(rel: str = H100) -> str:
    """The text of a recording under ../shared/recordings (read once per session)."""
    if rel not in _CACHE:
        _CACHE[rel] = recording(rel).read_text()
    return _CACHE[rel]


def edit_gpu(text: str, index: int, find: str, replace: str) -> str:
    """``text`` with the first match of regex ``find`` in the ``index``-th <gpu> block replaced;
    the edit must match (a test that edits nothing proves nothing)."""
    blocks = [m.span() for m in re.finditer(r"<gpu id=.*?</gpu>", text, re.S)]
    start, end = blocks[index]
    part, n = re.subn(find, replace, text[start:end], count=1)
    assert n == 1, f"edit matched nothing in <gpu> {index}: {find!r}"
    return text[:start] + part + text[end:]


def write_pci(
    root: Path,
    bdf: str,
    *,
    cur: tuple[str, int] = (GEN5, 16),
    top: tuple[str, int] = (GEN5, 16),
    slot: tuple[str, int] | None = (GEN5, 16),
    aer: tuple[int, int, int] | None = (0, 0, 0),
) -> None:
    """An NVIDIA 3D controller at ``bdf`` under an upstream port (``slot``: its max link)
    as sysfs lays it out: the device folder, its attributes, the sys/bus/pci/devices link.
    ``aer`` is (correctable, nonfatal, fatal) totals, None for a device without AER."""
    bus = bdf.split(":")[1]
    bridge = f"0000:{int(bus, 16) - 1:02x}:00.0"
    chain = [bridge, bdf] if slot else [bdf]
    dev = root / "sys/devices/pci0000:00"
    for hop in chain:
        dev = dev / hop
    files: dict[Path, dict[str, object]] = {
        dev: {
            "vendor": "0x10de",
            "device": "0x2330",
            "class": "0x030200",
            "current_link_speed": cur[0],
            "current_link_width": cur[1],
            "max_link_speed": top[0],
            "max_link_width": top[1],
        }
    }
    if aer is not None:
        files[dev] |= {
            "aer_dev_correctable": f"RxErr {aer[0]}\nBadTLP 0\nTOTAL_ERR_COR {aer[0]}",
            "aer_dev_nonfatal": f"CmpltTO {aer[1]}\nTLP 0\nTOTAL_ERR_NONFATAL {aer[1]}",
            "aer_dev_fatal": f"DLP {aer[2]}\nSDES 0\nTOTAL_ERR_FATAL {aer[2]}",
        }
    if slot:
        files[dev.parent] = {
            "vendor": "0x1000",
            "device": "0xc030",
            "class": "0x060400",
            "current_link_speed": slot[0],
            "current_link_width": slot[1],
            "max_link_speed": slot[0],
            "max_link_width": slot[1],
        }
    links = root / "sys/bus/pci/devices"
    links.mkdir(parents=True, exist_ok=True)
    for folder, attrs in files.items():
        folder.mkdir(parents=True, exist_ok=True)
        for name, value in attrs.items():
            (folder / name).write_text(f"{value}\n")
        link = links / folder.name
        if not link.is_symlink():
            os.symlink(os.path.relpath(folder, links), link)


def tree(
    root: Path,
    *,
    nvsmi: str | None = None,
    dmesg: str | None = None,
    pci: Mapping[str, Mapping[str, Any]] | None = None,
    uptime_s: float | None = 86400.0,
    created: str | None = None,
    commands: Mapping[str, str | tuple[str, int] | tuple[str, int, str]] | None = None,
) -> Path:
    """A host tree with the H100 capture (or ``nvsmi``), PCI functions for its eight GPUs
    (``pci``: per-bdf overrides for write_pci, or {} for none), the uptime and the log."""
    cmds: dict[str, str | tuple[str, int] | tuple[str, int, str]] = {
        "nvidia-smi -q -x": xml() if nvsmi is None else nvsmi
    }
    if dmesg is not None:
        cmds["dmesg"] = dmesg
    cmds.update(commands or {})
    files: dict[str, str] = {}
    if uptime_s is not None:
        files["proc/uptime"] = f"{uptime_s:.2f} {uptime_s * 100:.2f}\n"
    if created is not None:
        files["dolmen-snapshot.json"] = json.dumps({"created": created, "hostname": "node1"})
    make_tree(root, files=files, commands=cmds)
    functions = {bdf: {} for bdf in H100_BDFS} if pci is None else pci
    for bdf, attrs in functions.items():
        write_pci(root, bdf, **attrs)
    return root


def run(root: Path, check_id: str, config: str = "") -> list[Finding]:
    """The findings of one check on the tree at ``root`` (a site config as TOML text)."""
    ctx = Context(TreeHost(root), config=parse_config(config) if config else None)
    return run_one(ctx, REGISTRY[check_id])


def by_subject(findings: list[Finding]) -> dict[str, Finding]:
    """Findings keyed by subject (each subject appears once per check)."""
    out = {f.subject: f for f in findings}
    assert len(out) == len(findings), [f.subject for f in findings]
    return out


def statuses(findings: list[Finding]) -> set[str]:
    """The set of status values."""
    return {f.status.value for f in findings}

"""Scenario host trees: committed data, real recordings referenced (never copied), edits.

A scenario is a folder ``tests/hosts/<name>/`` with:

- ``scenario.toml``: a description, an optional ``base`` scenario it starts from,
  ``[recordings]`` (host path -> a file or folder of ../shared/recordings, copied in
  when the tree is built), ``[[pci]]`` functions to write under sys/bus/pci (with the
  device links a real sysfs has), ``[[edit]]`` regex edits of built files (optionally
  inside the N-th ``<gpu>`` block of an nvidia-smi XML), ``remove`` paths, and
  ``[expect]`` (the verdict and the checks that must fail, warn or be unknown), and an
  optional ``[config]``: the site's dolmen.toml sections the verdict is judged with
  (``[config.validate] expected_gpus = 0``); a scenario does not inherit its base's;
- ``tree/``: files of our own, copied over the built tree;
- ``expected.json``: the golden ``dolmen validate --json`` document (normalised).

``build(name, dest)`` materialises a scenario into ``dest``; tests and benchmarks
build into temporary folders, so the repository holds no copy of a recording.
"""

from __future__ import annotations

import os
import re
import shutil
import tomllib
from pathlib import Path
from typing import Any

import pytest

from dolmen.config import Config

HOSTS = Path(__file__).resolve().parent
RECORDINGS = HOSTS.parents[2] / "shared" / "recordings"


class MissingRecording(pytest.skip.Exception):  # type: ignore[misc,name-defined]
    """The scenario references a recording that is not on this machine: a test that builds
    it is skipped with that reason (../shared/recordings is absent), as conftest's
    ``recording()`` does."""


def names() -> list[str]:
    """Every scenario, by folder name."""
    return sorted(p.name for p in HOSTS.iterdir() if (p / "scenario.toml").is_file())


def spec(name: str) -> dict[str, Any]:
    """A scenario's scenario.toml."""
    with open(HOSTS / name / "scenario.toml", "rb") as f:
        return tomllib.load(f)


def config(name: str) -> Config:
    """The site configuration scenario ``name`` is validated with (its ``[config]``)."""
    return Config(sections=spec(name).get("config", {}))


def build(name: str, dest: Path) -> Path:
    """Materialise scenario ``name`` (and its bases) into ``dest``; returns ``dest``."""
    s = spec(name)
    dest.mkdir(parents=True, exist_ok=True)
    if "base" in s:
        build(s["base"], dest)
    for host_path, rec in s.get("recordings", {}).items():
        src = RECORDINGS / rec
        if not src.exists():
            raise MissingRecording(f"{name}: recording {rec} is absent from {RECORDINGS}")
        target = dest / host_path
        if target.is_symlink() or target.is_file():
            target.unlink()
        elif target.is_dir():
            shutil.rmtree(target)
        target.parent.mkdir(parents=True, exist_ok=True)
        if src.is_dir():
            shutil.copytree(src, target, symlinks=True)
        else:
            shutil.copyfile(src, target)
    for fn in s.get("pci", []):
        _write_pci(dest, fn)
    if "cpu" in s:
        _write_cpus(dest, s["cpu"])
    own = HOSTS / name / "tree"
    if own.is_dir():
        shutil.copytree(own, dest, symlinks=True, dirs_exist_ok=True)
    for rel in s.get("empty_dirs", []):  # git keeps no empty folder; a snapshot has many
        (dest / rel).mkdir(parents=True, exist_ok=True)
    for edit in s.get("edit", []):
        _edit(dest, edit)
    for rel in s.get("remove", []):
        target = dest / rel
        if target.is_dir() and not target.is_symlink():
            shutil.rmtree(target)
        elif target.exists() or target.is_symlink():
            target.unlink()
    return dest


def _write_pci(root: Path, fn: dict[str, Any]) -> None:
    """A PCI function as sysfs shows it: the device folder under its bridge, and the link."""
    bdf = fn["bdf"]
    domain_bus = bdf.rsplit(":", 1)[0]
    chain = [*fn.get("bridges", []), bdf]
    dev = root / "sys/devices" / f"pci{domain_bus.split(':')[0]}:{chain[0].split(':')[1]}"
    for hop in chain:
        dev = dev / hop
    dev.mkdir(parents=True, exist_ok=True)
    values = {
        "vendor": fn.get("vendor", "0x10de"),
        "device": fn["device"],
        "class": fn["class"],
        "subsystem_vendor": fn.get("subsystem_vendor", "0x10de"),
        "subsystem_device": fn.get("subsystem_device", "0x0000"),
        "numa_node": str(fn.get("numa_node", 0)),
        "current_link_speed": fn.get("current_link_speed", "32.0 GT/s PCIe"),
        "current_link_width": str(fn.get("current_link_width", 16)),
        "max_link_speed": fn.get("max_link_speed", "32.0 GT/s PCIe"),
        "max_link_width": str(fn.get("max_link_width", 16)),
        "local_cpulist": fn.get("local_cpulist", "0-55,112-167"),
        "aer_dev_correctable": _aer(fn.get("aer_correctable", 0), "TOTAL_ERR_COR"),
        "aer_dev_nonfatal": _aer(fn.get("aer_nonfatal", 0), "TOTAL_ERR_NONFATAL"),
        "aer_dev_fatal": _aer(fn.get("aer_fatal", 0), "TOTAL_ERR_FATAL"),
    }
    for attr, value in values.items():
        (dev / attr).write_text(f"{value}\n")
    if "driver" in fn:
        drivers = root / "sys/bus/pci/drivers" / fn["driver"]
        drivers.mkdir(parents=True, exist_ok=True)
        link = dev / "driver"
        if not link.is_symlink():
            os.symlink(os.path.relpath(drivers, dev), link)
    devices = root / "sys/bus/pci/devices"
    devices.mkdir(parents=True, exist_ok=True)
    link = devices / bdf
    if not link.is_symlink():
        os.symlink(os.path.relpath(dev, devices), link)


def _write_cpus(root: Path, cpu: dict[str, Any]) -> None:
    """proc/cpuinfo and the sysfs CPU and NUMA topology of an x86 server."""
    sockets, cores, threads = cpu["sockets"], cpu["cores_per_socket"], cpu["threads_per_core"]
    total = sockets * cores * threads
    blocks = []
    node_cpus: dict[int, list[int]] = {s: [] for s in range(sockets)}
    for n in range(total):
        socket = (n // cores) % sockets
        core = n % cores
        node_cpus[socket].append(n)
        blocks.append(
            "\n".join(
                [
                    f"processor\t: {n}",
                    f"vendor_id\t: {cpu['vendor']}",
                    f"cpu family\t: {cpu['family']}",
                    f"model\t\t: {cpu['model']}",
                    f"model name\t: {cpu['model_name']}",
                    f"physical id\t: {socket}",
                    f"siblings\t: {cores * threads}",
                    f"core id\t\t: {core}",
                    f"cpu cores\t: {cores}",
                    f"flags\t\t: {cpu['flags']}",
                ]
            )
        )
    (root / "proc").mkdir(parents=True, exist_ok=True)
    (root / "proc/cpuinfo").write_text("\n\n".join(blocks) + "\n\n")
    system = root / "sys/devices/system"
    (system / "cpu").mkdir(parents=True, exist_ok=True)
    (system / "cpu/online").write_text(f"0-{total - 1}\n")
    for node, members in node_cpus.items():
        folder = system / "node" / f"node{node}"
        folder.mkdir(parents=True, exist_ok=True)
        (folder / "cpulist").write_text(_ranges(members) + "\n")
    for n in range(total):
        freq = system / "cpu" / f"cpu{n}" / "cpufreq"
        freq.mkdir(parents=True, exist_ok=True)
        (freq / "scaling_governor").write_text(cpu.get("governor", "performance") + "\n")


def _ranges(values: list[int]) -> str:
    out: list[str] = []
    start = prev = values[0]
    for v in values[1:]:
        if v != prev + 1:
            out.append(f"{start}-{prev}" if start != prev else str(start))
            start = v
        prev = v
    out.append(f"{start}-{prev}" if start != prev else str(start))
    return ",".join(out)


def _aer(total: int, tail: str) -> str:
    """An aer_dev_* file as the kernel prints it: named counters, then the total."""
    if tail == "TOTAL_ERR_COR":
        rows = ["RxErr", "BadTLP", "BadDLLP", "Rollover", "Timeout", "NonFatalErr"]
    else:
        rows = ["Undefined", "DLP", "SDES", "TLP", "FCP", "CmpltTO", "CmpltAbrt", "UnxCmplt"]
    body = [f"{r} {total if i == 0 else 0}" for i, r in enumerate(rows)]
    return "\n".join([*body, f"{tail} {total}"])


def _edit(root: Path, edit: dict[str, Any]) -> None:
    path = root / edit["path"]
    text = path.read_text()
    find, replace = edit["find"], edit["replace"]
    count = int(edit.get("count", 1))
    if "gpu" in edit:
        blocks = [m.span() for m in re.finditer(r"<gpu id=.*?</gpu>", text, re.S)]
        start, end = blocks[int(edit["gpu"])]
        part, n = re.subn(find, replace, text[start:end], count=count)
        text = text[:start] + part + text[end:]
    else:
        text, n = re.subn(find, replace, text, count=count)
    if n == 0:
        raise ValueError(f"edit of {edit['path']} matched nothing: {find!r}")
    path.write_text(text)

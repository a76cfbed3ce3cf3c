"""One-file bundles: a recording at its tree key in a partial host tree, as single-file
detection will make of ``--from FILE`` (``dolmen-snapshot.json`` says ``"partial": true``
and lists the one command it holds)."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

from tests.conftest import RECORDINGS, recording
from tests.recordings import blocks
from tests.recordings.model import Case


def text_of(case: Case) -> bytes:
    """The bytes the case feeds: the whole file, or its block (lines cut by start/stop)."""
    path = recording(case.rel)
    if case.block is None:
        return path.read_bytes()
    text = path.read_text()
    if case.block.startswith("https://"):
        body = blocks.fenced(text, case.block)
    else:
        body = blocks.section(text, case.block)
    return blocks.lines_between(body, case.start, case.stop).encode()


def build(case: Case, root: Path) -> Path:
    """The partial host tree of ``case`` under ``root``."""
    root.mkdir(parents=True)
    if case.build == "tree":
        src = recording(case.rel)
        dest = root if case.key == "/" else root / case.key
        shutil.copytree(src, dest, symlinks=True, dirs_exist_ok=True)
    elif case.build == "map":  # GCM: {"/sys/bus/pci/devices/<bdf>/<class>/<name>/...": text}
        for path, content in json.loads(recording(case.rel).read_text()).items():
            p = root / path.lstrip("/")
            p.parent.mkdir(parents=True, exist_ok=True)
            p.write_text(content)
        class_links(root)
    else:
        p = root / case.key
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_bytes(text_of(case))
    ran = [case.key.removeprefix("commands/")] if case.key.startswith("commands/") else []
    meta = {"format": "dolmen.snapshot/1", "partial": True, "captured": {"commands": ran}}
    (root / "dolmen-snapshot.json").write_text(json.dumps(meta))
    return root


def class_links(root: Path) -> None:
    """The ``sys/class/<class>/<name>`` links the kernel makes for each device folder of a
    GCM map (GCM recorded the devices, not the links to them)."""
    for cls in ("infiniband", "net", "nvme"):
        for dev in sorted((root / "sys/bus/pci/devices").glob(f"*/{cls}/*")):
            link = root / "sys/class" / cls / dev.name
            link.parent.mkdir(parents=True, exist_ok=True)
            if not link.exists():
                link.symlink_to(f"../../bus/pci/devices/{dev.parent.parent.name}/{cls}/{dev.name}")


def bare_file(case: Case, folder: Path) -> Path:
    """What a user hands to ``--from FILE``: the recording itself, or its block in a file."""
    if case.block is None:
        return recording(case.rel)
    folder.mkdir(parents=True, exist_ok=True)
    out = folder / (case.id.rsplit("#", 1)[-1] + ".txt")
    out.write_bytes(text_of(case))
    return out


def every_file() -> list[str]:
    """Every file under ../shared/recordings, relative to it."""
    return sorted(str(p.relative_to(RECORDINGS)) for p in RECORDINGS.rglob("*") if p.is_file())

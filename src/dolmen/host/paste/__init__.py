"""``--from FILE``: a single file, whatever users paste, opened as a host.

A tar archive (``.tar``, ``.tar.gz``, ``.tar.xz``, ``.tar.bz2``) is a bundle: a ``dolmen
snapshot`` or a sosreport (``host.archive.ArchiveHost`` extracts both within bounds; a
sosreport is mapped onto the tree format by ``paste.sos``). Anything else is one file:
read (decompressed when gzip, xz or bzip2), named by ``paste.detect`` from its content,
split when it holds several outputs (``paste.sections``), and opened as a partial tree
(``paste.tree.PasteHost``). A file dolmen does not read is one InputError naming what
it accepts.
"""

from __future__ import annotations

import bz2
import lzma
import zlib
from pathlib import Path
from typing import Any

from dolmen.errors import InputError
from dolmen.host.base import Host
from dolmen.host.paste.detect import ACCEPTED, HEAD, Detected, detect, detect_binary, is_markdown
from dolmen.host.paste.journal import journal_to_text
from dolmen.host.paste.sections import (
    Section,
    spelling_rank,
    split_bug_report,
    split_capture,
)
from dolmen.host.paste.tree import PasteHost, Placed
from dolmen.host.paste.unpack import compression, read_file

__all__ = ["ACCEPTED", "is_tar", "open_file", "place"]

_SMI_ERRORS = (  # nvidia-smi's exit codes for the messages it prints instead of output
    ("couldn't communicate with the NVIDIA driver", 9),
    ("No devices were found", 6),
    ("Driver/library version mismatch", 18),
)
_HINT = f"--from accepts {ACCEPTED}"
# Kinds that are a host file, not a command's output: the path they lie at in a tree.
FILE_KINDS = {"docker-daemon": "etc/docker/daemon.json", "cdi-spec": "etc/cdi/nvidia.yaml"}
BINARY_KINDS = {"ld-so-cache": "etc/ld.so.cache"}


def is_tar(head: bytes) -> bool:
    """Whether a file's first bytes (4 KiB or more) are a tar archive, compressed or not."""
    kind = compression(head)
    if kind is not None:
        try:
            if kind == "gzip":
                head = zlib.decompressobj(zlib.MAX_WBITS | 16).decompress(head, 1024)
            elif kind == "xz":
                head = lzma.LZMADecompressor().decompress(head, 1024)
            else:
                head = bz2.BZ2Decompressor().decompress(head, 1024)
        except (OSError, EOFError, zlib.error, lzma.LZMAError, ValueError):
            return False
    return head[257:262] == b"ustar"


def open_file(path: Path) -> Host:
    """A regular file that is not a tar archive, as a partial host (see module docstring)."""
    raw, packed = read_file(path)
    text = raw.decode("utf-8", errors="replace")
    found = detect_binary(raw) or detect(text)
    if found is None:
        raise InputError(f"not a file dolmen reads ({_looks(raw)})", path=str(path), hint=_HINT)
    placed = place(found, text)
    if found.kind.name in BINARY_KINDS:  # bytes as they are: decoding would corrupt them
        placed.files[BINARY_KINDS[found.kind.name]] = raw
    if not placed.commands and not placed.files:
        raise InputError(
            f"{found.kind.label}, but it holds no output dolmen reads",
            path=str(path),
            hint=_HINT,
        )
    if not placed.sections:
        placed.sections.extend(" ".join(argv) for argv in placed.commands)
    detected = found.describe()
    if found.kind.name in ("capture", "bug-report"):
        detected = f"{found.kind.label} ({', '.join(placed.sections)})"
    source: dict[str, Any] = {
        "file": str(path),
        "detected": detected,
        "kind": found.kind.name,
        "sections": placed.sections,
    }
    if packed:
        source["compression"] = packed
    return PasteHost(path, placed, source)


def place(found: Detected, text: str) -> Placed:
    """Where the detected content goes in the partial tree (pure but for its result)."""
    placed = Placed()
    kind = found.kind.name
    if kind == "capture":
        _sections(placed, split_capture(text))
    elif kind == "bug-report":
        _sections(placed, split_bug_report(text))
    elif kind == "journal-json":
        log, _junk = journal_to_text(text)
        if log:
            placed.command(("dmesg",), log)
            placed.sections.append("dmesg")
    elif kind in FILE_KINDS:
        placed.files[FILE_KINDS[kind]] = text
    elif kind in BINARY_KINDS:
        pass  # its bytes, placed by open_file
    elif kind == "nvsmi-failed":
        # nvidia-smi prints the same line whatever it was asked: the GPU readers ask for
        # the XML, and the table is what users run.
        for argv in (("nvidia-smi", "-q", "-x"), ("nvidia-smi",)):
            _command(placed, argv, text)
    else:
        _command(placed, found.kind.argv, text)
    return placed


def _sections(placed: Placed, sections: list[Section]) -> None:
    files = 0
    for s in sections:
        if s.path is not None and s.text.strip():
            if s.path not in placed.files:
                placed.files[s.path] = s.text
                files += 1
        elif (
            s.argv is not None
            and s.text.strip()
            and _command(placed, s.argv, s.text, spelling_rank(s.title, s.argv))
            and " ".join(s.argv) not in placed.sections
        ):
            placed.sections.append(" ".join(s.argv))
    if files:
        placed.sections.append(f"{files} file{'s' if files > 1 else ''}")


def _command(placed: Placed, argv: tuple[str, ...], text: str, rank: int = 0) -> bool:
    rc = 0
    if argv[:1] == ("nvidia-smi",) and len(text) < 2000:
        rc = next((code for words, code in _SMI_ERRORS if words in text), 0)
        if not rc and "NVIDIA-SMI has failed" in text:
            rc = 255
    if argv == ("dmesg",) and kind_of(text) == "journal-json":
        text, _junk = journal_to_text(text)
    return placed.command(argv, text, rc, rank)


def kind_of(text: str) -> str | None:
    """The detected kind's name of ``text``, or None."""
    found = detect(text)
    return found.kind.name if found else None


def _looks(raw: bytes) -> str:
    """What an unrecognised file looks like, in two or three words."""
    if not raw.strip():
        return "it is empty"
    if is_markdown(raw[:HEAD].decode("utf-8", errors="replace")):
        return "a Markdown document: paste the command's output itself"
    sample = raw[:4096]
    if b"\x00" in sample or sum(b < 9 or 13 < b < 32 for b in sample) > len(sample) // 20:
        return "binary data"
    return "text of no kind it knows"

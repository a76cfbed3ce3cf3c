"""Writing a scheduler file a person named: a marked block, a backup, two audit events.

slurm.conf and gres.conf are the site's files: dolmen owns only the lines between its
markers (``# BEGIN dolmen setup <node>`` .. ``# END dolmen setup <node>``), replaced on
each run and appended the first time; everything else is kept byte for byte. A line
outside the block that declares the same node (``NodeName=<node> ``) is refused, not
commented out: two declarations would make slurmctld refuse the file.

Order (STYLE.md rule 20): the target is checked (regular file or absent, an existing
folder: fsutil.output_target), the audit intent is recorded, the original is copied to
``<file>.dolmen-backup`` (atomic), the new text replaces the file (atomic), and the
result is recorded. An audit log that cannot be written refuses before any byte moves.
"""

from __future__ import annotations

import os
import re
from pathlib import Path

from dolmen.audit import record_event
from dolmen.errors import InputError, UsageError
from dolmen.fsutil import atomic_write, output_target, read_regular, write_failure

ACTION = "setup.write"
_LIMIT = 16 << 20


def begin(node: str) -> str:
    """The first line of dolmen's block for ``node``."""
    return f"# BEGIN dolmen setup {node}"


def end(node: str) -> str:
    """The last line of dolmen's block for ``node``."""
    return f"# END dolmen setup {node}"


def merge(existing: str, node: str, block: str) -> str:
    """``existing`` with dolmen's block for ``node`` set to ``block`` (pure).

    InputError when a BEGIN has no END, or when a line outside the block declares the
    node already."""
    lines = existing.splitlines()
    start = next((i for i, x in enumerate(lines) if x.strip() == begin(node)), None)
    stop = None
    if start is not None:
        stop = next((i for i in range(start, len(lines)) if lines[i].strip() == end(node)), None)
        if stop is None:
            raise InputError(
                f"'{begin(node)}' has no '{end(node)}' after it",
                hint="restore the END line (or remove the block) and run again",
            )
    outside = lines if start is None or stop is None else lines[:start] + lines[stop + 1 :]
    declared = re.compile(rf"\s*NodeName={re.escape(node)}(\s|$)", re.IGNORECASE)
    for line in outside:
        if declared.match(line):
            raise InputError(
                f"node {node} is declared already outside dolmen's block: {line.strip()!r}",
                hint="remove that line (dolmen setup then owns the node's line), "
                "or name another file",
            )
    body = [begin(node), *block.rstrip("\n").splitlines(), end(node)]
    if start is None or stop is None:
        sep = [""] if lines and lines[-1].strip() else []
        new = [*lines, *sep, *body]
    else:
        new = lines[:start] + body + lines[stop + 1 :]
    return "\n".join(new) + "\n"


def check_target(path: Path, what: str) -> Path:
    """Refuse, before any step runs, a path that is not a regular file or a new file in
    an existing folder (a FIFO, a device, a folder, a missing folder)."""
    return output_target(path, what=what)


def write_with_backup(path: Path, node: str, block: str, what: str) -> list[str]:
    """Set dolmen's block in ``path`` (see module docstring); the lines to report."""
    target = output_target(path, what=what)
    old: bytes | None = None
    if os.path.lexists(target):
        try:
            old = read_regular(target, _LIMIT)
        except OSError as e:
            raise UsageError(f"{what} {path}: {e.strerror or e}") from None
    try:
        text = merge(old.decode() if old is not None else "", node, block)
    except UnicodeDecodeError:
        raise InputError("not text (UTF-8)", path=str(path)) from None
    except InputError as e:
        raise InputError(e.message, path=str(path), hint=e.hint) from None
    if old is not None and text.encode() == old:
        return [f"{path}: already holds this node's lines (unchanged)"]
    backup = target.with_name(target.name + ".dolmen-backup")
    details = {"path": str(target), "node": node, "backup": str(backup) if old else None}
    record_event(
        ACTION, f"file:{target}", outcome="unknown", details={"phase": "intent", **details}
    )
    try:
        if old is not None:
            atomic_write(backup, old)
        atomic_write(target, text.encode())
    except OSError as e:
        record_event(
            ACTION,
            f"file:{target}",
            outcome="failure",
            details={"phase": "result", **details, "error": e.strerror or str(e)},
        )
        raise write_failure(f"{what} {path}", e, target.parent, "the file is unchanged") from None
    record_event(
        ACTION, f"file:{target}", outcome="success", details={"phase": "result", **details}
    )
    saved = f" (the previous file is {backup})" if old is not None else ""
    return [f"wrote {path}{saved}"]

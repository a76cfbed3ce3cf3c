"""``journalctl -o json`` records as kernel-log text lines (pure).

dolmen reads one kernel log, ``commands/dmesg``, in any of the text formats of
``facts/kernel_log/lines.py``. A JSON export is turned into the ``journalctl -o
short-iso`` lines it stands for (``2025-01-17T17:10:43+0000 host kernel: msg``), so the
same scanner reads it: kernel records only when the export says which are the kernel's
(``_TRANSPORT=kernel``), every record when it does not say.
"""

from __future__ import annotations

import json
from datetime import datetime
from typing import Any

from dolmen.compat import UTC


def journal_to_text(text: str) -> tuple[str, int]:
    """The records of a JSON-lines export as short-iso text, and how many lines were junk."""
    records: list[dict[str, Any]] = []
    junk = 0
    for line in text.splitlines():
        if not line.strip():
            continue
        try:
            rec = json.loads(line)
        except ValueError:
            junk += 1  # a cut last line, a pasted prompt
            continue
        if isinstance(rec, dict):
            records.append(rec)
        else:
            junk += 1
    if any("_TRANSPORT" in r for r in records):
        records = [r for r in records if r.get("_TRANSPORT") == "kernel"]
    lines = [_line(r) for r in records]
    return "".join(f"{ln}\n" for ln in lines if ln), junk


def _line(rec: dict[str, Any]) -> str:
    message = _text(rec.get("MESSAGE"))
    if not message:
        return ""
    when = _time(rec.get("__REALTIME_TIMESTAMP"))
    host = _text(rec.get("_HOSTNAME")) or "localhost"
    ident = _text(rec.get("SYSLOG_IDENTIFIER")) or (
        "kernel" if rec.get("_TRANSPORT") == "kernel" else ""
    )
    tag = ident or "unknown"
    pid = _text(rec.get("_PID"))
    if pid and tag != "kernel":
        tag = f"{tag}[{pid}]"
    lines = message.splitlines() or [""]
    head = f"{when} {host} {tag}: {lines[0]}" if when else f"{tag}: {lines[0]}"
    return "\n".join([head, *(f" {rest}" for rest in lines[1:])])


def _text(value: object) -> str:
    """A journal field: a string, or a list of byte values when it was not UTF-8."""
    if isinstance(value, str):
        return value
    if isinstance(value, list) and all(isinstance(b, int) and 0 <= b < 256 for b in value):
        return bytes(value).decode("utf-8", errors="replace")
    return "" if value is None else str(value)


def _time(value: object) -> str:
    """``__REALTIME_TIMESTAMP`` (microseconds since the epoch, as a string) in short-iso."""
    try:
        micros = int(str(value))
        t = datetime.fromtimestamp(micros / 1e6, UTC)
    except (TypeError, ValueError, OverflowError, OSError):
        return ""
    return t.strftime("%Y-%m-%dT%H:%M:%S+0000")

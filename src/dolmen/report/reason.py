"""The one-line reason schedulers read: Slurm's drain reason, node-problem-detector's message."""

from __future__ import annotations

from dolmen.checks.verdict import Health, Verdict
from dolmen.values.text import printable

PREFIX = "dolmen:"


def one_line_reason(v: Verdict, max_len: int = 80) -> str:
    """``dolmen: <health>: <check> <subject>, ... (+N more)`` in at most ``max_len`` characters.

    Failures come first, then what could not be read; a healthy host says so.
    """
    problems = [f for f in v.problems() if f.check != "gpu.present"]
    # "no NVIDIA GPU found" / "no GPU source in this bundle" first, the partial bundle last.
    gpu = v.gpu_note.split(" (")[0].split(": ")[0] if v.gpu_note else None
    if not problems:
        text = f"{PREFIX} {v.health.value}"
        if v.health is Health.DEGRADED:
            warns = sorted({f.check for f in v.findings if f.status.value == "warn"})
            text += f": {len(warns)} warning(s): {', '.join(warns)}"
        note = "; ".join(n for n in (gpu, v.partial) if n)
        if note:
            text += f"{';' if ':' in text else ':'} {note}"
        return _clip(text, max_len)
    head = f"{PREFIX} {v.health.value}:" + (f" {gpu};" if gpu else "")
    parts: list[str] = []
    seen: set[str] = set()
    for f in problems:
        # A subject names a host's thing (mount:<path>, nic:<name>): one line, no escapes.
        item = f.check if f.subject == "host" else f"{f.check} {printable(f.subject)}"
        if item not in seen:
            seen.add(item)
            parts.append(item)
    text = head
    for i, item in enumerate(parts):
        more = len(parts) - i - 1
        candidate = f"{text} {item}" if i == 0 else f"{text}, {item}"
        suffix = f" (+{more} more)" if more else ""
        if len(candidate + suffix) > max_len and i > 0:
            return _clip(f"{text} (+{len(parts) - i} more)", max_len)
        text = candidate
    if v.partial and len(text) + 2 < max_len:
        text += f"; {v.partial}"
    return _clip(text, max_len)


def _clip(text: str, max_len: int) -> str:
    return text if len(text) <= max_len else text[: max_len - 1] + "…"

"""The one-line reason schedulers read: Slurm's drain reason, node-problem-detector's message."""

from __future__ import annotations

from dolmen.checks.deadline import is_run_timeout
from dolmen.checks.model import Finding
from dolmen.checks.verdict import Health, Verdict
from dolmen.values.text import printable

PREFIX = "dolmen:"


def one_line_reason(v: Verdict, max_len: int = 80) -> str:
    """``dolmen: <health>: <check> <subject>, ... (+N more)`` in at most ``max_len`` characters.

    Failures come first, then what could not be read; a healthy host says so. A run cut
    by its ``--timeout`` with no failure says what it was waiting on, and in which check.
    """
    late = next((f for f in v.findings if is_run_timeout(f)), None)
    if late is not None and v.health is Health.UNDECIDED:
        return _clip(_timed_out(v, late, max_len), max_len)
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


def _timed_out(v: Verdict, late: Finding, max_len: int) -> str:
    """``dolmen: undecided: timed out after 30 s on nvidia-smi -q -x in gpu.present; 40 not
    run``: the wait first, the count of checks it left unstarted if it fits."""
    ev = late.evidence
    text = f"{PREFIX} {v.health.value}: timed out after {ev.get('timeout_s') or 0:g} s"
    if ev.get("waiting_on"):
        text += f" on {printable(str(ev['waiting_on']))}"
    if ev.get("check"):
        text += f" in {ev['check']}"
    skipped = len(ev.get("not_run") or ())
    more = f"; {skipped} not run" if skipped else ""
    return text + more if len(text + more) <= max_len else text


def _clip(text: str, max_len: int) -> str:
    return text if len(text) <= max_len else text[: max_len - 1] + "…"

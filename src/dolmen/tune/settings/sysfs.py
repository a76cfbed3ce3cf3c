"""``[sysfs]``: values under /sys, e.g. ``"kernel/mm/transparent_hugepage/enabled" = "madvise"``.

Keys are paths below ``/sys`` and may hold shell patterns for per-device
values (``"block/nvme*/queue/read_ahead_kb"``): one target per match. Files
that print a choice list with the current one in brackets (``always [madvise]
never``: THP, I/O schedulers) are read as the bracketed word, the profile
value must be one of the listed words, and only that word is written back.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

from dolmen.host import Host
from dolmen.tune.model import Target
from dolmen.tune.settings.base import Entry, choice_error
from dolmen.tune.settings.kernel_file import KernelFileSetting

_PATH = re.compile(r"^[A-Za-z0-9_.:+\-*?\[\]/]+$")
_BRACKETED = re.compile(r"\[([^\]\s]+)\]")

# Choices known without reading the host (Documentation/admin-guide/mm/transhuge.rst [R]).
KNOWN_CHOICES: Mapping[str, tuple[str, ...]] = {
    "kernel/mm/transparent_hugepage/enabled": ("always", "madvise", "never"),
    "kernel/mm/transparent_hugepage/defrag": (
        "always",
        "defer",
        "defer+madvise",
        "madvise",
        "never",
    ),
}


def selected(text: str) -> str:
    """``always [madvise] never`` -> ``madvise``; other text stripped as it is."""
    m = _BRACKETED.search(text)
    return m.group(1) if m else text.strip()


def choices(text: str) -> tuple[str, ...] | None:
    """The words of a bracketed choice list, or None when ``text`` is a plain value."""
    if not _BRACKETED.search(text):
        return None
    return tuple(w.strip("[]") for w in text.split())


class Sysfs(KernelFileSetting):
    """Values of kernel objects under /sys (THP, per-device queue settings...)."""

    section = "sysfs"
    persists = False
    title = "kernel object values (/sys)"
    read_only_reason = "read-only here (the kernel refuses writes to it)"

    def key(self, raw: str) -> str:
        rel = raw.removeprefix("/sys/").strip("/")
        if not rel or not _PATH.match(rel) or ".." in rel.split("/"):
            raise ValueError(f"{raw!r} is not a path below /sys (like kernel/mm/...)")
        return rel

    def validate(self, key: str, value: Any, fields: Mapping[str, Any]) -> str:
        if isinstance(value, bool) or not isinstance(value, (int, str)):
            raise ValueError("a sysfs value is a number or a word")
        text = str(value).strip()
        if not text or "\n" in text:
            raise ValueError("a sysfs value is one line, not empty")
        known = KNOWN_CHOICES.get(key)
        if known is not None and text not in known:
            raise choice_error(key, text, known)
        return text

    def targets(self, host: Host, entry: Entry) -> list[Target] | str:
        pattern = "sys/" + entry.key
        paths = host.glob(pattern) if any(c in entry.key for c in "*?[") else [pattern]
        paths = [p for p in paths if host.exists(p)]
        if not paths:
            return f"not on this host: no /{pattern}"
        return [
            Target(
                self.section,
                entry.key,
                p.removeprefix("sys/"),
                entry.value,
                p,
                entry.origin,
                entry.source,
            )
            for p in paths
        ]

    def current(self, text: str) -> str:
        return selected(text)

    def refusal(self, host: Host, target: Target, text: str) -> str | None:
        listed = choices(text)
        if listed is not None and target.desired not in listed:
            return f"{target.desired!r} is not offered here; valid: {', '.join(listed)}"
        return None

    def kernel_form(self, raw: bytes) -> bytes | None:
        text = raw.decode("utf-8", "replace")
        return (selected(text) + "\n").encode() if choices(text) is not None else None

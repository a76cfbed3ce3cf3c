"""Cut one command's output out of a recording that holds several.

The excerpt compilations (``issues__*.md``) hold one fenced block per GitHub thread under a
``## <url>`` heading; the nvidia_gpu_exporter captures hold sections between lines of 80
``#`` with a ``# <phase> :: <title>`` line. A case names its block by the heading's URL or
the section's title, and may keep only the lines from ``start`` (a regex, that line kept)
to ``stop`` (a regex, that line dropped) when one block pastes two commands.
"""

from __future__ import annotations

import re

BANNER = "#" * 80
_FENCE = "```"


def fenced(text: str, url: str) -> str:
    """The fenced block under the ``## <url> ...`` heading (without the fences)."""
    lines = text.splitlines(keepends=True)
    heading = next(
        (i for i, ln in enumerate(lines) if ln.startswith("## ") and ln[3:].split()[0] == url),
        None,
    )
    if heading is None:
        raise KeyError(f"no section {url}")
    opened = next(i for i in range(heading + 1, len(lines)) if lines[i].startswith(_FENCE))
    closed = next(i for i in range(opened + 1, len(lines)) if lines[i].startswith(_FENCE))
    return "".join(lines[opened + 1 : closed])


def section(text: str, title: str) -> str:
    """The body of the capture section ``# <title>`` (up to the next banner line)."""
    lines = text.splitlines(keepends=True)
    for i, ln in enumerate(lines):
        if ln.rstrip("\n") == f"# {title}" and i and lines[i - 1].startswith(BANNER):
            body = next(j for j in range(i + 1, len(lines)) if lines[j].startswith(BANNER)) + 1
            end = next((j for j in range(body, len(lines)) if lines[j].startswith(BANNER)), None)
            return "".join(lines[body:end])
    raise KeyError(f"no section {title!r}")


def lines_between(text: str, start: str | None, stop: str | None) -> str:
    """The lines from the first matching ``start`` (kept) to the next ``stop`` (dropped)."""
    lines = text.splitlines(keepends=True)
    first = 0
    if start is not None:
        first = next(i for i, ln in enumerate(lines) if re.search(start, ln))
    last = len(lines)
    if stop is not None:
        last = next((i for i in range(first + 1, len(lines)) if re.search(stop, lines[i])), last)
    return "".join(lines[first:last])

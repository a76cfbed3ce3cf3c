"""Reading host files and commands with the reason they failed; procfs/sysfs value formats.

Facts collectors read many one-value files (``sys/class/net/eth0/mtu``). A value
that cannot be read must be ``None`` *with a reason* (docs/architecture.md), and
the reason differs with the errno: a file that is absent (``missing``), one only
root may read (``insufficient permissions``), or one the kernel refuses to
produce (``unreadable (Invalid argument)``: ``carrier`` on an interface that is
administratively down). ``read_value`` keeps that distinction, which
``Host.read_value`` folds into None.
"""

from __future__ import annotations

import errno
from collections.abc import Callable
from typing import TypeVar

from dolmen.frozen import frozen
from dolmen.frozen.regex import pattern
from dolmen.host import NOT_IN_BUNDLE, Host
from dolmen.values import cpulist

_INT = pattern(r"[+-]?\d+")
_HEX = pattern(r"[0-9a-f]+")

T = TypeVar("T")

# errnos by which the kernel says "this device or driver does not provide that value".
_NOT_SUPPORTED = {errno.EOPNOTSUPP, errno.ENOTSUP, errno.ENOTTY}


@frozen
class Read:
    """The text of a file, or None and the reason it could not be read."""

    text: str | None
    reason: str = ""


def reason_for(exc: OSError) -> str:
    """The architecture's reason words for a failed read."""
    if isinstance(exc, FileNotFoundError):
        return "missing"
    if isinstance(exc, PermissionError):
        return "insufficient permissions"
    if isinstance(exc, IsADirectoryError):
        return "unreadable (a directory, not a value file)"
    if exc.errno in _NOT_SUPPORTED:
        return f"not supported ({exc.strerror})"
    return f"unreadable ({exc.strerror or exc.__class__.__name__})"


def read_text(host: Host, rel: str) -> Read:
    """The whole text of a file, or the reason it could not be read."""
    try:
        return Read(host.read(rel))
    except FileNotFoundError:
        return Read(None, host.absent(rel))
    except OSError as e:
        return Read(None, reason_for(e))


def absent(host: Host, rel: str) -> str:
    """The reason for ``rel`` not being there, naming it: ``missing: rel`` where the host
    vouches for its absence, ``not in this bundle: rel`` where it did not record that part."""
    return f"{host.absent(rel)}: {rel}"


def unrecorded(reason: str | None) -> bool:
    """Whether a reason says the bundle lacked the source (``not in this bundle``): such a
    value is unknown, never evidence that the thing is absent."""
    return reason is not None and reason.startswith(NOT_IN_BUNDLE)


# What a source's reason says about coverage (the verdict's ``coverage``, the skip reasons).
READ = "read"
UNREADABLE = "unreadable"
# The reason of an input that ends before the value (docs/architecture.md): unknown.
CUT_OFF = "cut off"


def source_state(reason: str | None) -> str:
    """``read`` for a source that was read (None or ``read``), or that the host vouches is
    absent (``missing``: it shows there is none); ``not in this bundle``; else ``unreadable``
    (permissions, a failed command, malformed output)."""
    if reason is not None and NOT_IN_BUNDLE in reason:  # "missing: <argv>: not in this bundle"
        return NOT_IN_BUNDLE
    if reason is None or reason == READ or reason.startswith("missing"):
        return READ
    return UNREADABLE


def read_value(host: Host, rel: str) -> Read:
    """A one-value file stripped of surrounding whitespace, or the reason it failed."""
    r = read_text(host, rel)
    return r if r.text is None else Read(r.text.strip())


def malformed(text: str, limit: int = 40) -> str:
    """The reason for a value that was read but does not parse, quoting its start."""
    snippet = text.strip()
    if len(snippet) > limit:
        snippet = snippet[:limit] + "..."
    return f"malformed: {snippet!r}"


def parsed(r: Read, parse: Callable[[str], T | None], unread: dict[str, str], key: str) -> T | None:
    """What ``parse`` makes of a read, or None with the reason under ``unread[key]``: the
    read's own reason, or ``malformed`` quoting the text when ``parse`` gives None."""
    if r.text is None:
        unread[key] = r.reason
        return None
    value = parse(r.text)
    if value is None:
        unread[key] = malformed(r.text)
    return value


def parse_int(text: str | None) -> int | None:
    """A decimal integer (surrounding whitespace allowed), else None."""
    if text is None:
        return None
    t = text.strip()
    if not _INT.fullmatch(t):
        return None
    return int(t)


def parse_hex(text: str | None) -> int | None:
    """A hexadecimal integer with or without ``0x`` (``0x10de``, ``10de``), else None."""
    if text is None:
        return None
    t = text.strip().lower().removeprefix("0x")
    if not t or not _HEX.fullmatch(t):
        return None
    return int(t, 16)


def parse_cpulist(text: str | None) -> tuple[int, ...] | None:
    """A kernel CPU list as sorted CPU numbers, None when it is not one (facts never raise).

    The syntax is :mod:`dolmen.values.cpulist`'s; an empty list is valid (a memory-only
    NUMA node, such as a Grace Hopper GPU's memory node, has no CPUs).
    """
    if text is None:
        return None
    try:
        return cpulist.parse_cpulist(text).cpus
    except ValueError:
        return None

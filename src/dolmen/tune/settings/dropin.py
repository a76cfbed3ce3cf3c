"""Whole files that dolmen owns (drop-ins): read, compare, write atomically, remove on revert.

Limits (limits.d, container runtime drop-ins), the GRUB drop-in of the kernel
command line and the boot persistence files (sysctl.d, tmpfiles.d) are all
files dolmen writes whole. Their original is usually "absent", so rollback
removes them; when one existed, its bytes and mode come back exactly.
"""

from __future__ import annotations

from dolmen.host import Host
from dolmen.tune.model import Change, Reading, Target
from dolmen.tune.settings.base import Setting, link_refusal

# The skip reason of a path that holds anything but a regular file: a whole-file write
# would destroy it (a folder, a FIFO another program reads), so it is never written.
NOT_REGULAR = "not a regular file"
HEADER = "# Written by `dolmen tune apply`; `dolmen tune rollback` removes it. Do not edit.\n"


def read_whole(host: Host, rel: str) -> Reading:
    """A whole file as a Reading: its text, or None when absent (it will be created).

    Anything but a regular file at the path (a folder, a FIFO: host reads refuse them
    with "not a regular file (FIFO)") is skipped, never replaced (see ``NOT_REGULAR``), and so
    is a symbolic link (:func:`link_refusal`)."""
    if why := link_refusal(host, rel):
        return Reading(None, skip=why)
    try:
        return Reading(host.read(rel))
    except FileNotFoundError:
        return Reading(None)
    except IsADirectoryError:
        return Reading(None, skip=f"unreadable: {NOT_REGULAR} (folder)")
    except OSError as e:
        return Reading(None, skip=f"unreadable: {e.strerror or e}")


def show_whole(value: str | None) -> str:
    """A file's content as one plan cell: its first meaningful line and how many follow."""
    if value is None:
        return "(absent)"
    lines = [ln for ln in value.splitlines() if ln.strip() and not ln.startswith("#")]
    if not lines:
        return "(empty)"
    more = f" (+{len(lines) - 1} lines)" if len(lines) > 1 else ""
    return lines[0] + more


class DropIn(Setting):
    """A setting whose targets are whole files (``target.desired`` is the content)."""

    def read(self, host: Host, target: Target) -> Reading:
        return read_whole(host, target.path)

    def same(self, current: str, desired: str) -> bool:
        return current == desired

    def show(self, value: str | None) -> str:
        return show_whole(value)

    def apply(self, host: Host, change: Change) -> None:
        host.write(change.target.path, change.target.desired, mode=0o644)

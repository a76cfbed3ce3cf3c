"""Settings whose targets are kernel files holding one value (/proc/sys, /sys, /proc/irq).

``[sysctl]``, ``[sysfs]``, ``[cpu]``, ``[hugepages]`` and the IRQ affinities of
``[irq]`` differ only in how they find their files and what the kernel offers;
reading, the read-only test, the write and the boot persistence are the same,
and live here once:

- ``read`` reads the file once; ``current(text)`` is the value the plan shows
  (a bracketed choice list reads as its selected word); ``refusal`` says why
  the desired value cannot be set on this host (not offered by the driver, a
  reservation too large for the node), checked before whether the file can be
  written at all, so a plan names the more useful reason.
- ``apply`` writes the value and a newline, as ``echo value > file`` does.
- ``revert`` is the base's: the original bytes, or ``kernel_form`` of them
  when the kernel refuses its own display format.
- ``boot_line`` is a systemd-tmpfiles ``w`` line, which writes the value again
  at every boot.
"""

from __future__ import annotations

import os
from typing import ClassVar

from dolmen.host import Host
from dolmen.tune.model import Change, Reading, Target
from dolmen.tune.settings.base import Setting


class KernelFileSetting(Setting):
    """A setting kind whose every target is one kernel file with one value."""

    read_only_reason: ClassVar[str] = "read-only here"

    def read(self, host: Host, target: Target) -> Reading:
        got = read_kernel_value(host, target.path)
        if got.skip or got.value is None:
            return got
        value = self.current(got.value)
        why = self.refusal(host, target, got.value)
        if why is None and read_only(host, target.path):
            why = self.unwritable(target)
        return Reading(value, skip=why or "")

    def current(self, text: str) -> str:
        """The value a read file holds, as plans show and compare it."""
        return text

    def refusal(self, host: Host, target: Target, text: str) -> str | None:
        """Why ``target.desired`` cannot be set here, given the file's text, or None."""
        return None

    def unwritable(self, target: Target) -> str:
        """The skip reason for a file the kernel will not let this process write."""
        return self.read_only_reason

    def apply(self, host: Host, change: Change) -> None:
        host.write(change.target.path, change.target.desired + "\n")

    def boot_line(self, target: Target) -> tuple[str, str] | None:
        return ("tmpfiles", f"w /{target.path} - - - - {target.desired}")


def read_kernel_value(host: Host, rel: str) -> Reading:
    """A one-value kernel file as a Reading; absent or unreadable files are skipped."""
    try:
        text = host.read(rel)
    except FileNotFoundError:
        return Reading(None, skip="not on this host (no such kernel setting)")
    except PermissionError:
        return Reading(None, skip="insufficient permissions to read it")
    except OSError as e:
        return Reading(None, skip=f"unreadable: {e.strerror or e}")
    return Reading(text.strip())


def read_only(host: Host, rel: str) -> bool:
    """Whether ``rel`` cannot be written even by root: asked of the kernel (``access(2)``) when
    dolmen runs as root or on a host tree. A plain user on the live host cannot tell, so the
    plan shows what root would do and apply says that it needs root."""
    if host.kind == "live" and os.geteuid() != 0:
        return False
    return not host.writable(rel)

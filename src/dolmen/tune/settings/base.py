"""The contract of a setting kind (STYLE.md rule 9: a get/set pair the engine journals).

A setting kind is one profile section (``[sysctl]``, ``[cpu]``...). It

- validates a profile entry at load (``key``, ``validate``, ``needs_why``),
- expands an entry into targets on a host (``targets``: globs, CPUs, IRQs),
- reads a target (``read``) and plans it (``plan``, pure),
- captures the original before a write (``capture``), applies, and reverts.

The engine journals what ``capture`` returns before ``apply`` runs, so
``revert`` can restore it after a crash, in another process.
"""

from __future__ import annotations

import base64
import errno
from abc import ABC, abstractmethod
from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, ClassVar

from dolmen.host import Host
from dolmen.tune.model import Action, ApplyFailed, Change, Effect, Reading, Target

# Fields every entry may carry, whatever its section.
COMMON_FIELDS = frozenset({"value", "source", "why", "arch", "remove"})


@dataclass(frozen=True)
class Entry:
    """One validated profile value: ``[section] key = value`` with where it came from."""

    setting: str
    key: str
    value: str  # canonical form (the setting's validate() output)
    source: str = ""
    why: str = ""
    arch: tuple[str, ...] = ()  # empty: any architecture
    origin: str = ""  # "<file>:<line>"
    fields: Mapping[str, Any] = field(default_factory=dict)  # setting-specific extras


class Setting(ABC):
    """One kind of setting. Subclasses are small; see the module docstring."""

    section: ClassVar[str]
    title: ClassVar[str]
    extra_fields: ClassVar[frozenset[str]] = frozenset()
    effect: ClassVar[Effect] = Effect.NOW
    key_order: ClassVar[tuple[str, ...]] = ()  # keys applied first, in this order
    # The section's keys when they are a fixed set: ``key`` refuses any other, naming them.
    keys: ClassVar[Collection[str] | None] = None
    # Whether what this kind sets survives a reboot by itself (every kind says it, in one
    # line; a conformance test holds them to it): True, a file or a unit state that lasts
    # (limits.d, GRUB, systemd); False, a runtime value of the kernel or the driver that a
    # boot resets (the [boot] files bring some back; `dolmen tune reapply` rewrites them all
    # from the active profile's journal: tune/reapply.py).
    persists: ClassVar[bool]

    # --- load time -------------------------------------------------------------------
    def key(self, raw: str) -> str:
        """The canonical key; ValueError (naming valid keys) when it is not one."""
        if self.keys is not None and raw not in self.keys:
            raise choice_error(f"[{self.section}] key", raw, sorted(self.keys))
        return raw

    @abstractmethod
    def validate(self, key: str, value: Any, fields: Mapping[str, Any]) -> str:
        """The canonical desired value; ValueError naming the valid choices or range."""

    def needs_why(self, key: str, value: str) -> str | None:
        """Why this value must carry a ``why`` (a known trade-off), or None."""
        return None

    # --- plan time -------------------------------------------------------------------
    @abstractmethod
    def targets(self, host: Host, entry: Entry) -> list[Target] | str:
        """The targets of an entry on this host, or the reason there are none."""

    def targets_all(self, host: Host, entries: Sequence[Entry]) -> list[list[Target] | str]:
        """``targets`` of each of a plan's entries of this kind, in their order: a kind whose
        entries share a costly read (``[net]``: the interfaces) does it once here."""
        return [self.targets(host, e) for e in entries]

    @abstractmethod
    def read(self, host: Host, target: Target) -> Reading:
        """The current value of a target (one read)."""

    def plan(self, target: Target, reading: Reading) -> Change:
        """Compare what is with what the profile wants. Pure."""
        if reading.skip:
            return Change(target, reading.value, Action.SKIP, self.effect, reading.skip)
        same = reading.value is not None and self.same(reading.value, target.desired)
        action = Action.OK if same else Action.CHANGE
        return Change(target, reading.value, action, self.effect, notes=reading.notes)

    def same(self, current: str, desired: str) -> bool:
        """Whether a read value equals a desired one (whitespace-insensitive by default)."""
        return current.split() == desired.split()

    def show(self, value: str | None) -> str:
        """A value as the plan table prints it."""
        return "(absent)" if value is None else value

    # --- apply time ------------------------------------------------------------------
    def capture(self, host: Host, change: Change) -> dict[str, Any]:
        """What revert needs to restore the original: the target file's bytes by default."""
        return capture_file(host, change.target.path)

    @abstractmethod
    def apply(self, host: Host, change: Change) -> None:
        """Make the target hold its desired value."""

    def revert(self, host: Host, change: Change, saved: Mapping[str, Any]) -> None:
        """Restore what ``capture`` saved (byte for byte where the host allows)."""
        restore_file(host, change.target.path, saved, kernel_form=self.kernel_form)

    def kernel_form(self, raw: bytes) -> bytes | None:
        """What to write to a kernel file to restore ``raw`` when the kernel refuses its own
        display format (``always [madvise] never`` reads back but only ``madvise`` writes)."""
        return None

    def boot_line(self, target: Target) -> tuple[str, str] | None:
        """(file kind, line) that makes this target hold at boot, or None (not persisted)."""
        return None

    def moved(self, host: Host, target: Target) -> str | None:
        """Why a journaled target no longer names the same thing after a reboot (an IRQ
        number now another device's), or None; ``tune reapply`` never writes such a one."""
        return None


# --- shared helpers: originals of files ------------------------------------------------------
def link_refusal(host: Host, rel: str) -> str | None:
    """Why ``rel`` is not written: it is a symbolic link. A write would go through it to a
    file elsewhere that a rollback (which restores or removes ``rel`` itself) leaves behind;
    replacing it would break what the site linked. None for anything else."""
    to = host.readlink(rel)
    if to is None:
        return None
    return (
        f"/{rel} is a symbolic link (to {to}): dolmen never writes through a link; make it a file"
    )


def capture_file(host: Host, rel: str) -> dict[str, Any]:
    """The bytes and mode of a file, or that it was absent and which of its folders were
    missing too (a rollback removes them again), JSON-ready. A symbolic link (made since
    the plan, which skips one) fails the step before anything is saved or written: the
    rollback then leaves the link alone (a dangling one would read as absent, and go)."""
    if why := link_refusal(host, rel):
        raise ApplyFailed(why)
    try:
        raw = host.read_bytes(rel)
    except FileNotFoundError:
        return {"path": rel, "absent": True, "missing_dirs": host.missing_folders(rel)}
    return {
        "path": rel,
        "b64": base64.b64encode(raw).decode(),
        "mode": host.mode(rel),
    }


def saved_bytes(saved: Mapping[str, Any]) -> bytes | None:
    """The bytes a capture saved, or None when the file was absent."""
    if saved.get("absent"):
        return None
    return base64.b64decode(str(saved["b64"]))


def restore_file(
    host: Host,
    rel: str,
    saved: Mapping[str, Any],
    *,
    kernel_form: Any = None,
) -> None:
    """Put a file back as ``capture_file`` saw it.

    Kernel files get their original bytes back; when the kernel refuses them
    (EINVAL: a display format such as ``always [madvise] never``), the
    setting's ``kernel_form`` of those bytes is written instead. Other files are
    rewritten atomically with their mode, or removed if they were absent.
    """
    raw = saved_bytes(saved)
    if raw is None:
        host.remove(rel)
        for folder in saved.get("missing_dirs", []):  # deepest first
            if not host.remove_dir(str(folder)):
                break
        return
    if rel.startswith(("proc/", "sys/")):
        try:
            host.write(rel, raw)
        except OSError as e:
            alt = kernel_form(raw) if kernel_form is not None else None
            if e.errno != errno.EINVAL or alt is None:
                raise
            host.write(rel, alt)
        return
    mode = saved.get("mode")
    host.write(rel, raw, mode=int(mode) if isinstance(mode, int) else None)


def choice_error(what: str, value: object, choices: Sequence[str]) -> ValueError:
    """A ValueError that names the valid choices (STYLE.md rule 12)."""
    return ValueError(f"{what} {value!r} is not valid; valid choices: {', '.join(choices)}")

"""``[cmdline]``: kernel command line parameters, staged for the next boot.

``iommu = "pt"`` asks for ``iommu=pt``; ``nosmt = true`` for a bare flag. The
running kernel's ``/proc/cmdline`` cannot change, so a parameter is staged
in the boot loader's configuration and reported *pending* until the host has
rebooted with it:

- Boot Loader Specification entries (``/boot/loader/entries/*.conf``, Fedora,
  RHEL 8+): the parameter is added to each entry's ``options`` line, as
  ``grubby --update-kernel=ALL --args`` does; the original entry bytes are
  journaled, so rollback is exact.
- GRUB with ``/etc/default/grub`` (Debian, Ubuntu): a drop-in
  ``/etc/default/grub.d/90-dolmen-<name>.cfg`` appends the parameter to
  ``GRUB_CMDLINE_LINUX_DEFAULT``; on the live host ``update-grub`` then
  regenerates grub.cfg (rollback removes the drop-in and runs it again).
"""

from __future__ import annotations

import re
import shlex
from collections.abc import Mapping
from typing import Any

from dolmen.host import Host, RunStatus
from dolmen.tune.model import Action, ApplyFailed, Change, Effect, Reading, Target
from dolmen.tune.settings.base import Entry, Setting, capture_file, restore_file
from dolmen.tune.settings.dropin import HEADER

BLS = "boot/loader/entries"
GRUB_DEFAULT = "etc/default/grub"
GRUB_D = "etc/default/grub.d"
_NAME = re.compile(r"^[A-Za-z0-9_][A-Za-z0-9_.\-]*$")
_VALUE = re.compile(r"^[A-Za-z0-9_.,:=+\-/]+$")
_GRUB_VAR = re.compile(r"^\s*GRUB_CMDLINE_LINUX(?:_DEFAULT)?=(.*)$", re.M)

IN_EFFECT, PENDING, BOOTED_ONLY, ABSENT = (
    "in effect",
    "staged, not booted",
    "booted, not staged",
    "absent",
)


def arg_text(key: str, value: str) -> str:
    """``iommu``, ``pt`` -> ``iommu=pt``; a flag (value ``true``) is the bare name."""
    return key if value == "true" else f"{key}={value}"


def options_line(text: str) -> tuple[int, list[str]] | None:
    """(line index, tokens) of a BLS entry's ``options`` line, or None."""
    for i, line in enumerate(text.splitlines()):
        if line.startswith("options"):
            return i, line.split()[1:]
    return None


def with_option(text: str, arg: str) -> str:
    """A BLS entry with ``arg`` on its options line (replacing another value of that name)."""
    lines = text.splitlines(keepends=True)
    found = options_line(text)
    name = arg.split("=", 1)[0]
    if found is None:
        return text + ("" if text.endswith("\n") or not text else "\n") + f"options {arg}\n"
    i, tokens = found
    kept = [t for t in tokens if t.split("=", 1)[0] != name]
    end = "\n" if lines[i].endswith("\n") else ""
    lines[i] = "options " + " ".join([*kept, arg]) + end
    return "".join(lines)


def grub_tokens(text: str) -> list[str]:
    """The parameters a GRUB defaults file adds (``GRUB_CMDLINE_LINUX[_DEFAULT]``), without
    the ``$VARIABLE`` references drop-ins use to append."""
    out: list[str] = []
    for m in _GRUB_VAR.finditer(text):
        value = m.group(1).strip()
        try:
            words = shlex.split(value, comments=True)
        except ValueError:  # unbalanced quotes: take the words as they are
            words = value.strip("\"'").split()
        out.extend(" ".join(words).split())
    return [w for w in out if not w.startswith("$")]


def grub_has(host: Host, arg: str) -> bool:
    """Whether /etc/default/grub or one of its grub.d drop-ins adds ``arg``."""
    return any(
        arg in grub_tokens(host.read_opt(path) or "")
        for path in [GRUB_DEFAULT, *host.glob(f"{GRUB_D}/*.cfg")]
    )


def staged_args(host: Host) -> tuple[set[str], str] | None:
    """The parameters the next boot will pass, and where they are staged: the BLS entry of
    the running kernel, else GRUB's defaults and drop-ins; None when neither is found."""
    release = host.read_value("proc/sys/kernel/osrelease") or ""
    for path in host.glob(f"{BLS}/*.conf"):
        text = host.read_opt(path) or ""
        if release and release in text:
            found = options_line(text)
            tokens = {t for t in (found[1] if found else []) if not t.startswith("$")}
            return tokens, f"/{path}"
    if host.exists(GRUB_DEFAULT):
        tokens = set()
        for path in [GRUB_DEFAULT, *host.glob(f"{GRUB_D}/*.cfg")]:
            tokens.update(grub_tokens(host.read_opt(path) or ""))
        return tokens, f"/{GRUB_DEFAULT} and its grub.d drop-ins"
    return None


class Cmdline(Setting):
    """Kernel command line parameters (next boot)."""

    section = "cmdline"
    persists = True
    title = "kernel command line (staged for the next boot)"
    effect = Effect.REBOOT

    def key(self, raw: str) -> str:
        if not _NAME.match(raw):
            raise ValueError(f"{raw!r} is not a kernel parameter name (like iommu)")
        return raw

    def validate(self, key: str, value: Any, fields: Mapping[str, Any]) -> str:
        if value is True:
            return "true"
        if isinstance(value, bool) or not isinstance(value, (str, int)):
            raise ValueError("a kernel parameter takes a word, a number, or true for a bare flag")
        text = str(value)
        if not _VALUE.match(text):
            raise ValueError(f"{text!r} is not a kernel parameter value (no spaces or quotes)")
        return text

    def needs_why(self, key: str, value: str) -> str | None:
        if key == "numa_balancing" and value == "disable":
            return (
                "disabling automatic NUMA balancing cost up to 20% on some CPU-bound AMD "
                "workloads (redhat-performance/tuned PR #283); say why this profile wants it"
            )
        return None

    def targets(self, host: Host, entry: Entry) -> list[Target] | str:
        arg = arg_text(entry.key, entry.value)
        entries = host.glob(f"{BLS}/*.conf")
        if entries:
            return [
                Target(
                    self.section,
                    entry.key,
                    f"{arg} ({p.rsplit('/', 1)[-1]})",
                    arg,
                    p,
                    entry.origin,
                    entry.source,
                    {"loader": "bls"},
                )
                for p in entries
            ]
        if host.exists(GRUB_DEFAULT):
            return [self._target(entry, arg, f"{GRUB_D}/90-dolmen-{entry.key}.cfg", "grub")]
        if arg in (host.read_opt("proc/cmdline") or "").split():
            # Booted with it, and no loader configuration here to say where it came from (a
            # bundle without /boot and /etc/default/grub, a PXE or UKI boot): in effect,
            # never "absent" with advice to add what the kernel already runs with.
            return [self._target(entry, arg, "proc/cmdline", "none")]
        return f"no GRUB configuration or BLS entries here: add {arg} to the boot loader by hand"

    def _target(self, entry: Entry, arg: str, path: str, loader: str) -> Target:
        """The target staging ``arg`` in ``path`` of the boot loader ``loader``."""
        return Target(
            self.section, entry.key, arg, arg, path, entry.origin, entry.source, {"loader": loader}
        )

    def read(self, host: Host, target: Target) -> Reading:
        cmdline = host.read_opt("proc/cmdline")
        if cmdline is None:
            return Reading(None, skip="unknown: /proc/cmdline is unreadable")
        arg = target.desired
        booted = arg in cmdline.split()
        if target.extra.get("loader") == "none":
            staged = booted  # no loader to stage in: the running command line is all there is
        elif target.extra.get("loader") == "bls":
            found = options_line(host.read_opt(target.path) or "")
            staged = found is not None and arg in found[1]
        else:
            staged = grub_has(host, arg)
        value = {
            (True, True): IN_EFFECT,
            (False, True): PENDING,
            (True, False): BOOTED_ONLY,
            (False, False): ABSENT,
        }[(booted, staged)]
        return Reading(value)

    def plan(self, target: Target, reading: Reading) -> Change:
        if reading.skip:
            return Change(target, reading.value, Action.SKIP, self.effect, reading.skip)
        action = {IN_EFFECT: Action.OK, PENDING: Action.PENDING}.get(
            reading.value or "", Action.CHANGE
        )
        return Change(target, reading.value, action, self.effect)

    def same(self, current: str, desired: str) -> bool:
        return current == IN_EFFECT

    def show(self, value: str | None) -> str:
        return "(absent)" if value is None else value

    def capture(self, host: Host, change: Change) -> dict[str, Any]:
        return capture_file(host, change.target.path)

    def apply(self, host: Host, change: Change) -> None:
        t = change.target
        if t.extra.get("loader") == "none":  # planned OK: only a command line changed since
            raise ApplyFailed(f"no boot loader configuration here to stage {t.desired} in")
        if t.extra.get("loader") == "bls":
            host.write(t.path, with_option(host.read(t.path), t.desired))
            return
        line = f'GRUB_CMDLINE_LINUX_DEFAULT="$GRUB_CMDLINE_LINUX_DEFAULT {t.desired}"\n'
        host.write(t.path, HEADER + line, mode=0o644)
        _update_grub(host)

    def revert(self, host: Host, change: Change, saved: Mapping[str, Any]) -> None:
        restore_file(host, change.target.path, saved)
        if change.target.extra.get("loader") == "grub":
            _update_grub(host)


def _update_grub(host: Host) -> None:
    """Regenerate grub.cfg on the live host (a tree has no boot loader to run)."""
    if host.kind != "live":
        return
    res = host.run(["update-grub"], timeout=300)
    if res.status is RunStatus.MISSING:
        res = host.run(["grub-mkconfig", "-o", "/boot/grub/grub.cfg"], timeout=300)
    if not res.ok:
        raise ApplyFailed(f"staged, but regenerating grub.cfg failed: {res.describe()}")

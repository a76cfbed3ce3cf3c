"""Boot persistence: the runtime values of a profile written where the next boot reads them.

dolmen has no daemon to reapply a profile at boot (TuneD does). Instead the
profile's sysctls go to ``/etc/sysctl.d/90-dolmen-tune.conf`` (systemd-sysctl,
as NVIDIA's nvidia-kernel-defaults does) and its /sys values (THP, governor,
huge pages) to ``/etc/tmpfiles.d/90-dolmen-tune.conf`` as ``w`` lines
(systemd-tmpfiles writes them at boot). Rollback removes both. A profile with
``persist = false`` writes neither. This kind is built by the engine from the
plan, never named in a profile.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from dolmen.host import Host
from dolmen.tune.model import Action, Change, Target
from dolmen.tune.settings.base import Entry
from dolmen.tune.settings.dropin import HEADER, DropIn

FILES: Mapping[str, str] = {
    "sysctl": "etc/sysctl.d/90-dolmen-tune.conf",
    "tmpfiles": "etc/tmpfiles.d/90-dolmen-tune.conf",
}


class BootFiles(DropIn):
    """dolmen's sysctl.d and tmpfiles.d files (see module docstring)."""

    section = "boot"
    persists = True
    title = "boot persistence (sysctl.d, tmpfiles.d)"

    def validate(self, key: str, value: Any, fields: Mapping[str, Any]) -> str:
        raise ValueError("[boot] is written by dolmen from the other sections, not by profiles")

    def targets(self, host: Host, entry: Entry) -> list[Target]:
        return []


def boot_targets(profile: str, changes: Sequence[Change], lines_of: Any) -> list[Target]:
    """The persistence files for the changes that are not skipped.

    ``lines_of(target)`` is the target's setting's ``boot_line``.
    """
    lines: dict[str, list[str]] = {kind: [] for kind in FILES}
    for c in changes:
        if c.action is Action.SKIP:
            continue
        got = lines_of(c.target)
        if got is not None:
            kind, line = got
            lines[kind].append(f"{line}\n")
    out = []
    for kind, body in lines.items():
        if not body:
            continue
        head = HEADER + f"# profile: {profile}\n"
        out.append(
            Target(
                "boot",
                kind,
                f"/{FILES[kind]}",
                head + "".join(body),
                FILES[kind],
                "",
                "kept across reboots by systemd-" + ("sysctl" if kind == "sysctl" else "tmpfiles"),
            )
        )
    return out

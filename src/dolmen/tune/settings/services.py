"""``[services]``: systemd units enabled, disabled or masked.

``"irqbalance.service" = "disabled"``.

Read with ``systemctl is-enabled`` and ``is-active``; changed with
``systemctl enable|disable|mask`` and then ``start|stop`` (the runtime part
is left out, with a note, where systemd is not running, as in a container).
The original enablement and activity are journaled and restored on
rollback. A unit that does not exist here is skipped; a host tree can be read
(recorded command outputs) but not changed.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

from dolmen.host import Host, RunStatus
from dolmen.tune.model import Action, ApplyFailed, Change, Reading, Target
from dolmen.tune.settings.base import Entry, Setting, choice_error

STATES = ("enabled", "disabled", "masked")
_UNIT = re.compile(r"^[A-Za-z0-9:_.@\-\\]+\.(service|socket|timer|path|mount|target)$")
TIMEOUT = 90.0  # stopping a unit waits for it (systemd's default stop timeout)


def unit_state(host: Host, unit: str) -> tuple[str | None, bool | None, str]:
    """(enablement, active, reason): enablement None when the unit is unknown or unreadable."""
    res = host.run(["systemctl", "is-enabled", unit])
    word = res.stdout.strip().splitlines()[0] if res.stdout.strip() else ""
    if res.status is RunStatus.MISSING:
        return None, None, f"systemctl not available here ({res.reason})"
    if not word or "No such file" in res.stderr or word == "not-found":
        return None, None, "no such unit on this host"
    act = host.run(["systemctl", "is-active", unit])
    active_word = act.stdout.strip()
    active = None if not active_word else active_word == "active"
    return word, active, ""


def _describe(enabled: str | None, active: bool | None) -> str:
    run = {True: "active", False: "inactive", None: "activity unknown"}[active]
    return f"{enabled}, {run}"


class Services(Setting):
    """systemd units: enabled (and started), disabled or masked (and stopped).

    A target's ``name`` is the unit (other settings reuse this one for their units)."""

    section = "services"
    persists = True
    title = "systemd units"

    def key(self, raw: str) -> str:
        unit = raw if "." in raw else f"{raw}.service"
        if not _UNIT.match(unit):
            raise ValueError(f"{raw!r} is not a systemd unit name (like irqbalance.service)")
        return unit

    def validate(self, key: str, value: Any, fields: Mapping[str, Any]) -> str:
        if value not in STATES:
            raise choice_error(f"state of {key}", value, STATES)
        return str(value)

    def targets(self, host: Host, entry: Entry) -> list[Target]:
        return [
            Target(self.section, entry.key, entry.key, entry.value, "", entry.origin, entry.source)
        ]

    def read(self, host: Host, target: Target) -> Reading:
        enabled, active, why = unit_state(host, target.name)
        if enabled is None:
            return Reading(None, skip=why)
        value = _describe(enabled, active)
        if host.kind != "live":
            return Reading(value, skip="a host tree cannot run systemctl; apply on the host")
        return Reading(value)

    def plan(self, target: Target, reading: Reading) -> Change:
        if reading.skip or reading.value is None:
            return super().plan(target, reading)
        enabled, _, run = reading.value.partition(", ")
        want_active = target.desired == "enabled"
        held = enabled == target.desired or (
            target.desired == "disabled" and enabled in ("static", "indirect")
        )
        running_ok = run == "activity unknown" or (run == "active") == want_active
        action = Action.OK if held and running_ok else Action.CHANGE
        return Change(target, reading.value, action)

    def same(self, current: str, desired: str) -> bool:
        return current.partition(", ")[0] == desired

    def capture(self, host: Host, change: Change) -> dict[str, Any]:
        enabled, active, _ = unit_state(host, change.target.name)
        return {"unit": change.target.name, "enabled": enabled, "active": active}

    def apply(self, host: Host, change: Change) -> None:
        unit, want = change.target.name, change.target.desired
        steps = {
            "enabled": [["unmask"], ["enable"], ["start"]],
            "disabled": [["disable"], ["stop"]],
            "masked": [["mask"], ["stop"]],
        }[want]
        _run_steps(host, unit, steps)

    def revert(self, host: Host, change: Change, saved: Mapping[str, Any]) -> None:
        unit = change.target.name
        enabled, active = saved.get("enabled"), saved.get("active")
        steps: list[list[str]] = [["unmask"]]
        if enabled == "masked":
            steps = [["mask"]]
        elif enabled == "enabled":
            steps.append(["enable"])
        elif enabled == "disabled":
            steps.append(["disable"])
        if active is True:
            steps.append(["start"])
        elif active is False:
            steps.append(["stop"])
        _run_steps(host, unit, steps)


def _run_steps(host: Host, unit: str, steps: list[list[str]]) -> None:
    for verb in steps:
        res = host.run(["systemctl", *verb, unit], timeout=TIMEOUT)
        if res.ok:
            continue
        runtime = verb[0] in ("start", "stop")
        if runtime and "not been booted with systemd" in res.stderr:
            continue  # no service manager running (a container, a chroot): nothing to start
        if verb[0] == "unmask" and "not masked" in res.stderr.lower():
            continue
        raise ApplyFailed(res.describe())

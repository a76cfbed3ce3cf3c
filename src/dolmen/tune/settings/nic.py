"""``[net]``: NIC ring sizes and offload features through ethtool.

    [net]
    rx_ring = { value = "max", drivers = ["mlx5_core"] }
    tx_ring = "max"
    lro = "on"                       # large-receive-offload; gro = generic-receive-offload
    "tx-nocache-copy" = "off"        # any feature name of `ethtool -k`

Larger rings absorb bursts at 100-400 Gb/s without drops; mlnx_tune's HIGH_THROUGHPUT
profile (Mellanox/mlnx-tools) turns hardware LRO on where supported and
``tx-nocache-copy`` off. mlnx_tune itself also stops irqbalance and pins IRQs (the
``[irq]`` section) and sets the governor (``[cpu]``); running ``mlnx_tune -p
HIGH_THROUGHPUT`` instead is a documented option (docs/tune.md), but it keeps no
journal to roll back from.

Targets: every interface of ``ip -o link show`` (in the host's network namespace)
whose ``ethtool -i`` names a bus (a PCI NIC), or whose driver is in ``drivers``. A ring
of ``max`` is the driver's maximum (``ethtool -g``), resolved at plan time; a number
above the maximum is refused. A feature the driver fixes (``[fixed]``) or does not have
is skipped with the reason. Apply runs ``ethtool -G IF rx N`` / ``ethtool -K IF feature
on``; rollback sets the journaled value back. Not persistent: a reboot or a driver
reset restores the driver's defaults, and ``dolmen-tune-boot.service`` runs ``dolmen
tune reapply``, which writes the drifted ones again (tune/reapply.py).
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from typing import Any

from dolmen.host import Host, RunStatus
from dolmen.tune.model import ApplyFailed, Change, Reading, Target
from dolmen.tune.settings.base import Entry, Setting, choice_error
from dolmen.tune.settings.ethtool_text import (
    Rings,
    parse_driver,
    parse_features,
    parse_links,
    parse_rings,
)

RINGS = {"rx_ring": "rx", "tx_ring": "tx"}
ALIASES = {"lro": "large-receive-offload", "gro": "generic-receive-offload"}
_FEATURE = re.compile(r"^[a-z0-9][a-z0-9\-]*$")
_DRIVER = re.compile(r"^[A-Za-z0-9_\-]+$")
NOT_PERSISTED = "lost at reboot or driver reset; dolmen-tune-boot.service re-applies it"
Link = tuple[str, str | None, str | None]  # an interface, its driver and bus (ethtool -i)


def nic_links(host: Host) -> list[Link] | str:
    """Every interface of ``ip -o link show`` with its driver and bus (``ethtool -i``),
    or why they cannot be read."""
    res = host.run(["ip", "-o", "link", "show"])
    if not res.ok:
        return f"interfaces unreadable: {res.failure()}"
    links = []
    for name in parse_links(res.stdout):
        info = host.run(["ethtool", "-i", name])
        if info.status in (RunStatus.MISSING, RunStatus.UNRECORDED):
            return (
                f"ethtool did not run ({info.failure()}): install ethtool (apt-get install ethtool)"
            )
        links.append((name, *(parse_driver(info.stdout) if info.ok else (None, None))))
    return links


def interfaces(links: list[Link], drivers: list[str]) -> list[str] | str:
    """The interfaces of ``links`` that ``[net]`` tunes (module docstring), or why none."""
    chosen = [
        n for n, driver, bus in links if ((driver in drivers) if drivers else bus is not None)
    ]
    if not chosen:
        which = f"with driver {'/'.join(drivers)}" if drivers else "on a PCI bus"
        return f"no network interface {which} here"
    return chosen


class Nic(Setting):
    """Ring sizes and offload features of NICs (module docstring)."""

    section = "net"
    title = "NIC ring sizes and offloads (ethtool)"
    persists = False  # the driver's runtime values: a boot or a driver reload resets them
    extra_fields = frozenset({"drivers"})

    def key(self, raw: str) -> str:
        name = ALIASES.get(raw, raw)
        if raw not in RINGS and not _FEATURE.match(name):
            raise choice_error("[net] key", raw, [*RINGS, *ALIASES, "an ethtool -k feature"])
        return name

    def validate(self, key: str, value: Any, fields: Mapping[str, Any]) -> str:
        drivers = fields.get("drivers", [])
        if not isinstance(drivers, list) or not all(
            isinstance(d, str) and _DRIVER.match(d) for d in drivers
        ):
            raise ValueError("drivers is a list of driver names (mlx5_core)")
        if key in RINGS:
            number = isinstance(value, int) and not isinstance(value, bool)
            if value == "max" or (number and 1 <= value <= 1 << 20):
                return str(value)
            raise ValueError(f'{key} is "max" or a ring size 1..1048576, not {value!r}')
        if value not in ("on", "off"):
            raise choice_error(f"[net] {key}", value, ["on", "off"])
        return str(value)

    def targets(self, host: Host, entry: Entry) -> list[Target] | str:
        return self.targets_all(host, [entry])[0]

    def targets_all(self, host: Host, entries: Sequence[Entry]) -> list[list[Target] | str]:
        links = nic_links(host)  # once for all the entries: a command per interface
        rings: dict[str, Rings | None] = {}  # ethtool -g, once per interface
        return [
            links if isinstance(links, str) else self._targets(host, e, links, rings)
            for e in entries
        ]

    def _targets(
        self,
        host: Host,
        entry: Entry,
        links: list[Link],
        rings: dict[str, Rings | None],
    ) -> list[Target] | str:
        names = interfaces(links, list(entry.fields.get("drivers", [])))
        if isinstance(names, str):
            return names
        out = []
        for name in names:
            desired = entry.value
            if entry.key in RINGS and desired == "max":
                if name not in rings:
                    rings[name] = parse_rings(host.run(["ethtool", "-g", name]).stdout)
                got = rings[name]
                top = None if got is None else getattr(got, f"{RINGS[entry.key]}_max")
                desired = str(top) if top else "max"  # unreadable: read() says why
            out.append(
                Target(
                    self.section,
                    entry.key,
                    f"{name} {entry.key}",
                    desired,
                    "",
                    entry.origin,
                    entry.source,
                    {"iface": name},
                )
            )
        return out

    def read(self, host: Host, target: Target) -> Reading:
        name, key = target.extra["iface"], target.key
        if key in RINGS:
            res = host.run(["ethtool", "-g", name])
            rings = parse_rings(res.stdout) if res.ok else None
            if rings is None:
                why = (res.stderr.strip().splitlines() or [res.failure() or "no ring sizes"])[-1]
                return Reading(None, skip=f"ring sizes not readable: ethtool -g {name}: {why}")
            item = RINGS[key]
            now, top = getattr(rings, item), getattr(rings, f"{item}_max")
            if top is not None and target.desired.isdigit() and int(target.desired) > top:
                return Reading(str(now), skip=f"the driver's maximum {item} ring is {top}")
            return self._held(host, target, str(now), (f"maximum {top}", NOT_PERSISTED))
        res = host.run(["ethtool", "-k", name])
        feature = parse_features(res.stdout).get(key) if res.ok else None
        if feature is None:
            return Reading(None, skip=f"{name} has no feature {key} (ethtool -k)")
        value = "on" if feature.on else "off"
        if feature.fixed and value != target.desired:
            return Reading(value, skip=f"{key} is fixed {value} by {name}'s driver")
        return self._held(host, target, value, (NOT_PERSISTED,))

    def _held(self, host: Host, target: Target, value: str, notes: tuple[str, ...]) -> Reading:
        if host.kind not in ("live", "netns") and not self.same(value, target.desired):
            return Reading(value, skip="a host tree cannot run ethtool; apply on the host")
        return Reading(value, notes=notes)

    def capture(self, host: Host, change: Change) -> dict[str, Any]:
        got = self.read(host, change.target)
        if got.value is None:
            raise ApplyFailed(got.skip or "unreadable")
        return {"iface": change.target.extra["iface"], "key": change.target.key, "value": got.value}

    def apply(self, host: Host, change: Change) -> None:
        _ethtool(host, change.target.extra["iface"], change.target.key, change.target.desired)

    def revert(self, host: Host, change: Change, saved: Mapping[str, Any]) -> None:
        _ethtool(host, str(saved["iface"]), str(saved["key"]), str(saved["value"]))


def _ethtool(host: Host, iface: str, key: str, value: str) -> None:
    if key in RINGS:
        argv = ["ethtool", "-G", iface, RINGS[key], value]
    else:
        argv = ["ethtool", "-K", iface, key, value]
    res = host.run(argv)
    if not res.ok:
        raise ApplyFailed(res.describe())

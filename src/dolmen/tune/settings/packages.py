"""``[packages]``: distribution packages at exact versions, held there.

``"libnccl2" = "2.21.5-1+cuda12.4"`` in a profile; ``dolmen stack apply`` builds one
target of every package of a lock (key ``apt`` or ``dnf``) so that apt or dnf resolves
them in one transaction (the driver's packages depend on each other at the same version:
installed one by one, the resolver would pull the newest of the others).

A target's desired value is tokens ``name=version[held]``; a package not installed reads
``name=(none)``. Read from the dpkg status file (apt) or ``rpm -q`` (dnf) and the
versionlock list. Apply installs the versions (``apt-get install name=version``
``--allow-downgrades``, ``dnf install name-version``) and holds them (``apt-mark hold``,
``dnf versionlock add``). The capture journals every package's previous version and hold
state; revert reinstalls those versions (the repository must still offer them, or apt's
cache hold them), removes what was not installed, and restores the holds. Commands go
through ``stack.packages.manager_argv``, so a live host at a private root changes that
root only. A host tree can be read, not changed.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from dolmen.host import Host
from dolmen.stack.packages import manager_argv, parse_dpkg_status
from dolmen.tune.model import ApplyFailed, Change, Effect, Plan, Reading, Target
from dolmen.tune.settings.base import Entry, Setting, choice_error

MANAGERS = ("apt", "dnf")
HELD = "[held]"
NONE = "(none)"
TIMEOUT = 1800.0  # a driver's DKMS build runs for minutes
_NAME = re.compile(r"^[a-z0-9][a-z0-9+.\-_]*$")
_VERSION = re.compile(r"^[0-9][A-Za-z0-9.+~:\-_]*$")
_APT_INSTALL = ["install", "-y", "--allow-downgrades", "--allow-change-held-packages"]


def tokens(text: str) -> dict[str, tuple[str | None, bool]]:
    """``name=version[held]`` tokens -> {name: (version or None, held)}."""
    out: dict[str, tuple[str | None, bool]] = {}
    for tok in text.split():
        name, _, rest = tok.partition("=")
        held = rest.endswith(HELD)
        version = rest.removesuffix(HELD)
        out[name] = (None if version in ("", NONE) else version, held)
    return out


def render(state: Mapping[str, tuple[str | None, bool]]) -> str:
    """The inverse of ``tokens``, sorted by name."""
    return " ".join(
        f"{n}={v or NONE}{HELD if held else ''}" for n, (v, held) in sorted(state.items())
    )


def package_target(
    manager: str, wanted: Mapping[str, str], *, origin: str = "", module: str | None = None
) -> Target:
    """The one target of a transaction: every package of ``wanted`` at its version, held."""
    desired = render({n: (v, True) for n, v in wanted.items()})
    extra = {"manager": manager, **({"module": module} if module else {})}
    return Target("packages", manager, f"packages ({manager})", desired, "", origin, "", extra)


def transaction_plan(
    host: Host, manager: str, wanted: Mapping[str, str], *, profile: str, module: str | None = None
) -> Plan:
    """A tune plan of one transaction target (what ``dolmen stack apply`` hands the engine)."""
    target = package_target(manager, wanted, origin=profile, module=module)
    setting = Packages()
    change = setting.plan(target, setting.read(host, target))
    return Plan(profile, host.hostname, (change,))


def installed(
    host: Host, manager: str, names: list[str]
) -> dict[str, tuple[str | None, bool]] | str:
    """{name: (version or None, held)} for ``names``, or why it cannot be read."""
    if manager == "apt":
        text = host.read_opt("var/lib/dpkg/status")
        if text is None:
            return f"{host.absent('var/lib/dpkg/status')}: var/lib/dpkg/status"
        db = parse_dpkg_status(text)
        return {n: (db[n].version, db[n].held) if n in db else (None, False) for n in names}
    fmt = "%{NAME}\\t%{EPOCHNUM}:%{VERSION}-%{RELEASE}\\n"
    res = host.run(manager_argv(host, ["rpm", "-q", "--qf", fmt, *names]))
    found: dict[str, str] = {}
    for line in res.stdout.splitlines():
        name, sep, ver = line.partition("\t")
        if sep:
            found[name] = ver[2:] if ver.startswith("0:") else ver
    if not found and not res.ok and res.stdout.strip() == "":
        return res.failure()
    locks = host.read_opt("etc/dnf/plugins/versionlock.list") or ""
    held = {n for n in names if re.search(rf"^{re.escape(n)}-\d", locks, re.M)}
    return {n: (found.get(n), n in held) for n in names}


class Packages(Setting):
    """Packages at exact versions, held (module docstring)."""

    section = "packages"
    persists = True
    title = "distribution packages"
    effect = Effect.REBOOT  # a new kernel or driver runs after a reboot (or a module reload)

    def key(self, raw: str) -> str:
        if not _NAME.match(raw) and raw not in MANAGERS:
            raise ValueError(f"{raw!r} is not a package name (like libnccl2)")
        return raw

    def validate(self, key: str, value: Any, fields: Mapping[str, Any]) -> str:
        if not isinstance(value, str) or not _VERSION.match(value):
            raise ValueError(f"version of {key} {value!r} is not a package version (like 2.21.5-1)")
        return value

    def targets(self, host: Host, entry: Entry) -> list[Target]:
        manager = _manager_of(host)
        if manager is None:
            return []
        t = package_target(manager, {entry.key: entry.value}, origin=entry.origin)
        return [
            Target(
                t.setting, entry.key, entry.key, t.desired, "", entry.origin, entry.source, t.extra
            )
        ]

    def read(self, host: Host, target: Target) -> Reading:
        manager = target.extra.get("manager", "apt")
        if manager not in MANAGERS:
            return Reading(None, skip=str(choice_error("package manager", manager, MANAGERS)))
        state = installed(host, manager, list(tokens(target.desired)))
        if isinstance(state, str):
            return Reading(None, skip=f"package database unreadable: {state}")
        value = render(state)
        if host.kind != "live":
            return Reading(value, skip=f"a host tree cannot run {manager}; apply on the host")
        return Reading(value)

    def same(self, current: str, desired: str) -> bool:
        return tokens(current) == tokens(desired)

    def capture(self, host: Host, change: Change) -> dict[str, Any]:
        manager = change.target.extra.get("manager", "apt")
        state = installed(host, manager, list(tokens(change.target.desired)))
        if isinstance(state, str):
            raise ApplyFailed(f"cannot record the previous versions: {state}")
        return {
            "manager": manager,
            "packages": {n: {"version": v, "held": h} for n, (v, h) in state.items()},
        }

    def apply(self, host: Host, change: Change) -> None:
        manager = change.target.extra.get("manager", "apt")
        want = tokens(change.target.desired)
        stream = change.target.extra.get("module") or None
        for argv in commands(manager, {n: v for n, (v, _) in want.items() if v}, module=stream):
            _run(host, argv)

    def revert(self, host: Host, change: Change, saved: Mapping[str, Any]) -> None:
        manager = str(saved.get("manager", "apt"))
        before = {str(n): dict(p) for n, p in dict(saved.get("packages", {})).items()}
        back = {n: str(p["version"]) for n, p in before.items() if p.get("version")}
        gone = sorted(n for n, p in before.items() if not p.get("version"))
        held = sorted(n for n, p in before.items() if p.get("version") and p.get("held"))
        # Holds first: apt refuses to downgrade or remove a held package (apply held them).
        if manager == "apt":
            steps = [["apt-mark", "unhold", *sorted(before)]]
        else:
            steps = [["dnf", "versionlock", "delete", *sorted(before)]]
        steps += commands(manager, back, hold=False) if back else []
        if gone:
            remove = ["apt-get", "remove", "-y"] if manager == "apt" else ["dnf", "remove", "-y"]
            steps.append([*remove, *gone])
        if held:
            lock = ["apt-mark", "hold"] if manager == "apt" else ["dnf", "versionlock", "add"]
            steps.append([*lock, *(held if manager == "apt" else [f"{n}-{back[n]}" for n in held])])
        for argv in steps:
            _run(host, argv)


def commands(
    manager: str, versions: Mapping[str, str], *, hold: bool = True, module: str | None = None
) -> list[list[str]]:
    """The commands that install ``versions`` (and hold them): what plan prints, apply runs.
    ``module``: the dnf module stream enabled first (``nvidia-driver:550-open``)."""
    names = sorted(versions)
    if manager == "apt":
        out = [["apt-get", *_APT_INSTALL, *(f"{n}={versions[n]}" for n in names)]]
        return out + ([["apt-mark", "hold", *names]] if hold else [])
    nevra = [f"{n}-{versions[n]}" for n in names]
    out = [["dnf", "module", "enable", "-y", module]] if module else []
    out.append(["dnf", "install", "-y", "--allowerasing", *nevra])
    return out + ([["dnf", "versionlock", "add", *nevra]] if hold else [])


def stack_dir(host: Host) -> Path:
    """The journals of ``dolmen stack apply``: ``<state>/stack`` for the live host at ``/``,
    one folder per other root beside it. Apart from ``tune``'s, so a tune profile switch
    never rolls back a stack, nor a stack apply a profile."""
    from dolmen.tune.journal import change_dir  # the journal imports the settings registry

    return change_dir(host, "stack")


def _manager_of(host: Host) -> str | None:
    if host.exists("var/lib/dpkg/status"):
        return "apt"
    return "dnf" if host.exists("var/lib/rpm") or host.exists("usr/lib/sysimage/rpm") else None


def _run(host: Host, argv: list[str]) -> None:
    try:
        full = manager_argv(host, argv)
    except ValueError as e:
        raise ApplyFailed(str(e)) from None
    res = host.run(full, timeout=TIMEOUT)
    if not res.ok:
        raise ApplyFailed(res.describe())

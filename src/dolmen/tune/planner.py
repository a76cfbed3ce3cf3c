"""Profile + host -> Plan. Reads the host; never writes (``dolmen tune plan``).

For each entry: its targets on this host, each target read, then planned by
its setting (pure). Entries for another architecture, and targets the host
lacks, become ``skip`` rows with the reason. Then the plan gets what TuneD
leaves for users to discover: the sysctl.d line that will override a value at
the next boot (``sysctld.py``), and services known to fight a profile
(TuneD re-applying its own profile; power-profiles-daemon and tuned-ppd
resetting the governor, which is why DGX OS masks tuned-ppd).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

from dolmen.host import Host
from dolmen.tune.model import Action, Change, Plan, Target
from dolmen.tune.profile import Profile
from dolmen.tune.settings import SETTINGS, Entry
from dolmen.tune.settings.boot import FILES, boot_targets
from dolmen.tune.sysctld import boot_assignments, override_note

# unit -> (the sections it fights, why)
FIGHTERS = {
    "tuned.service": (
        ("sysctl", "sysfs", "cpu"),
        "tuned.service is enabled: it applies its own profile and re-applies /etc/sysctl.d "
        "at start (reapply_sysctl=1); disable it or keep the two profiles in agreement",
    ),
    "tuned-ppd.service": (
        ("cpu",),
        "tuned-ppd.service is enabled and resets the CPU governor (DGX OS masks it)",
    ),
    "power-profiles-daemon.service": (
        ("cpu",),
        "power-profiles-daemon.service is enabled and may change the energy-performance "
        "preference behind dolmen's back",
    ),
}


def host_arch(host: Host) -> str | None:
    """x86_64, aarch64...: ``kernel.arch`` (Linux 6.1+), ``uname -m``, else cpuinfo's shape."""
    arch = host.read_value("proc/sys/kernel/arch")
    if arch:
        return arch
    res = host.run(["uname", "-m"], timeout=5)
    if res.ok and res.stdout.strip():
        return res.stdout.strip()
    cpuinfo = host.read_opt("proc/cpuinfo") or ""
    if "vendor_id" in cpuinfo:
        return "x86_64"
    if "CPU implementer" in cpuinfo:
        return "aarch64"
    return None


def plan_profile(host: Host, profile: Profile) -> Plan:
    """The plan of ``profile`` on ``host`` (see module docstring)."""
    arch = host_arch(host) if any(e.arch for e in profile.entries) else None
    changes = _with_boot_notes(host, profile, plan_entries(host, profile.entries, arch))
    if profile.persist:
        boot = SETTINGS["boot"]
        for t in boot_targets(profile.name, changes, lambda t: SETTINGS[t.setting].boot_line(t)):
            changes.append(boot.plan(t, boot.read(host, t)))
    notes = tuple(
        _fighters(host, {c.target.setting for c in changes if c.action is not Action.SKIP})
    )
    return Plan(profile.name, host.hostname, tuple(changes), notes)


def plan_entries(host: Host, entries: Sequence[Entry], arch: str | None) -> list[Change]:
    """The changes of ``entries`` on ``host``, in their order. The entries of one kind get
    their targets from one call (``Setting.targets_all``): what they share is read once."""
    found: dict[int, list[Target] | str] = {}
    kinds: dict[str, list[int]] = {}
    for i, entry in enumerate(entries):
        if entry.arch and arch not in entry.arch:
            found[i] = f"only for {'/'.join(entry.arch)}; this host is {arch or 'of unknown arch'}"
        else:
            kinds.setdefault(entry.setting, []).append(i)
    for kind, at in kinds.items():
        got = SETTINGS[kind].targets_all(host, [entries[i] for i in at])
        found.update(zip(at, got, strict=True))
    changes: list[Change] = []
    for i, entry in enumerate(entries):
        targets, setting = found[i], SETTINGS[entry.setting]
        if isinstance(targets, str):
            changes.append(_skipped(entry, targets))
        else:
            changes.extend(setting.plan(t, setting.read(host, t)) for t in targets)
    return changes


def _skipped(entry: Entry, reason: str) -> Change:
    t = Target(entry.setting, entry.key, entry.key, entry.value, "", entry.origin, entry.source)
    return Change(t, None, Action.SKIP, SETTINGS[entry.setting].effect, reason)


def _with_boot_notes(host: Host, profile: Profile, changes: list[Change]) -> list[Change]:
    """Name the sysctl.d line that sets each value at boot when it is not the profile's.
    Without persistence only the values apply changes are said to be lost at boot; a
    read-only reference (baseline) gets no such notes."""
    if profile.read_only or not any(c.target.setting == "sysctl" for c in changes):
        return changes
    chains = boot_assignments(host)
    ours = FILES["sysctl"] if profile.persist else None
    out = []
    for c in changes:
        wanted = Action.CHANGE if ours is None else c.action
        if c.target.setting == "sysctl" and c.action is not Action.SKIP and c.action is wanted:
            note = override_note(chains.get(c.target.key, []), c.target.key, c.target.desired, ours)
            if note:
                c = Change(c.target, c.current, c.action, c.effect, c.reason, (*c.notes, note))
        out.append(c)
    return out


def _fighters(host: Host, sections: Iterable[str]) -> list[str]:
    wanted = set(sections)
    notes = []
    for unit, (fought, why) in FIGHTERS.items():
        if wanted & set(fought) and host.glob(f"etc/systemd/system/*.wants/{unit}"):
            notes.append(why)
    return notes

"""InfiniBand / RoCE facts: every HCA port with state, rate, link layer, counters, firmware.

Sources, best first (``model.SOURCES``): ``sys/class/infiniband`` (``sysfs.py``), then
the tools' listings (``tools.py``) under their tree keys ``ibstat``, ``ibstatus`` and
``ibv_devinfo``. A port shown by any source exists: the ports are the union, the best
source's reading of each. Where sysfs shows ports it is the whole list (the tools read
it), and ibstat runs beside it as a cross-check (``ibstat`` and ``disagreements``: a port
only ibstat shows is one of them); ibstatus and ibv_devinfo are read only where sysfs is
not (a pasted file, a bundle without sys/): on a live host every tool reads sysfs itself.
ibstat can fail half-way (``ibpanic: ... stat of IB device 'mlx5_8' failed``, exit 255)
after printing the other devices: what it printed is kept, the failure is in
``unread["ibstat"]`` and the device it named in ``lost_devices``.

``ports`` is always a tuple (empty without HCAs); when it is empty ``unread["ports"]``
says why, so the check framework's ``infiniband`` predicate can tell "not in this bundle"
from "this host has none" (``why_no_ports``).
"""

from __future__ import annotations

from dolmen.facts.infiniband.model import SOURCES, IbPort, InfinibandFacts
from dolmen.facts.infiniband.parse import (
    normalise_guid,
    parse_counters,
    parse_phys_state,
    parse_rate,
    parse_state,
    parse_width,
)
from dolmen.facts.infiniband.sysfs import CLASS, cross_check, read_sysfs
from dolmen.facts.infiniband.tools import (
    lost_devices,
    parse_ibstat,
    parse_ibstatus,
    parse_ibv_devinfo,
)
from dolmen.facts.reading import malformed
from dolmen.host import Host, RunStatus
from dolmen.host.command import NOT_IN_BUNDLE, CommandResult

__all__ = [
    "CLASS",
    "SOURCES",
    "IbPort",
    "InfinibandFacts",
    "collect",
    "cross_check",
    "lost_devices",
    "normalise_guid",
    "parse_counters",
    "parse_ibstat",
    "parse_ibstatus",
    "parse_ibv_devinfo",
    "parse_phys_state",
    "parse_rate",
    "parse_state",
    "parse_width",
    "read_sysfs",
    "why_no_ports",
]

_PARSERS = {"ibstat": parse_ibstat, "ibstatus": parse_ibstatus, "ibv_devinfo": parse_ibv_devinfo}
_ABSENT = (RunStatus.MISSING, RunStatus.UNRECORDED)


def why_no_ports(facts: InfinibandFacts) -> str | None:
    """None when a source showed a port or a device, else the reason, for the skip."""
    if facts.ports or facts.lost_devices:
        return None
    why = facts.unread.get("ports", "")
    if why.startswith(NOT_IN_BUNDLE):
        return why
    return f"no InfiniBand/RoCE ports on this host ({why})" if why else "no InfiniBand/RoCE ports"


def _tool(host: Host, name: str, unread: dict[str, str]) -> tuple[CommandResult, list[IbPort]]:
    res = host.run([name], timeout=15)
    ports = _PARSERS[name](res.stdout) if res.stdout.strip() else []
    if res.status not in _ABSENT and not res.ok:
        unread[name] = res.failure()
    elif res.ok and not ports and res.stdout.strip():
        unread[name] = malformed(res.stdout)
    return res, ports


def collect(host: Host) -> InfinibandFacts:
    """Read and parse the InfiniBand facts of ``host``."""
    unread: dict[str, str] = {}
    sysfs = read_sysfs(host, unread)
    results: dict[str, CommandResult] = {}
    shown: dict[str, list[IbPort]] = {"sysfs": sysfs}
    # On a live host every tool reads sys/class/infiniband: none can show what it lacks.
    if sysfs or host.kind != "live":
        results["ibstat"], shown["ibstat"] = _tool(host, "ibstat", unread)
        if sysfs and results["ibstat"].status in _ABSENT:
            unread["ibstat"] = results["ibstat"].failure()  # sources_agree: nothing to compare
    if not sysfs and host.kind != "live":
        for name in ("ibstatus", "ibv_devinfo"):
            results[name], shown[name] = _tool(host, name, unread)
    lost: dict[str, str] = {}
    for res in results.values():
        # Scanned whatever the exit code: a pasted ibstat carries its ibpanic line, not its rc.
        for dev, line in lost_devices(f"{res.stdout}\n{res.stderr}").items():
            lost.setdefault(dev, line)
    merged: dict[tuple[str, int], IbPort] = {}
    # sysfs is the kernel's whole list, and the tools read it: beside it, a port only ibstat
    # shows was read at another moment (or on another node), a disagreement, not a port.
    for source in ("sysfs",) if sysfs else SOURCES:
        for p in shown.get(source, ()):
            merged.setdefault((p.device, p.port), p)
    known = {p.device for p in merged.values()}
    lost = {d: line for d, line in lost.items() if d not in known}
    read = tuple(s for s in SOURCES if shown.get(s))
    if not merged:
        unread["ports"] = _no_ports(host, results)
    ibstat = tuple(shown.get("ibstat", ()))
    checked = cross_check(sysfs, list(ibstat)) if sysfs and ibstat else ()
    return InfinibandFacts(tuple(merged.values()), ibstat, checked, unread, lost, read)


def _no_ports(host: Host, results: dict[str, CommandResult]) -> str:
    """Why no source showed a port: each source's own words, absence first."""
    if host.is_dir(CLASS):
        sysfs_why = f"missing (no device in {CLASS})"
    else:
        sysfs_why = f"{host.absent(CLASS)}: {CLASS}"
    unrecorded = [n for n, r in results.items() if r.status is RunStatus.UNRECORDED]
    if sysfs_why.startswith(NOT_IN_BUNDLE) and len(unrecorded) == len(results):
        return f"{NOT_IN_BUNDLE}: {', '.join([CLASS, *unrecorded])}"
    said = [
        f"{n}: no device listed" if r.ok else r.failure()
        for n, r in results.items()
        if r.status is not RunStatus.UNRECORDED
    ]
    return "; ".join([sysfs_why, *said])

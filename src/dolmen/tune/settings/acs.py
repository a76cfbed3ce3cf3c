"""``[pcie_acs]``: PCIe Access Control Services off on PCIe switch downstream ports.

    [pcie_acs]
    downstream_ports = "disabled"

With ACS request/completion redirect on, peer-to-peer traffic between two GPUs, or a GPU
and a NIC, under one PCIe switch is sent up to the root complex (and the IOMMU) instead
of across the switch: GPUDirect P2P and RDMA crawl or hang. DGX OS disables it on every
bare-metal DGX (nvidia-acs-disable); NCCL's troubleshooting guide gives the command
(``setpci -s BDF ECAP_ACS+0x6.w=0000``). This kind clears the ACS Control register
(offset 6 of the ACS extended capability) of each switch downstream port that has bits
set, as that command does.

Read: the ports and their ACS Control flags from ``lspci -vvv`` (port type from the
PCI Express capability line, flags from ``ACSCtl:``; ``parse_acs`` is pure); on the
live host each port's register is read exactly with ``setpci -s BDF ECAP_ACS+0x6.w``.
The original register value is journaled and written back at rollback.

Refused inside a virtual machine (or where dolmen cannot tell): there ACS is what keeps
passed-through devices of different tenants isolated, and the hypervisor's host owns
the decision. Not persistent: config space is reset at every boot (and at a hot reset
of the port); ``dolmen-tune-boot.service`` (packaging/systemd) runs ``dolmen tune
reapply``, which writes the drifted ports again (tune/reapply.py). A host tree can be
read and planned, not changed (it cannot run setpci).
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from dolmen.host import Host, RunStatus
from dolmen.tune.model import ApplyFailed, Change, Reading, Target
from dolmen.tune.settings.base import Entry, Setting, choice_error
from dolmen.values.busid import BusId

# ACS Control register bits, as lspci names them (PCIe base spec, ACS extended capability).
FLAGS = (
    "SrcValid",
    "TransBlk",
    "ReqRedir",
    "CmpltRedir",
    "UpstreamFwd",
    "EgressCtrl",
    "DirectTrans",
)
REGISTER = "ECAP_ACS+0x6.w"
DOWNSTREAM = "Downstream Port"
_PORT = re.compile(r"Express \(v\d\) (Root Port|Upstream Port|Downstream Port|Endpoint)")
_HEX16 = re.compile(r"^[0-9a-fA-F]{1,4}$")


@dataclass(frozen=True)
class AcsPort:
    """One PCI function of ``lspci -vvv``: its port type and ACS Control, when shown."""

    bdf: str
    port: str | None  # Root Port, Upstream Port, Downstream Port, Endpoint; None: not shown
    control: int | None  # the ACS Control register from ACSCtl's flags; None: no ACS shown


def flags_value(text: str) -> int | None:
    """``SrcValid+ TransBlk- ReqRedir+ ...`` -> the register bits; None when a flag is missing."""
    marks = dict(re.findall(r"(\w+)([+-])", text))
    if not all(f in marks for f in FLAGS):
        return None
    return sum(1 << i for i, f in enumerate(FLAGS) if marks[f] == "+")


def describe(value: int) -> str:
    """The register as lspci prints it (``SrcValid+ ReqRedir+``...), set flags only."""
    on = [f"{f}+" for i, f in enumerate(FLAGS) if value >> i & 1]
    extra = value >> len(FLAGS)
    return " ".join(on + ([f"bits 7-15: {extra << len(FLAGS):#06x}"] if extra else [])) or "none"


def parse_acs(text: str) -> list[AcsPort]:
    """Every function of ``lspci -vvv`` (``-D`` or not) with its port type and ACSCtl."""
    out: list[AcsPort] = []
    for block in re.split(r"\n(?=\S)", text):
        head, _, body = block.partition("\n")
        bus = BusId.parse(head.split(" ", 1)[0])
        if bus is None or not head.strip():
            continue
        m = _PORT.search(body)
        acs = re.search(r"^\s*ACSCtl:(.*)$", body, re.M)
        control = flags_value(acs.group(1)) if acs else None
        out.append(AcsPort(bus.sysfs, m.group(1) if m else None, control))
    return out


def parse_register(stdout: str) -> int | None:
    """``setpci ... ECAP_ACS+0x6.w`` prints 4 hex digits."""
    word = stdout.strip()
    return int(word, 16) if _HEX16.match(word) else None


class PcieAcs(Setting):
    """ACS off on switch downstream ports (module docstring)."""

    section = "pcie_acs"
    keys = ("downstream_ports",)
    title = "PCIe ACS on switch downstream ports (GPUDirect P2P/RDMA)"
    persists = False  # config space: a boot resets it (reapply sets it again)

    def validate(self, key: str, value: Any, fields: Mapping[str, Any]) -> str:
        if value != "disabled":
            raise choice_error(f"[pcie_acs] {key}", value, ["disabled"])
        return "0000"

    def targets(self, host: Host, entry: Entry) -> list[Target] | str:
        from dolmen.facts.os import collect as os_facts  # a plan that has this kind only

        virt = os_facts(host).virtualization
        if virt is None:
            return (
                "cannot tell whether this is a virtual machine (systemd-detect-virt, DMI and"
                " cpuinfo say nothing): ACS is left on, as isolation needs it in a VM"
            )
        if virt != "none":
            return (
                f"a virtual machine ({virt}): ACS keeps passed-through devices isolated;"
                " the hypervisor's host decides peer-to-peer"
            )
        res = host.run(["lspci", "-vvv"], timeout=30)
        if res.status is RunStatus.MISSING or not res.stdout.strip():
            return f"lspci -vvv did not run here ({res.failure() or 'no output'}): pciutils"
        ports = [p for p in parse_acs(res.stdout) if p.port == DOWNSTREAM]
        if not ports and "<access denied>" in res.stdout:
            return "lspci shows no PCIe capabilities without root: plan as root"
        if not ports:
            return "no PCIe switch downstream port here"
        if all(p.control is None for p in ports):
            return "lspci shows no ACS capability on the downstream ports (it needs root)"
        return [
            Target(
                self.section,
                entry.key,
                f"{p.bdf} ACS control",
                entry.value,
                "",
                entry.origin,
                entry.source,
                {"bdf": p.bdf},
            )
            for p in ports
            if p.control is not None
        ]

    def read(self, host: Host, target: Target) -> Reading:
        bdf = target.extra["bdf"]
        value: int | None = None
        if host.kind in ("live", "netns"):
            res = host.run(["setpci", "-s", bdf, REGISTER])
            value = parse_register(res.stdout) if res.ok else None
        if value is None:  # a host tree, or setpci absent: lspci's flags
            res = host.run(["lspci", "-vvv"], timeout=30)
            found = [p for p in parse_acs(res.stdout) if p.bdf == bdf]
            value = found[0].control if found else None
        if value is None:
            return Reading(None, skip=f"the ACS control of {bdf} could not be read")
        notes = (
            f"set: {describe(value)}",
            "lost at reboot; dolmen-tune-boot.service re-applies the active profile",
        )
        if host.kind not in ("live", "netns") and value != int(target.desired, 16):
            return Reading(f"{value:04x}", skip="a host tree cannot run setpci; apply on the host")
        return Reading(f"{value:04x}", notes=notes)

    def same(self, current: str, desired: str) -> bool:
        return _HEX16.match(current) is not None and int(current, 16) == int(desired, 16)

    def capture(self, host: Host, change: Change) -> dict[str, Any]:
        got = self.read(host, change.target)
        if got.value is None:
            raise ApplyFailed(got.skip or "ACS control unreadable")
        return {"bdf": change.target.extra["bdf"], "control": got.value}

    def apply(self, host: Host, change: Change) -> None:
        _setpci(host, change.target.extra["bdf"], change.target.desired)

    def revert(self, host: Host, change: Change, saved: Mapping[str, Any]) -> None:
        _setpci(host, str(saved["bdf"]), str(saved["control"]))


def _setpci(host: Host, bdf: str, value: str) -> None:
    if not _HEX16.match(value):
        raise ApplyFailed(f"not a 16-bit register value: {value!r}")
    res = host.run(["setpci", "-s", bdf, f"{REGISTER}={value}"])
    if not res.ok:
        raise ApplyFailed(res.describe())

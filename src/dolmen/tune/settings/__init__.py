"""The setting kinds: one module each, one profile section each (DESIGN.md "Changes").

``SETTINGS`` maps a section name to its setting; the order is the order apply
runs them in: kernel values first (PCIe ACS and bridge power, NIC rings and offloads
among them), then the GPU and IRQs (which may depend on them), units, files read at
the next start (limits, daemon.json, the compile caches' login script, module
options), the boot loader, and last the boot persistence files.
"""

from __future__ import annotations

from collections.abc import Mapping

from dolmen.tune.settings.acs import PcieAcs
from dolmen.tune.settings.base import Entry, Setting
from dolmen.tune.settings.boot import BootFiles
from dolmen.tune.settings.bridge_power import BridgePower
from dolmen.tune.settings.caches import Caches
from dolmen.tune.settings.cmdline import Cmdline
from dolmen.tune.settings.cpufreq import CpuFreq
from dolmen.tune.settings.docker import Docker
from dolmen.tune.settings.gpu import GpuPersistence
from dolmen.tune.settings.hugepages import HugePages
from dolmen.tune.settings.irq import Irq
from dolmen.tune.settings.limits import Limits
from dolmen.tune.settings.modules import Modules
from dolmen.tune.settings.nccl_conf import NcclFiles
from dolmen.tune.settings.nftables import Nftables
from dolmen.tune.settings.nic import Nic
from dolmen.tune.settings.packages import Packages
from dolmen.tune.settings.services import Services
from dolmen.tune.settings.sysctl import Sysctl
from dolmen.tune.settings.sysfs import Sysfs

SETTINGS: Mapping[str, Setting] = {
    s.section: s
    for s in (
        Sysctl(),
        Sysfs(),
        BridgePower(),
        CpuFreq(),
        HugePages(),
        PcieAcs(),
        Nic(),
        GpuPersistence(),
        Services(),
        Irq(),
        Limits(),
        Docker(),
        Caches(),
        Modules(),
        Packages(),
        Cmdline(),
        BootFiles(),
        Nftables(),
        NcclFiles(),
    )
}
# Sections a profile may name ([boot] is built by the engine, [nftables] by `dolmen net`,
# [nccl] by `dolmen nccl env --write`).
PROFILE_SECTIONS = tuple(s for s in SETTINGS if s not in ("boot", "nftables", "nccl"))

__all__ = ["PROFILE_SECTIONS", "SETTINGS", "Entry", "Setting"]

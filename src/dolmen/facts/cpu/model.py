"""The CPU model: what cpuinfo says of the package, cpufreq policies, the CPU facts."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import field

from dolmen.frozen import frozen


@frozen
class CpuInfo:
    """What ``proc/cpuinfo`` says, before sysfs fills the gaps."""

    vendor: str | None
    model_name: str | None
    threads: int
    sockets: int | None
    cores: int | None
    flags: frozenset[str]
    hypervisor: bool | None  # None: no x86 "flags" line (arm64 has no such flag)
    implementer: int | None = None  # arm64 MIDR fields
    part: int | None = None


@frozen
class CpuFreqPolicy:
    """One cpufreq policy (the kernel's unit of frequency control) and the CPUs it drives."""

    name: str  # policy0, or cpu0 on trees without policy folders
    cpus: tuple[int, ...]
    driver: str | None = None  # intel_pstate, amd-pstate-epp, acpi-cpufreq, cppc_cpufreq
    governor: str | None = None  # performance, powersave, schedutil, ondemand
    epp: str | None = None  # energy_performance_preference: performance, balance_power...
    min_khz: int | None = None  # scaling_min_freq: the limit in force
    max_khz: int | None = None
    hw_min_khz: int | None = None  # cpuinfo_min_freq: what the hardware can do
    hw_max_khz: int | None = None


@frozen
class CpuFacts:
    """The host's CPUs. None fields are explained in ``unread``."""

    vendor: str | None  # GenuineIntel, AuthenticAMD, ARM, NVIDIA
    model_name: str | None  # "AMD EPYC 9654 96-Core Processor", "Neoverse-V2"
    sockets: int | None
    cores: int | None  # physical cores, all sockets
    threads: int | None  # logical CPUs listed in cpuinfo
    flags: frozenset[str]  # x86 "flags" / arm64 "Features"
    hypervisor: bool | None  # x86 "hypervisor" flag; None where the ISA has no such flag
    online: tuple[int, ...] | None
    isolated: tuple[int, ...] | None
    smt_active: bool | None
    cpufreq: tuple[CpuFreqPolicy, ...] = ()
    implementer: int | None = None
    part: int | None = None
    unread: Mapping[str, str] = field(default_factory=dict)

    @property
    def governors(self) -> frozenset[str]:
        """Every governor in use (a uniform host has one)."""
        return frozenset(p.governor for p in self.cpufreq if p.governor)

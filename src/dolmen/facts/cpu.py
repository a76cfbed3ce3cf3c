"""CPU facts: model, vendor, sockets/cores/threads, flags, online CPUs, cpufreq policies.

Sources: ``proc/cpuinfo``; ``sys/devices/system/cpu/{online,isolated,smt/*}``;
``sys/devices/system/cpu/cpufreq/policy*/`` (or ``cpu*/cpufreq/`` on kernels and
trees without policy folders) for driver, governor, energy_performance_preference
and frequency limits; ``cpu*/topology/`` only where cpuinfo lacks the topology
(arm64 prints no ``physical id`` / ``core id``).

arm64 cpuinfo has no ``model name``: the core is named from ``CPU implementer`` and
``CPU part`` (the MIDR fields) with the table util-linux's lscpu uses
(sys-utils/lscpu-arm.c). NVIDIA Grace is implementer 0x41 (Arm), part 0xd4f
(Neoverse-V2).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

from dolmen.facts.reading import (
    malformed,
    parse_cpulist,
    parse_hex,
    parse_int,
    read_text,
    read_value,
)
from dolmen.host import Host

CPU = "sys/devices/system/cpu"

# MIDR implementer codes -> vendor (lscpu-arm.c hw_implementer).
ARM_IMPLEMENTERS: Mapping[int, str] = {
    0x41: "ARM",
    0x42: "Broadcom",
    0x43: "Cavium",
    0x46: "Fujitsu",
    0x48: "HiSilicon",
    0x4E: "NVIDIA",
    0x50: "APM",
    0x51: "Qualcomm",
    0x61: "Apple",
    0xC0: "Ampere",
}

# (implementer, part) -> core name, for the cores found in servers and dev kits.
ARM_PARTS: Mapping[tuple[int, int], str] = {
    (0x41, 0xD03): "Cortex-A53",
    (0x41, 0xD07): "Cortex-A57",
    (0x41, 0xD08): "Cortex-A72",
    (0x41, 0xD0B): "Cortex-A76",
    (0x41, 0xD0C): "Neoverse-N1",  # Ampere Altra, AWS Graviton2
    (0x41, 0xD40): "Neoverse-V1",  # AWS Graviton3
    (0x41, 0xD41): "Cortex-A78",
    (0x41, 0xD49): "Neoverse-N2",
    (0x41, 0xD4F): "Neoverse-V2",  # NVIDIA Grace, AWS Graviton4
    (0x41, 0xD84): "Neoverse-V3",
    (0x41, 0xD8E): "Neoverse-N3",
    (0x4E, 0x004): "Carmel",  # NVIDIA Jetson AGX Xavier
    (0xC0, 0xAC3): "Ampere-1",
}


@dataclass(frozen=True)
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


@dataclass(frozen=True)
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


@dataclass(frozen=True)
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


def _blocks(text: str) -> list[dict[str, str]]:
    blocks: list[dict[str, str]] = []
    cur: dict[str, str] = {}
    for line in text.splitlines():
        key, sep, value = line.partition(":")
        if not sep:
            if not line.strip() and cur:
                blocks.append(cur)
                cur = {}
            continue
        k = key.strip()
        if k == "processor" and "processor" in cur:  # no blank line between blocks
            blocks.append(cur)
            cur = {}
        cur[k] = value.strip()
    if cur:
        blocks.append(cur)
    return [b for b in blocks if "processor" in b]


def parse_cpuinfo(text: str) -> CpuInfo | None:
    """``proc/cpuinfo`` of x86 or arm64; None when it lists no processor."""
    blocks = _blocks(text)
    if not blocks:
        return None
    first = blocks[0]
    implementer = parse_hex(first.get("CPU implementer"))
    part = parse_hex(first.get("CPU part"))
    vendor = first.get("vendor_id")
    model = first.get("model name")
    if implementer is not None:
        vendor = vendor or ARM_IMPLEMENTERS.get(implementer, f"0x{implementer:02x}")
        if model is None and part is not None:
            model = ARM_PARTS.get((implementer, part))
    sockets = cores = None
    if all("physical id" in b and "core id" in b for b in blocks):
        sockets = len({b["physical id"] for b in blocks})
        cores = len({(b["physical id"], b["core id"]) for b in blocks})
    flags = first.get("flags", first.get("Features", ""))
    x86_flags = first.get("flags")
    return CpuInfo(
        vendor=vendor or None,
        model_name=model or None,
        threads=len(blocks),
        sockets=sockets,
        cores=cores,
        flags=frozenset(flags.split()),
        hypervisor=None if x86_flags is None else "hypervisor" in x86_flags.split(),
        implementer=implementer,
        part=part,
    )


def parse_cpu_numbers(text: str | None) -> tuple[int, ...] | None:
    """cpufreq's ``affected_cpus``: CPU numbers separated by spaces (``0 1 2 3``).

    cpufreq prints this list one number at a time, unlike the ranges of a cpulist
    file; a recorded tree may hold either form, so both parse.
    """
    if text is None:
        return None
    words = text.split()
    if words and all(w.isdigit() for w in words):
        return tuple(sorted({int(w) for w in words}))
    return parse_cpulist(text)


def parse_topology(ids: Mapping[int, tuple[int | None, int | None]]) -> tuple[int, int] | None:
    """Sockets and cores from per-CPU (physical_package_id, core_id); None if any is missing."""
    pairs = list(ids.values())
    if not pairs or any(p is None or c is None for p, c in pairs):
        return None
    return len({p for p, _ in pairs}), len(set(pairs))


def collect(host: Host) -> CpuFacts:
    """Read and parse the CPU facts of ``host``."""
    unread: dict[str, str] = {}
    info = None
    r = read_text(host, "proc/cpuinfo")
    if r.text is None:
        unread["cpuinfo"] = r.reason
    elif (info := parse_cpuinfo(r.text)) is None:
        unread["cpuinfo"] = malformed(r.text)

    online = _cpulist(host, f"{CPU}/online", "online", unread)
    isolated = _cpulist(host, f"{CPU}/isolated", "isolated", unread)
    smt = read_value(host, f"{CPU}/smt/active")
    smt_active = {"1": True, "0": False}.get(smt.text or "")
    if smt_active is None:
        unread["smt_active"] = smt.reason or malformed(smt.text or "")

    sockets = info.sockets if info else None
    cores = info.cores if info else None
    if info is not None and sockets is None:
        topo = parse_topology(_topology_ids(host, online or ()))
        if topo is not None:
            sockets, cores = topo
        else:
            unread["sockets"] = unread["cores"] = "missing (no topology in cpuinfo or sysfs)"
    if info is not None:
        if info.vendor is None:
            unread["vendor"] = "missing (no vendor_id or CPU implementer in cpuinfo)"
        if info.model_name is None:
            unread["model_name"] = _model_reason(info)
    else:
        for name in ("vendor", "model_name", "threads", "sockets", "cores", "flags"):
            unread[name] = unread["cpuinfo"]

    hypervisor = info.hypervisor if info else None
    if info is not None and hypervisor is None:
        unread["hypervisor"] = "not supported (no x86 flags in cpuinfo)"

    return CpuFacts(
        vendor=info.vendor if info else None,
        model_name=info.model_name if info else None,
        sockets=sockets,
        cores=cores,
        threads=info.threads if info else None,
        flags=info.flags if info else frozenset(),
        hypervisor=hypervisor,
        online=online,
        isolated=isolated,
        smt_active=smt_active,
        cpufreq=_cpufreq(host, unread),
        implementer=info.implementer if info else None,
        part=info.part if info else None,
        unread=unread,
    )


def _model_reason(info: CpuInfo) -> str:
    if info.implementer is not None:
        part = f"0x{info.part:03x}" if info.part is not None else "?"
        return (
            "not supported (arm64 cpuinfo names no model; "
            f"implementer 0x{info.implementer:02x} part {part} is not in the table)"
        )
    return "missing (no model name in cpuinfo)"


def _cpulist(host: Host, rel: str, name: str, unread: dict[str, str]) -> tuple[int, ...] | None:
    r = read_value(host, rel)
    if r.text is None:
        unread[name] = r.reason
        return None
    cpus = parse_cpulist(r.text)
    if cpus is None:
        unread[name] = malformed(r.text)
    return cpus


def _topology_ids(host: Host, online: tuple[int, ...]) -> dict[int, tuple[int | None, int | None]]:
    cpus = online or tuple(
        n
        for n in (parse_int(d[3:]) for d in host.listdir(CPU) if d.startswith("cpu"))
        if n is not None
    )
    out: dict[int, tuple[int | None, int | None]] = {}
    for n in cpus:
        base = f"{CPU}/cpu{n}/topology"
        pkg = parse_int(read_value(host, f"{base}/physical_package_id").text)
        core = parse_int(read_value(host, f"{base}/core_id").text)
        out[n] = (pkg, core)
    return out


def _cpufreq(host: Host, unread: dict[str, str]) -> tuple[CpuFreqPolicy, ...]:
    policies: list[CpuFreqPolicy] = []
    reasons: dict[str, dict[str, str]] = {}

    def text(d: str, name: str, attr: str, fname: str) -> str | None:
        r = read_value(host, f"{d}/{fname}")
        if not r.text:
            why = r.reason or "malformed: empty"
            if attr == "epp" and r.reason == "missing":
                why = "not supported (this cpufreq driver has no energy_performance_preference)"
            reasons.setdefault(attr, {})[name] = why
        return r.text or None

    def khz(d: str, name: str, attr: str, fname: str) -> int | None:
        r = read_value(host, f"{d}/{fname}")
        value = parse_int(r.text)
        if value is None:
            reasons.setdefault(attr, {})[name] = r.reason or malformed(r.text or "")
        return value

    def policy(d: str, name: str, cpus: tuple[int, ...]) -> None:
        policies.append(
            CpuFreqPolicy(
                name=name,
                cpus=cpus,
                driver=text(d, name, "driver", "scaling_driver"),
                governor=text(d, name, "governor", "scaling_governor"),
                epp=text(d, name, "epp", "energy_performance_preference"),
                min_khz=khz(d, name, "min_khz", "scaling_min_freq"),
                max_khz=khz(d, name, "max_khz", "scaling_max_freq"),
                hw_min_khz=khz(d, name, "hw_min_khz", "cpuinfo_min_freq"),
                hw_max_khz=khz(d, name, "hw_max_khz", "cpuinfo_max_freq"),
            )
        )

    covered: set[int] = set()
    for p in host.listdir(f"{CPU}/cpufreq"):
        if p.startswith("policy"):
            d = f"{CPU}/cpufreq/{p}"
            cpus = parse_cpu_numbers(read_value(host, f"{d}/affected_cpus").text) or ()
            covered.update(cpus)
            policy(d, p, cpus)
    # Before Linux 4.3 (and in some recorded trees) a CPU's cpufreq is its own folder.
    for name in host.listdir(CPU):
        n = parse_int(name[3:]) if name.startswith("cpu") else None
        own = f"{CPU}/{name}/cpufreq"
        if n is not None and n not in covered and host.readlink(own) is None and host.is_dir(own):
            policy(own, name, (n,))
    if not policies:
        unread["cpufreq"] = "not supported (no cpufreq driver: no policy folders)"
        return ()
    policies.sort(key=lambda p: p.cpus[:1] or (-1,))
    for attr, per in reasons.items():
        if len(per) == len(policies) and len(set(per.values())) == 1:
            unread[f"cpufreq.{attr}"] = next(iter(per.values()))  # one reason for all
        else:
            unread.update({f"cpufreq.{pol}.{attr}": why for pol, why in per.items()})
    return tuple(policies)

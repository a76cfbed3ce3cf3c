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

The dataclasses are in ``model``, the pure parsers in ``parse``; ``collect`` reads.
"""

from __future__ import annotations

from dolmen.facts.cpu.model import CpuFacts, CpuFreqPolicy, CpuInfo
from dolmen.facts.cpu.parse import (
    ARM_IMPLEMENTERS,
    ARM_PARTS,
    parse_cpu_numbers,
    parse_cpuinfo,
    parse_topology,
)
from dolmen.facts.reading import (
    absent,
    malformed,
    parse_cpulist,
    parse_int,
    parsed,
    read_text,
    read_value,
)
from dolmen.host import Host

__all__ = [
    "ARM_IMPLEMENTERS",
    "ARM_PARTS",
    "CPU",
    "CpuFacts",
    "CpuFreqPolicy",
    "CpuInfo",
    "collect",
    "parse_cpu_numbers",
    "parse_cpuinfo",
    "parse_topology",
]

CPU = "sys/devices/system/cpu"


def collect(host: Host) -> CpuFacts:
    """Read and parse the CPU facts of ``host``."""
    unread: dict[str, str] = {}
    info = parsed(read_text(host, "proc/cpuinfo"), parse_cpuinfo, unread, "cpuinfo")
    online = parsed(read_value(host, f"{CPU}/online"), parse_cpulist, unread, "online")
    isolated = parsed(read_value(host, f"{CPU}/isolated"), parse_cpulist, unread, "isolated")
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
    if not policies and not host.is_dir(CPU):  # sysfs's CPU folder was not recorded
        unread["cpufreq"] = absent(host, CPU)
        return ()
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

"""OS facts: distribution, kernel, architecture, virtualization, boot, command line, DMI.

Sources: ``etc/os-release``, ``proc/sys/kernel/{osrelease,version,hostname,arch}``,
``proc/uptime``, ``proc/stat`` (btime), ``proc/cmdline``, ``sys/class/dmi/id/*``,
``proc/cpuinfo`` (the x86 ``hypervisor`` flag) and, when present,
``systemd-detect-virt --vm`` / ``--container`` (tree keys
``systemd-detect-virt%20--vm`` and ``systemd-detect-virt%20--container``).
``uname -m`` runs only where ``proc/sys/kernel/arch`` is absent (kernels before 6.1).
Serial numbers and UUIDs from DMI are deliberately not read.

The dataclasses are in ``model``, the pure parsers in ``parse``; ``collect`` reads.
"""

from __future__ import annotations

from dolmen.facts.os.model import Distribution, Dmi, OsFacts
from dolmen.facts.os.parse import (
    cpuinfo_has_hypervisor,
    kernel_params,
    parse_btime,
    parse_cmdline,
    parse_detect_virt,
    parse_os_release,
    parse_uptime,
    virt_from_dmi,
)
from dolmen.facts.reading import absent, parsed, read_text, read_value, unrecorded
from dolmen.host import Host, RunStatus

__all__ = [
    "DMI_FIELDS",
    "Distribution",
    "Dmi",
    "OsFacts",
    "collect",
    "cpuinfo_has_hypervisor",
    "kernel_params",
    "parse_btime",
    "parse_cmdline",
    "parse_detect_virt",
    "parse_os_release",
    "parse_uptime",
    "virt_from_dmi",
]

DMI_FIELDS = (
    "sys_vendor",
    "product_name",
    "product_version",
    "product_family",
    "board_vendor",
    "board_name",
    "bios_vendor",
    "bios_version",
    "bios_date",
    "chassis_type",
)

# Files whose presence marks a container runtime (systemd's detect_container does the same).
_CONTAINER_MARKERS = ((".dockerenv", "docker"), ("run/.containerenv", "podman"))


def collect(host: Host) -> OsFacts:
    """Read and parse the OS facts of ``host``."""
    unread: dict[str, str] = {}

    r = read_text(host, "etc/os-release")
    if r.text is None:
        r = read_text(host, "usr/lib/os-release")  # os-release(5): the fallback location
    distribution = parsed(r, parse_os_release, unread, "distribution")

    release = _value(host, "proc/sys/kernel/osrelease", "kernel_release", unread)
    version = _value(host, "proc/sys/kernel/version", "kernel_version", unread)
    hostname = _hostname(host, unread)
    arch = _architecture(host, unread)

    uptime = parsed(read_text(host, "proc/uptime"), parse_uptime, unread, "uptime_s")

    boot = None
    r = read_text(host, "proc/stat")
    if r.text is None:
        unread["boot_time"] = r.reason
    elif (boot := parse_btime(r.text)) is None:
        unread["boot_time"] = "malformed: no btime line in proc/stat"

    cmdline = None
    r = read_text(host, "proc/cmdline")
    if r.text is None:
        unread["cmdline"] = r.reason
    else:
        cmdline = parse_cmdline(r.text)

    dmi = _dmi(host, unread)
    flag = None
    r = read_text(host, "proc/cpuinfo")
    if r.text is not None:
        flag = cpuinfo_has_hypervisor(r.text)
    if flag is None:
        unread["hypervisor_flag"] = r.reason or "not supported (no x86 flags line in cpuinfo)"
    virt, source = _virtualization(host, dmi, flag, unread)
    container = _container(host, unread)

    return OsFacts(
        distribution=distribution,
        kernel_release=release,
        kernel_version=version,
        architecture=arch,
        hostname=hostname,
        virtualization=virt,
        virtualization_source=source,
        container=container,
        hypervisor_flag=flag,
        uptime_s=uptime,
        boot_time=boot,
        cmdline=cmdline,
        kernel_params=kernel_params(cmdline or ()),
        dmi=dmi,
        unread=unread,
    )


def _value(host: Host, rel: str, name: str, unread: dict[str, str]) -> str | None:
    r = read_value(host, rel)
    if r.text is None:
        unread[name] = r.reason
    elif not r.text:
        unread[name] = f"malformed: {rel} is empty"
        return None
    return r.text


def _hostname(host: Host, unread: dict[str, str]) -> str | None:
    for rel in ("proc/sys/kernel/hostname", "etc/hostname"):
        r = read_value(host, rel)
        if r.text:
            return r.text.splitlines()[0]
    unread["hostname"] = absent(host, "etc/hostname")
    return None


def _architecture(host: Host, unread: dict[str, str]) -> str | None:
    r = read_value(host, "proc/sys/kernel/arch")  # since Linux 6.1; saves a process
    if r.text:
        return r.text
    res = host.run(["uname", "-m"], timeout=5)
    if res.ok and res.stdout.strip():
        return res.stdout.strip()
    unread["architecture"] = res.failure()
    return None


def _dmi(host: Host, unread: dict[str, str]) -> Dmi | None:
    if not host.is_dir("sys/class/dmi/id") and unrecorded(host.absent("sys/class/dmi/id")):
        unread["dmi"] = absent(host, "sys/class/dmi/id")
        return None
    if not host.is_dir("sys/class/dmi/id"):
        unread["dmi"] = "not supported (no SMBIOS tables: sys/class/dmi/id is absent)"
        return None
    values: dict[str, str | None] = {}
    for name in DMI_FIELDS:
        r = read_value(host, f"sys/class/dmi/id/{name}")
        values[name] = r.text
        if r.text is None:
            unread[f"dmi.{name}"] = r.reason
    return Dmi(**values)


def _virtualization(
    host: Host, dmi: Dmi | None, flag: bool | None, unread: dict[str, str]
) -> tuple[str | None, str | None]:
    res = host.run(["systemd-detect-virt", "--vm"], timeout=5)
    # It prints "none" and exits 1 on bare metal; any other failure means it could not tell.
    if res.status in (RunStatus.OK, RunStatus.FAILED) and res.rc in (0, 1):
        word = parse_detect_virt(res.stdout)
        if word is not None:
            return word, "systemd-detect-virt"
    named = virt_from_dmi(dmi) if dmi is not None else None
    if named is not None:
        return named, "dmi"
    if flag:
        return "vm", "cpuinfo"  # a hypervisor is there, but nothing names it
    if flag is False and dmi is not None:
        return "none", "dmi+cpuinfo"
    unread["virtualization"] = "unknown: no systemd-detect-virt, no naming DMI, no x86 flags"
    return None, None


def _container(host: Host, unread: dict[str, str]) -> str | None:
    res = host.run(["systemd-detect-virt", "--container"], timeout=5)
    if res.status in (RunStatus.OK, RunStatus.FAILED) and res.rc in (0, 1):
        word = parse_detect_virt(res.stdout)
        if word is not None:
            return word
    for rel, name in _CONTAINER_MARKERS:
        if host.exists(rel):
            return name
    r = read_value(host, "run/systemd/container")  # written by container managers for systemd
    if r.text:
        return r.text
    unread["container"] = "unknown: no systemd-detect-virt and no container marker file"
    return None

"""OS facts: distribution, kernel, architecture, virtualization, boot, command line, DMI.

Sources: ``etc/os-release``, ``proc/sys/kernel/{osrelease,version,hostname,arch}``,
``proc/uptime``, ``proc/stat`` (btime), ``proc/cmdline``, ``sys/class/dmi/id/*``,
``proc/cpuinfo`` (the x86 ``hypervisor`` flag) and, when present,
``systemd-detect-virt --vm`` / ``--container`` (tree keys
``systemd-detect-virt%20--vm`` and ``systemd-detect-virt%20--container``).
``uname -m`` runs only where ``proc/sys/kernel/arch`` is absent (kernels before 6.1).
Serial numbers and UUIDs from DMI are deliberately not read.
"""

from __future__ import annotations

import shlex
from collections.abc import Mapping
from dataclasses import dataclass, field

from dolmen.facts.reading import malformed, read_text, read_value
from dolmen.host import Host, RunStatus

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

# DMI strings that name a hypervisor, as systemd-detect-virt's dmi_vendor_table
# (src/basic/virt.c) matches them: a prefix of product_name, sys_vendor,
# board_vendor, bios_vendor or product_version, mapped to systemd's names.
_DMI_VENDORS = (
    ("KVM", "kvm"),
    ("OpenStack", "kvm"),
    ("KubeVirt", "kvm"),
    ("Amazon EC2", "amazon"),
    ("QEMU", "qemu"),
    ("VMware", "vmware"),
    ("VMW", "vmware"),
    ("innotek GmbH", "oracle"),
    ("VirtualBox", "oracle"),
    ("Oracle Corporation", "oracle"),
    ("Xen", "xen"),
    ("Bochs", "bochs"),
    ("Parallels", "parallels"),
    ("BHYVE", "bhyve"),
    ("Hyper-V", "microsoft"),
    ("Google Compute Engine", "google"),
)

# Files whose presence marks a container runtime (systemd's detect_container does the same).
_CONTAINER_MARKERS = ((".dockerenv", "docker"), ("run/.containerenv", "podman"))


@dataclass(frozen=True)
class Distribution:
    """``etc/os-release``: ID, VERSION_ID, NAME, PRETTY_NAME, VERSION_CODENAME, ID_LIKE."""

    id: str | None
    version_id: str | None
    name: str | None
    pretty_name: str | None
    codename: str | None
    id_like: tuple[str, ...] = ()


@dataclass(frozen=True)
class Dmi:
    """SMBIOS identity from ``sys/class/dmi/id`` (no serials, no UUID)."""

    sys_vendor: str | None = None
    product_name: str | None = None
    product_version: str | None = None
    product_family: str | None = None
    board_vendor: str | None = None
    board_name: str | None = None
    bios_vendor: str | None = None
    bios_version: str | None = None
    bios_date: str | None = None
    chassis_type: str | None = None


@dataclass(frozen=True)
class OsFacts:
    """What the operating system is and how it booted. None fields are explained in ``unread``."""

    distribution: Distribution | None
    kernel_release: str | None  # 6.1.0-18-amd64
    kernel_version: str | None  # #1 SMP PREEMPT_DYNAMIC Debian 6.1.76-1 (2024-02-01)
    architecture: str | None  # x86_64, aarch64
    hostname: str | None
    virtualization: str | None  # systemd-detect-virt --vm names: none, kvm, amazon, ...; "vm"
    virtualization_source: str | None  # systemd-detect-virt, dmi, cpuinfo
    container: str | None  # none, docker, podman, lxc, ...
    hypervisor_flag: bool | None  # x86 cpuinfo "hypervisor" flag; None on arm64
    uptime_s: float | None
    boot_time: int | None  # seconds since the epoch (proc/stat btime)
    cmdline: tuple[str, ...] | None  # kernel command line tokens, quotes removed
    kernel_params: Mapping[str, str | None] = field(default_factory=dict)  # before "--"
    dmi: Dmi | None = None
    unread: Mapping[str, str] = field(default_factory=dict)


def parse_os_release(text: str) -> Distribution | None:
    """``etc/os-release`` (shell-style KEY=value lines); None when no key is found."""
    values: dict[str, str] = {}
    for line in text.splitlines():
        line = line.strip()
        if not line or line.startswith("#") or "=" not in line:
            continue
        key, _, raw = line.partition("=")
        try:
            words = shlex.split(raw, comments=False, posix=True)
        except ValueError:  # an unbalanced quote: keep what is there
            words = [raw.strip("\"'")]
        values[key.strip()] = " ".join(words)
    if not values:
        return None
    return Distribution(
        id=values.get("ID"),
        version_id=values.get("VERSION_ID"),
        name=values.get("NAME"),
        pretty_name=values.get("PRETTY_NAME"),
        codename=values.get("VERSION_CODENAME"),
        id_like=tuple(values.get("ID_LIKE", "").split()),
    )


def parse_cmdline(text: str) -> tuple[str, ...]:
    """Split ``proc/cmdline`` as the kernel does: spaces outside double quotes separate.

    The kernel drops the quotes around a value (``dyndbg="file x +p"``), so do we.
    """
    tokens: list[str] = []
    cur: list[str] = []
    quoted = False
    started = False
    for ch in text.strip().replace("\x00", " "):
        if ch == '"':
            quoted = not quoted
            started = True
        elif ch.isspace() and not quoted:
            if started:
                tokens.append("".join(cur))
            cur, started = [], False
        else:
            cur.append(ch)
            started = True
    if started:
        tokens.append("".join(cur))
    return tuple(tokens)


def kernel_params(tokens: tuple[str, ...]) -> dict[str, str | None]:
    """``key=value`` tokens before ``--`` (the rest goes to init); flags map to None.

    A parameter given twice keeps its last value, as most kernel parameters do.
    """
    params: dict[str, str | None] = {}
    for tok in tokens:
        if tok == "--":
            break
        key, eq, value = tok.partition("=")
        params[key] = value if eq else None
    return params


def parse_uptime(text: str) -> float | None:
    """Seconds since boot, the first number of ``proc/uptime``."""
    first = text.split()[:1]
    try:
        return float(first[0]) if first else None
    except ValueError:
        return None


def parse_btime(stat_text: str) -> int | None:
    """Boot time (epoch seconds) from the ``btime`` line of ``proc/stat``."""
    for line in stat_text.splitlines():
        if line.startswith("btime "):
            parts = line.split()
            return int(parts[1]) if len(parts) == 2 and parts[1].isdigit() else None
    return None


def cpuinfo_has_hypervisor(cpuinfo: str) -> bool | None:
    """Whether the first CPU's x86 ``flags`` include ``hypervisor``; None without a flags line."""
    for line in cpuinfo.splitlines():
        key, sep, value = line.partition(":")
        if sep and key.strip() == "flags":
            return "hypervisor" in value.split()
    return None


def virt_from_dmi(dmi: Dmi) -> str | None:
    """The hypervisor DMI names, in systemd's vocabulary; None when DMI names none."""
    for value in (
        dmi.product_name,
        dmi.sys_vendor,
        dmi.board_vendor,
        dmi.bios_vendor,
        dmi.product_version,
    ):
        for prefix, name in _DMI_VENDORS:
            if value and value.startswith(prefix):
                # EC2 bare-metal instances keep the "Amazon EC2" vendor (systemd does the same).
                if name == "amazon" and (dmi.product_name or "").endswith(".metal"):
                    return "none"
                return name
    if dmi.sys_vendor == "Microsoft Corporation" and dmi.product_name == "Virtual Machine":
        return "microsoft"  # Hyper-V / Azure
    return None


def parse_detect_virt(stdout: str) -> str | None:
    """The one word ``systemd-detect-virt`` prints (``none`` when it exits 1)."""
    words = stdout.split()
    return words[0] if len(words) == 1 else None


def collect(host: Host) -> OsFacts:
    """Read and parse the OS facts of ``host``."""
    unread: dict[str, str] = {}

    distribution = None
    r = read_text(host, "etc/os-release")
    if r.text is None:
        r = read_text(host, "usr/lib/os-release")  # os-release(5): the fallback location
    if r.text is None:
        unread["distribution"] = r.reason
    else:
        distribution = parse_os_release(r.text)
        if distribution is None:
            unread["distribution"] = malformed(r.text)

    release = _value(host, "proc/sys/kernel/osrelease", "kernel_release", unread)
    version = _value(host, "proc/sys/kernel/version", "kernel_version", unread)
    hostname = _hostname(host, unread)
    arch = _architecture(host, unread)

    uptime = None
    r = read_text(host, "proc/uptime")
    if r.text is None:
        unread["uptime_s"] = r.reason
    elif (uptime := parse_uptime(r.text)) is None:
        unread["uptime_s"] = malformed(r.text)

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
    unread["hostname"] = "missing"
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

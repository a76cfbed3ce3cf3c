"""Pure parsers of the OS sources: os-release, the kernel command line, uptime, btime,
the hypervisor flag, DMI vendors and ``systemd-detect-virt``."""

from __future__ import annotations

import shlex

from dolmen.facts.os.model import Distribution, Dmi

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

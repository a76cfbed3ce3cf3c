"""The OS model: distribution, DMI identity and the OS facts."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import field

from dolmen.frozen import frozen


@frozen
class Distribution:
    """``etc/os-release``: ID, VERSION_ID, NAME, PRETTY_NAME, VERSION_CODENAME, ID_LIKE."""

    id: str | None
    version_id: str | None
    name: str | None
    pretty_name: str | None
    codename: str | None
    id_like: tuple[str, ...] = ()


@frozen
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


@frozen
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

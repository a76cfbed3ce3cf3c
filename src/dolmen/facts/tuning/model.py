"""The tuning model: huge-page pools, limits.conf entries and the tuning facts."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import field

from dolmen.frozen import frozen


@frozen
class HugePagePool:
    """One huge-page size: pages reserved and free."""

    total: int | None
    free: int | None


@frozen
class LimitEntry:
    """One memlock/stack/nofile line of limits.conf or limits.d."""

    file: str
    domain: str
    type: str  # soft | hard | -
    item: str
    value: str


@frozen
class TuningFacts:
    """Performance-relevant settings as the host has them; None fields' reasons in ``unread``."""

    cpu_governors: Mapping[str, int] | None  # governor -> number of policies (or CPUs)
    cpu_epp: Mapping[str, int] | None  # energy_performance_preference -> count
    cpufreq_drivers: tuple[str, ...] | None
    thp_enabled: str | None
    thp_defrag: str | None
    sysctls: Mapping[str, str]  # the SYSCTLS that exist, whitespace normalised
    numa_balancing: int | None
    swappiness: int | None
    max_map_count: int | None
    hugepages_default: int | None  # vm.nr_hugepages (pages of the default size)
    hugepages: Mapping[int, HugePagePool]  # page size in kB -> pool
    irqbalance_running: bool | None
    irqbalance_service: str | None  # systemctl is-active: active | inactive | failed ...
    persistenced_running: bool | None
    persistenced_service: str | None
    limits: tuple[LimitEntry, ...]
    process_limits: Mapping[str, tuple[str, str]] | None  # item -> (soft, hard) of dolmen itself
    cmdline: Mapping[str, tuple[str, ...]] | None  # CMDLINE_KEYS present -> values
    unread: Mapping[str, str] = field(default_factory=dict)

"""Tuning facts: what the performance profiles of TuneD, NVIDIA (DGX OS, nvidia-tuned) and
mlnx_tune set, read back from the host (../shared/notes/tuning-sources.md).

Sources: cpufreq ``scaling_governor`` / ``energy_performance_preference`` /
``scaling_driver`` per policy (per CPU on kernels without policies), transparent
huge pages, ``proc/sys`` for the sysctls of those profiles, huge-page pools in
``sys/kernel/mm/hugepages``, irqbalance and nvidia-persistenced (their processes in
``proc/<pid>/comm`` and ``systemctl is-active <unit>``), memlock/stack/nofile in
``etc/security/limits.conf`` and ``limits.d/*.conf`` and ``proc/self/limits``, and
the tuning tokens of ``proc/cmdline``.

The dataclasses are in ``model``, the pure parsers in ``parse``; ``collect`` reads.
"""

from __future__ import annotations

from collections import Counter

from dolmen.facts.reading import absent, malformed, parse_int, read_value
from dolmen.facts.tuning.model import HugePagePool, LimitEntry, TuningFacts
from dolmen.facts.tuning.parse import (
    CMDLINE_KEYS,
    LIMIT_ITEMS,
    parse_cmdline_tuning,
    parse_limits_conf,
    parse_proc_limits,
    parse_selected,
)
from dolmen.host import NOT_IN_BUNDLE, Host, RunStatus

__all__ = [
    "CMDLINE_KEYS",
    "LIMIT_ITEMS",
    "SYSCTLS",
    "HugePagePool",
    "LimitEntry",
    "TuningFacts",
    "collect",
    "parse_cmdline_tuning",
    "parse_limits_conf",
    "parse_proc_limits",
    "parse_selected",
]

# The sysctls the anchor profiles set (tuning-sources.md sections 1.1 and 2).
SYSCTLS = (
    "kernel.numa_balancing",
    "kernel.threads-max",
    "vm.swappiness",
    "vm.max_map_count",
    "vm.dirty_ratio",
    "vm.dirty_background_ratio",
    "vm.dirty_bytes",
    "vm.dirty_background_bytes",
    "vm.min_free_kbytes",
    "vm.zone_reclaim_mode",
    "vm.overcommit_memory",
    "fs.inotify.max_user_instances",
    "fs.inotify.max_user_watches",
    "net.core.rmem_max",
    "net.core.wmem_max",
    "net.core.rmem_default",
    "net.core.wmem_default",
    "net.core.netdev_max_backlog",
    "net.core.somaxconn",
    "net.core.default_qdisc",
    "net.core.busy_read",
    "net.core.busy_poll",
    "net.ipv4.tcp_rmem",
    "net.ipv4.tcp_wmem",
    "net.ipv4.tcp_max_syn_backlog",
    "net.ipv4.tcp_congestion_control",
    "net.ipv4.tcp_notsent_lowat",
    "net.ipv4.tcp_slow_start_after_idle",
    "net.ipv4.tcp_fastopen",
    "net.ipv4.conf.all.arp_announce",
    "net.ipv4.conf.all.arp_ignore",
    "net.ipv4.conf.default.arp_announce",
    "net.ipv4.conf.default.arp_ignore",
)

# /proc/<pid>/comm holds at most 15 characters: "nvidia-persistenced" reads "nvidia-persiste".
_COMM_LEN = 15


def collect(host: Host) -> TuningFacts:
    """Read the tuning-relevant settings of ``host``."""
    unread: dict[str, str] = {}
    governors = _cpufreq(host, "scaling_governor", "cpu_governors", unread)
    epp = _cpufreq(host, "energy_performance_preference", "cpu_epp", unread)
    drivers_count = _cpufreq(host, "scaling_driver", "cpufreq_drivers", unread)
    thp: dict[str, str | None] = {}
    for name in ("enabled", "defrag"):
        key = f"thp_{name}"
        r = read_value(host, f"sys/kernel/mm/transparent_hugepage/{name}")
        thp[key] = None if r.text is None else parse_selected(r.text)
        if r.text is None:
            unread[key] = f"{r.reason}: sys/kernel/mm/transparent_hugepage/{name}"
        elif thp[key] is None:
            unread[key] = malformed(r.text)
    sysctls: dict[str, str] = {}
    for name in SYSCTLS:
        r = read_value(host, "proc/sys/" + name.replace(".", "/"))
        if r.text is None:
            unread[f"sysctl.{name}"] = r.reason
        else:
            sysctls[name] = " ".join(r.text.split())
    typed: dict[str, int | None] = {}
    for key, name in (
        ("numa_balancing", "kernel.numa_balancing"),
        ("swappiness", "vm.swappiness"),
        ("max_map_count", "vm.max_map_count"),
    ):
        typed[key] = parse_int(sysctls.get(name))
        if typed[key] is None:
            unread[key] = unread.get(f"sysctl.{name}") or malformed(sysctls.get(name, ""))
    hp_default = parse_int(host.read_value("proc/sys/vm/nr_hugepages"))
    if hp_default is None:
        unread["hugepages_default"] = absent(host, "proc/sys/vm/nr_hugepages")
    pools = {}
    for folder in host.glob("sys/kernel/mm/hugepages/hugepages-*kB"):
        size = parse_int(folder.rsplit("-", 1)[1].removesuffix("kB"))
        if size is not None:
            pools[size] = HugePagePool(
                parse_int(host.read_value(f"{folder}/nr_hugepages")),
                parse_int(host.read_value(f"{folder}/free_hugepages")),
            )
    if not pools and not host.is_dir("sys/kernel/mm/hugepages"):
        why = absent(host, "sys/kernel/mm/hugepages")
        if why.startswith(NOT_IN_BUNDLE):  # "no pool" would be a guess
            unread["hugepages"] = why
    comms = _process_names(host)
    irq_run, irq_svc = _daemon(host, "irqbalance", comms, "irqbalance", unread)
    pers_run, pers_svc = _daemon(host, "nvidia-persistenced", comms, "persistenced", unread)
    limits: list[LimitEntry] = []
    for path in ["etc/security/limits.conf", *host.glob("etc/security/limits.d/*.conf")]:
        text = host.read_opt(path)
        if text is not None:
            limits.extend(parse_limits_conf(path, text))
    proc_limits = None
    r = read_value(host, "proc/self/limits")
    if r.text is None:
        unread["process_limits"] = f"{r.reason}: proc/self/limits"
    elif not (proc_limits := parse_proc_limits(r.text)):
        proc_limits = None
        unread["process_limits"] = malformed(r.text)
    cmdline = None
    r = read_value(host, "proc/cmdline")
    if r.text is None:
        unread["cmdline"] = f"{r.reason}: proc/cmdline"
    else:
        cmdline = parse_cmdline_tuning(r.text)
    return TuningFacts(
        cpu_governors=governors,
        cpu_epp=epp,
        cpufreq_drivers=None if drivers_count is None else tuple(sorted(drivers_count)),
        thp_enabled=thp.get("thp_enabled"),
        thp_defrag=thp.get("thp_defrag"),
        sysctls=sysctls,
        numa_balancing=typed["numa_balancing"],
        swappiness=typed["swappiness"],
        max_map_count=typed["max_map_count"],
        hugepages_default=hp_default,
        hugepages=dict(sorted(pools.items())),
        irqbalance_running=irq_run,
        irqbalance_service=irq_svc,
        persistenced_running=pers_run,
        persistenced_service=pers_svc,
        limits=tuple(limits),
        process_limits=proc_limits,
        cmdline=cmdline,
        unread=unread,
    )


def _cpufreq(host: Host, name: str, key: str, unread: dict[str, str]) -> dict[str, int] | None:
    """Distinct values of a cpufreq attribute with their counts, per policy (else per CPU)."""
    paths = host.glob(f"sys/devices/system/cpu/cpufreq/policy[0-9]*/{name}")
    if not paths:  # kernels before policies, or trees that recorded per-CPU folders only
        paths = host.glob(f"sys/devices/system/cpu/cpu[0-9]*/cpufreq/{name}")
    if not paths and not host.is_dir("sys/devices/system/cpu"):  # sysfs's CPUs not recorded
        unread[key] = absent(host, "sys/devices/system/cpu")
        return None
    if not paths:
        if not host.glob("sys/devices/system/cpu/cpu[0-9]*/cpufreq"):
            unread[key] = "not supported: no cpufreq (virtual machine or no cpufreq driver)"
        else:
            unread[key] = f"not supported: cpufreq driver without {name}"
        return None
    values = Counter(v for p in paths if (v := host.read_value(p)))
    if not values:
        unread[key] = f"unreadable: {paths[0]}"
        return None
    return dict(sorted(values.items()))


def _process_names(host: Host) -> list[str] | None:
    """The comm of every process, or None when the host's processes are not visible."""
    pids = [p for p in host.listdir("proc") if p.isdigit()]
    if not pids:
        return None
    return [c for p in pids if (c := host.read_value(f"proc/{p}/comm"))]


def _daemon(
    host: Host, unit: str, comms: list[str] | None, key: str, unread: dict[str, str]
) -> tuple[bool | None, str | None]:
    res = host.run(["systemctl", "is-active", unit])
    # is-active prints the state and exits 0 only when active (3 when inactive).
    state = res.stdout.strip().splitlines()[0] if res.stdout.strip() else ""
    service = state if res.status in (RunStatus.OK, RunStatus.FAILED) and state else None
    if service is None:
        unread[f"{key}_service"] = res.failure()
    if comms is not None:
        return unit[:_COMM_LEN] in comms, service
    if service is not None:
        return service == "active", service
    unread[f"{key}_running"] = f"unknown: no process list and {res.failure()}"
    return None, service

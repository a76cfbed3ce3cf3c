"""Tuning facts: cpufreq governors (real sysfs of prometheus/procfs and node_exporter
fixtures), THP selectors, the profiles' sysctls (real procfs fixture values), huge-page
pools, irqbalance and nvidia-persistenced, limits, command-line tokens; tree hosts,
malformed inputs and a live smoke test.

Synthetic inputs, where the recordings hold none: limits.conf / limits.d lines,
/proc/<pid>/limits tables, THP and huge-page sysfs files, systemctl is-active outputs,
proc/<pid>/comm, and the tuned command lines (built from tuning-sources.md's profiles).
"""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from dolmen.facts import to_jsonable, tuning
from dolmen.facts.tuning import (
    parse_cmdline_tuning,
    parse_limits_conf,
    parse_proc_limits,
    parse_selected,
)
from dolmen.host.live import LiveHost
from dolmen.host.tree import TreeHost
from tests.conftest import make_tree, recording

PROCFS = "procfs/procfs__fixtures_extracted/fixtures"
NODE_SYS = "sysfs/node_exporter__sys_extracted"

PROC_LIMITS = """Limit                     Soft Limit           Hard Limit           Units
Max cpu time              unlimited            unlimited            seconds
Max stack size            8388608              unlimited            bytes
Max open files            1024                 1048576              files
Max locked memory         8388608              8388608              bytes
"""
LIMITS_CONF = """# /etc/security/limits.conf
#<domain>      <type>  <item>         <value>
*               soft    core            0
@gpu            -       memlock         unlimited  # GPUDirect RDMA pins memory
*               hard    stack           67108864
"""
NV_LIMITS = "* soft nofile 500000\n* hard nofile 500000\n"
GB200_CMDLINE = (
    "BOOT_IMAGE=/boot/vmlinuz-6.8.0 root=UUID=x ro iommu.passthrough=1 init_on_alloc=0 "
    "numa_balancing=disable earlycon hugepagesz=2M hugepages=5128 hugepagesz=1G hugepages=2 "
    "pci=realloc=on mitigations=off -- init-arg iommu=pt"
)


@pytest.mark.parametrize(
    ("text", "value"),
    [
        ("always [madvise] never\n", "madvise"),
        ("[always] madvise never", "always"),
        ("always defer defer+madvise [madvise] never", "madvise"),
        ("always defer [defer+madvise] madvise never", "defer+madvise"),
        ("always madvise never", None),
        ("[always] [never]", None),
        ("", None),
        ("\x00[\xff]", None),
    ],
)
def test_parse_selected(text: str, value: str | None) -> None:
    assert parse_selected(text) == value


def test_limits_conf() -> None:
    entries = parse_limits_conf("etc/security/limits.conf", LIMITS_CONF + "garbage\n\x00\n")
    assert [(e.domain, e.type, e.item, e.value) for e in entries] == [
        ("@gpu", "-", "memlock", "unlimited"),
        ("*", "hard", "stack", "67108864"),
    ]


def test_proc_limits() -> None:
    assert parse_proc_limits(PROC_LIMITS) == {
        "stack": ("8388608", "unlimited"),
        "nofile": ("1024", "1048576"),
        "memlock": ("8388608", "8388608"),
    }
    assert parse_proc_limits("") == {}
    assert parse_proc_limits(PROC_LIMITS[:60]) == {}


def test_cmdline_tuning() -> None:
    tokens = parse_cmdline_tuning(GB200_CMDLINE)
    assert tokens == {
        "iommu.passthrough": ("1",),
        "init_on_alloc": ("0",),
        "numa_balancing": ("disable",),
        "hugepagesz": ("2M", "1G"),
        "hugepages": ("5128", "2"),
        "pci": ("realloc=on",),
        "mitigations": ("off",),
    }  # "iommu=pt" after "--" goes to init, not the kernel
    real = recording(f"{PROCFS}/proc/cmdline").read_text()
    assert parse_cmdline_tuning(real) == {}


def test_collect_real_procfs_fixture() -> None:
    """prometheus/procfs fixtures: real vm sysctls and one cpufreq policy (intel_pstate)."""
    facts = tuning.collect(TreeHost(recording(PROCFS)))
    assert facts.cpu_governors == {"powersave": 1}
    assert facts.cpufreq_drivers == ("intel_pstate",)
    assert facts.swappiness == 60 and facts.max_map_count == 65530
    assert facts.sysctls["vm.dirty_ratio"] == "20" and facts.hugepages_default == 0
    assert facts.numa_balancing is None and facts.unread["numa_balancing"] == "missing"
    assert "sysctl.net.core.rmem_max" in facts.unread
    assert facts.cmdline == {}
    assert facts.irqbalance_running is None and "irqbalance_running" in facts.unread


def test_collect_per_cpu_cpufreq() -> None:
    """node_exporter's sysfs fixture has per-CPU cpufreq folders and no policies."""
    facts = tuning.collect(TreeHost(recording(NODE_SYS)))
    assert facts.cpu_governors == {"powersave": 4}


def test_collect_tuned_gpu_host(tmp_path: Path) -> None:
    files: dict[str, str | bytes] = {
        "sys/kernel/mm/transparent_hugepage/enabled": "always madvise [never]\n",
        "sys/kernel/mm/transparent_hugepage/defrag": "always defer defer+madvise [madvise] never\n",
        "proc/sys/kernel/numa_balancing": "0\n",
        "proc/sys/vm/swappiness": "10\n",
        "proc/sys/vm/max_map_count": "262144\n",
        "proc/sys/vm/nr_hugepages": "5128\n",
        "proc/sys/net/ipv4/tcp_rmem": "4096\t87380\t268435456\n",
        "sys/kernel/mm/hugepages/hugepages-2048kB/nr_hugepages": "5128\n",
        "sys/kernel/mm/hugepages/hugepages-2048kB/free_hugepages": "5000\n",
        "sys/kernel/mm/hugepages/hugepages-1048576kB/nr_hugepages": "2\n",
        "sys/kernel/mm/hugepages/hugepages-1048576kB/free_hugepages": "2\n",
        "etc/security/limits.conf": LIMITS_CONF,
        "etc/security/limits.d/99-nv-limits.conf": NV_LIMITS,
        "proc/self/limits": PROC_LIMITS,
        "proc/cmdline": GB200_CMDLINE,
        "proc/1/comm": "systemd\n",
        "proc/812/comm": "irqbalance\n",
        "proc/900/comm": "nvidia-persiste\n",
    }
    for cpu in range(4):
        base = f"sys/devices/system/cpu/cpufreq/policy{cpu}"
        files[f"{base}/scaling_governor"] = "performance\n" if cpu else "powersave\n"
        files[f"{base}/energy_performance_preference"] = "performance\n"
        files[f"{base}/scaling_driver"] = "amd-pstate-epp\n"
    root = make_tree(
        tmp_path,
        files=files,
        commands={
            "systemctl is-active irqbalance": ("inactive\n", 3),
            "systemctl is-active nvidia-persistenced": "active\n",
        },
    )
    facts = tuning.collect(TreeHost(root))
    assert facts.cpu_governors == {"performance": 3, "powersave": 1}
    assert facts.cpu_epp == {"performance": 4} and facts.cpufreq_drivers == ("amd-pstate-epp",)
    assert (facts.thp_enabled, facts.thp_defrag) == ("never", "madvise")
    assert (facts.numa_balancing, facts.swappiness, facts.max_map_count) == (0, 10, 262144)
    assert facts.sysctls["net.ipv4.tcp_rmem"] == "4096 87380 268435456"
    assert facts.hugepages == {
        2048: tuning.HugePagePool(5128, 5000),
        1048576: tuning.HugePagePool(2, 2),
    }
    # The process list wins over the unit state: irqbalance runs outside its unit here.
    assert (facts.irqbalance_running, facts.irqbalance_service) == (True, "inactive")
    assert (facts.persistenced_running, facts.persistenced_service) == (True, "active")
    assert {(e.file.rsplit("/", 1)[1], e.item, e.value) for e in facts.limits} == {
        ("limits.conf", "memlock", "unlimited"),
        ("limits.conf", "stack", "67108864"),
        ("99-nv-limits.conf", "nofile", "500000"),
    }
    assert facts.process_limits is not None and facts.process_limits["memlock"][0] == "8388608"
    assert facts.cmdline is not None and facts.cmdline["numa_balancing"] == ("disable",)
    json.dumps(to_jsonable(facts))


def test_collect_services_without_process_list(tmp_path: Path) -> None:
    root = make_tree(
        tmp_path,
        commands={
            "systemctl is-active irqbalance": "active\n",
            "systemctl is-active nvidia-persistenced": ("failed\n", 3),
        },
    )
    facts = tuning.collect(TreeHost(root))
    assert (facts.irqbalance_running, facts.irqbalance_service) == (True, "active")
    assert (facts.persistenced_running, facts.persistenced_service) == (False, "failed")


def test_collect_empty_tree(tmp_path: Path) -> None:
    facts = tuning.collect(TreeHost(make_tree(tmp_path)))
    # Nothing recorded: not in this bundle (never "not supported" nor "missing").
    assert facts.cpu_governors is None
    assert facts.unread["cpu_governors"] == "not in this bundle: sys/devices/system/cpu"
    assert facts.thp_enabled is None
    assert facts.unread["thp_enabled"].startswith("not in this bundle: sys/kernel/mm")
    (tmp_path / "h/sys/devices/system/cpu/cpu0").mkdir(parents=True)
    vm = tuning.collect(TreeHost(tmp_path / "h"))  # a VM: CPUs, no cpufreq, no THP
    assert vm.unread["cpu_governors"].startswith("not supported")
    assert vm.unread["thp_enabled"].startswith("missing")
    assert facts.sysctls == {} and facts.swappiness is None
    assert facts.irqbalance_running is None and facts.irqbalance_service is None
    assert facts.process_limits is None and facts.cmdline is None


@pytest.mark.parametrize("junk", ["", "\x00\xff\xfe", "abc"])
def test_collect_malformed(tmp_path: Path, junk: str) -> None:
    root = make_tree(
        tmp_path,
        files={
            "sys/kernel/mm/transparent_hugepage/enabled": junk,
            "proc/sys/vm/swappiness": junk,
            "proc/self/limits": junk,
            "sys/devices/system/cpu/cpufreq/policy0/scaling_governor": junk,
        },
    )
    facts = tuning.collect(TreeHost(root))
    assert facts.thp_enabled is None and facts.unread["thp_enabled"].startswith("malformed")
    assert facts.swappiness is None and facts.unread["swappiness"].startswith("malformed")
    assert facts.process_limits is None and facts.unread["process_limits"].startswith("malformed")


def test_live_smoke() -> None:
    facts = tuning.collect(LiveHost())
    assert facts.process_limits is not None  # this process's own limits
    soft_nofile = facts.process_limits["nofile"][0]
    import resource

    soft, _ = resource.getrlimit(resource.RLIMIT_NOFILE)
    assert soft_nofile == ("unlimited" if soft == resource.RLIM_INFINITY else str(soft))
    if os.path.exists("/proc/sys/vm/swappiness"):
        assert facts.swappiness is not None
    assert facts.irqbalance_running is not None  # the live process list is visible
    json.dumps(to_jsonable(facts))

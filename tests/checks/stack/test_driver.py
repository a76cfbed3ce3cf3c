"""stack.driver.loaded and stack.driver.userspace_match on host trees.

Real inputs: the linker cache of a host with driver 515.105.01 (``LDCONFIG``) and
nvidia-smi XMLs of that driver (Tesla T4) and of 580.105.08 (8x H100). Synthetic:
the NVRM version line, proc/modules, the GPUs' sysfs attributes, os-release files,
and the NVRM "API mismatch" kernel-log line (no recording holds one; the text is
the driver's, nv.c).
"""

from __future__ import annotations

from pathlib import Path

import pytest

from dolmen.checks.model import Status
from tests.checks.stack.hosts import (
    LDCONFIG,
    NVSMI,
    NVSMI_DOWN,
    OS_RELEASE,
    XML_H100_580,
    XML_T4_515,
    gpus_on_bus,
    link,
    modules,
    nvrm,
    run,
    unreadable,
)
from tests.conftest import make_tree, recording

LOADED = "stack.driver.loaded"
MATCH = "stack.driver.userspace_match"
LIB = "lib/x86_64-linux-gnu"


def _t4_host(root: Path, kernel: str, *, dmesg: str = "", libcuda: str = "515.105.01") -> Path:
    """The recorded T4 host: its linker cache and nvidia-smi XML, a given kernel module."""
    make_tree(
        root,
        files={
            **gpus_on_bus(1),
            "proc/modules": modules("nvidia_uvm", "nvidia"),
            "proc/driver/nvidia/version": nvrm(kernel, open_modules=False),
            f"{LIB}/libcuda.so.{libcuda}": "",
        },
        commands={
            "ldconfig -p": recording(LDCONFIG).read_text(),
            NVSMI: recording(XML_T4_515).read_text(),
            "dmesg": dmesg,
        },
    )
    link(root, f"{LIB}/libcuda.so.1", f"libcuda.so.{libcuda}")
    return root


# --- stack.driver.loaded --------------------------------------------------------------------


def test_loaded_pass(tmp_path: Path) -> None:
    root = make_tree(
        tmp_path,
        files={
            **gpus_on_bus(8),
            "proc/modules": modules("nvidia_uvm", "nvidia"),
            "proc/driver/nvidia/version": nvrm("580.105.08"),
        },
        commands={NVSMI: recording(XML_H100_580).read_text()},
    )
    [f] = run(root, LOADED)
    assert f.status is Status.PASS and f.subject == "host"
    assert "580.105.08" in f.summary and f.evidence["flavour"] == "open"
    assert f.evidence["module_loaded"] is True


def test_loaded_fail_userspace_installed(tmp_path: Path) -> None:
    """The driver's libraries are there (515.105.01) but the module is not loaded:
    the remedy is loading it, not installing a driver."""
    root = make_tree(
        tmp_path,
        files={**gpus_on_bus(2), "proc/modules": modules("mlx5_core")},
        commands={
            "ldconfig -p": recording(LDCONFIG).read_text(),
            NVSMI: ("", 9, NVSMI_DOWN),
        },
    )
    [f] = run(root, LOADED)
    assert f.status is Status.FAIL
    assert "2 NVIDIA GPU(s)" in f.summary and "515.105.01 is installed" in f.summary
    assert f.evidence["module_loaded"] is False and f.evidence["userspace_driver"] == "515.105.01"
    assert "couldn't communicate" in f.evidence["nvidia_smi"]
    assert f.remedy is not None and f.remedy.startswith("If the driver is installed: sudo modprobe")
    assert "mokutil" in f.remedy
    assert "install the driver for this kernel" in f.remedy  # no os-release: generic packages


@pytest.mark.parametrize(
    ("distro", "words"),
    [
        ("ubuntu", "nvidia-driver-<branch>-server-open"),
        ("debian", "sudo apt-get install -y linux-headers-$(uname -r) nvidia-open"),
        ("rocky", "sudo dnf install -y nvidia-open"),
        ("sles", "zypper install -y nvidia-open-driver-G06"),
        ("arch", ".run installer with --dkms"),
    ],
)
def test_loaded_fail_install_remedy_per_distribution(
    tmp_path: Path, distro: str, words: str
) -> None:
    """Nothing of the driver installed: the remedy uses the distribution's package tool."""
    root = make_tree(
        tmp_path,
        files={**gpus_on_bus(1), "proc/modules": "", "etc/os-release": OS_RELEASE[distro]},
        commands={NVSMI: ("", 9, NVSMI_DOWN)},
    )
    [f] = run(root, LOADED)
    assert f.status is Status.FAIL and f.evidence["userspace_driver"] is None
    assert f.remedy is not None and words in f.remedy


def test_loaded_skip_without_gpu(tmp_path: Path) -> None:
    root = make_tree(tmp_path, files={"proc/modules": modules("mlx5_core")})
    [f] = run(root, LOADED)
    assert f.status is Status.SKIP and "no NVIDIA GPU" in f.summary


def test_loaded_unknown_when_refused(tmp_path: Path) -> None:
    refused = {"proc/driver/nvidia/version": "EACCES", "proc/modules": "EACCES"}
    root = make_tree(
        tmp_path,
        files={
            **gpus_on_bus(1),
            **unreadable(refused),
            "proc/modules": "x",
            "proc/driver/nvidia/version": "x",
        },
    )
    [f] = run(root, LOADED)
    assert f.status is Status.UNKNOWN and "insufficient permissions" in f.summary


# --- stack.driver.userspace_match -----------------------------------------------------------


def test_match_pass_on_the_recorded_host(tmp_path: Path) -> None:
    [f] = run(_t4_host(tmp_path, "515.105.01"), MATCH)
    assert f.status is Status.PASS and "515.105.01" in f.summary
    assert f.evidence["userspace"] == {
        "libcuda.so.1": "515.105.01",
        "libnvidia-*.so.<version>": "515.105.01",  # libnvidia-glcore.so.515.105.01...
        "nvidia-smi driver_version": "515.105.01",
    }


def test_match_fail_after_upgrade_without_reboot(tmp_path: Path) -> None:
    """The 515 module still runs; libraries and nvidia-smi are 515 too but the kernel log
    shows a client of another version was refused."""
    mismatch = (
        "[ 8812.102938] NVRM: API mismatch: the client has the version 525.147.05, but\n"
        "[ 8812.102941] NVRM: this kernel module has the version 515.105.01.  Please\n"
    )
    [f] = run(_t4_host(tmp_path, "515.105.01", dmesg=mismatch), MATCH)
    assert f.status is Status.FAIL and "API mismatch" in f.summary
    assert any("525.147.05" in line for line in f.evidence["kernel_log"])
    assert f.remedy is not None and "reboot" in f.remedy


def test_match_fail_nvml_mismatch(tmp_path: Path) -> None:
    """nvidia-smi refuses to run: NVML's own mismatch error (synthetic, its real wording)."""
    root = _t4_host(tmp_path, "515.105.01")
    make_tree(
        root,
        commands={
            NVSMI: ("Failed to initialize NVML: Driver/library version mismatch\n", 18, ""),
        },
    )
    [f] = run(root, MATCH)
    assert f.status is Status.FAIL and "version mismatch" in f.evidence["nvidia_smi"]


def test_match_fail_kernel_differs(tmp_path: Path) -> None:
    [f] = run(_t4_host(tmp_path, "525.147.05"), MATCH)
    assert f.status is Status.FAIL
    assert f.summary.startswith("kernel module 525.147.05 but libcuda.so.1 515.105.01")
    assert f.evidence["kernel_module"] == "525.147.05"


def test_match_warn_side_by_side(tmp_path: Path) -> None:
    """The driver in use matches, but an older release's libraries were left behind."""
    root = make_tree(
        tmp_path,
        files={
            **gpus_on_bus(1),
            "proc/modules": modules("nvidia"),
            "proc/driver/nvidia/version": nvrm("515.105.01"),
        },
        commands={
            "ldconfig -p": recording(LDCONFIG).read_text()
            + "\tlibnvidia-glcore.so.470.82.01 (libc6,x86-64) => "
            "/lib/x86_64-linux-gnu/libnvidia-glcore.so.470.82.01\n",
            NVSMI: recording(XML_T4_515).read_text(),
        },
    )
    [f] = run(root, MATCH)
    assert f.status is Status.WARN
    assert f.evidence["side_by_side"] == ["470.82.01", "515.105.01"]
    assert f.remedy is not None and "nvidia-uninstall" in f.remedy


def test_match_fail_no_libcuda(tmp_path: Path) -> None:
    root = make_tree(
        tmp_path,
        files={
            **gpus_on_bus(1),
            "proc/modules": modules("nvidia"),
            "proc/driver/nvidia/version": nvrm("580.105.08"),
        },
        commands={
            "ldconfig -p": "1 libs found in cache\n\tlibz.so.1 (libc6,x86-64) => /lib/libz.so.1\n"
        },
    )
    [f] = run(root, MATCH)
    assert f.status is Status.FAIL and "libcuda.so.1 is not in the linker cache" in f.summary


def test_match_skip_when_module_not_loaded(tmp_path: Path) -> None:
    root = make_tree(tmp_path, files={**gpus_on_bus(1), "proc/modules": ""})
    [f] = run(root, MATCH)
    assert f.status is Status.SKIP and "stack.driver.loaded" in f.summary


def test_match_unknown_without_userspace_signal(tmp_path: Path) -> None:
    """The module is loaded but neither ldconfig nor nvidia-smi could be run."""
    root = make_tree(
        tmp_path,
        files={
            **gpus_on_bus(1),
            "proc/modules": modules("nvidia"),
            "proc/driver/nvidia/version": nvrm("580.105.08"),
        },
        commands={"ldconfig -p": ("", 1, "ldconfig: Can't open cache file\n")},
    )
    [f] = run(root, MATCH)
    assert f.status is Status.UNKNOWN and "580.105.08" in f.summary
    assert "command failed" in f.evidence["reasons"]["libraries"]


# --- the linker cache as evidence of an installed driver (issue 8) -------------------------

LD_SO_CACHE = "cuda-env/nvidia-container-toolkit__rootfs-1__ld.so.cache"  # the same host's file


def test_loaded_fail_libcuda_cached_without_its_version(tmp_path: Path) -> None:
    """libcuda.so.1 in the linker cache shows the driver installed even where the library
    files (and so its version) are not in the bundle: loading it is the remedy, not
    installing one."""
    cache = "\n".join(
        line
        for line in recording(LDCONFIG).read_text().splitlines()
        if "libnvidia-" not in line  # no soname carries the version either
    )
    root = make_tree(
        tmp_path,
        files={**gpus_on_bus(1), "proc/modules": modules("mlx5_core")},
        commands={"ldconfig -p": cache},
    )
    [f] = run(root, LOADED)
    assert f.status is Status.FAIL and f.evidence["userspace_driver"] is None
    assert f.evidence["driver_installed"] == "libcuda.so.1 in the linker cache (ldconfig -p)"
    assert "the driver is installed (libcuda.so.1 in the linker cache" in f.summary
    assert f.remedy is not None and f.remedy.startswith("If the driver is installed: sudo modprobe")


def test_loaded_fail_reads_etc_ld_so_cache_where_ldconfig_was_not_recorded(
    tmp_path: Path,
) -> None:
    """A bundle with the cache file and no ``ldconfig -p``: the file is read instead."""
    root = make_tree(
        tmp_path,
        files={
            **gpus_on_bus(1),
            "proc/modules": modules("mlx5_core"),
            "etc/ld.so.cache": recording(LD_SO_CACHE).read_bytes(),
            "dolmen-snapshot.json": '{"partial": true, "captured": {"commands": []}}',
        },
    )
    [f] = run(root, LOADED)
    assert f.status is Status.FAIL and f.evidence["userspace_driver"] == "515.105.01"
    assert "515.105.01 is installed" in f.summary
    assert f.evidence["driver_installed"] == (
        "libcuda.so.1 of driver 515.105.01 in the linker cache (etc/ld.so.cache)"
    )


def test_loaded_without_a_linker_cache_does_not_say_the_driver_is_absent(tmp_path: Path) -> None:
    """No linker cache in the bundle: nothing says the driver is installed, and nothing says
    it is not (the message names the module only; the remedy covers both cases)."""
    root = make_tree(
        tmp_path,
        files={
            **gpus_on_bus(1),
            "proc/modules": modules("mlx5_core"),
            "dolmen-snapshot.json": '{"partial": true, "captured": {"commands": []}}',
        },
    )
    [f] = run(root, LOADED)
    assert f.status is Status.FAIL and "driver_installed" not in f.evidence
    assert "not installed" not in f.summary and "is installed" not in f.summary
    assert f.remedy is not None and "If the driver is installed: sudo modprobe" in f.remedy

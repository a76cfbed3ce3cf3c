"""The NVIDIA kernel driver: loaded where GPUs are, and the same version as its userspace."""

from __future__ import annotations

from contextlib import suppress
from typing import Any

from dolmen.checks.context import Context
from dolmen.checks.model import Level, Outcome, check, failed, passed, skipped, unknown, warned
from dolmen.checks.stack.install import LOAD_HINT, install_remedy, package_command
from dolmen.facts import FactError
from dolmen.facts.gpu import NO_DRIVER
from dolmen.facts.reading import unrecorded

# nvidia-smi / NVML after a driver upgrade without reboot: "Failed to initialize NVML:
# Driver/library version mismatch" (NVML_ERROR_LIB_RM_VERSION_MISMATCH).
_NVML_MISMATCH = "version mismatch"

UNSEEN = (
    "Give dolmen what shows the driver: proc/modules, proc/driver/nvidia/version or nvidia-smi's "
    "output from the host (dolmen snapshot -o FILE there holds them all)."
)
MISMATCH_REMEDY = (
    "The kernel still runs the previous driver's module: reboot, or when no process uses the "
    "GPUs reload it: sudo systemctl stop nvidia-persistenced nvidia-fabricmanager; "
    "sudo rmmod nvidia_peermem nvidia_uvm nvidia_drm nvidia_modeset nvidia; "
    "sudo modprobe nvidia nvidia_uvm; then start the services again."
)
SIDE_BY_SIDE_REMEDY = (
    "Remove the other driver's libraries: list them (dpkg -l | grep -E 'nvidia|libnvidia' or "
    "rpm -qa | grep -i nvidia) and purge the old branch; a .run install over packages (or the "
    "reverse) leaves both: run nvidia-uninstall first, then reinstall one driver."
)


@check(
    "stack.driver.loaded",
    title="The NVIDIA kernel module is loaded where NVIDIA GPUs are on the PCI bus",
    level=Level.QUICK,
    needs=("stack", "gpu", "os", "kernel_log"),
    when=("nvidia_gpu",),
    remedy=install_remedy(None),
    source="NVIDIA driver installation guide; /proc/driver/nvidia exists only while nvidia.ko "
    "is loaded",
)
def driver_loaded(ctx: Context) -> list[Outcome]:
    """Reads proc/modules, proc/driver/nvidia/version and the driver's inventory (NVML or
    nvidia-smi: a driver that lists GPUs is loaded; lspci -vvv: a GPU bound to nvidia), with
    the GPUs any source shows, nvidia-smi's complaint and the userspace libraries as evidence."""
    s, g = ctx.stack, ctx.gpu
    loaded = None if s.modules is None else s.modules.get("nvidia", False)
    evidence: dict[str, Any] = {
        "gpus_seen": g.count,
        "pci_gpus": len(g.pci_gpus),
        "module_loaded": loaded,
        "driver_version": s.driver_version,
        "flavour": s.driver_flavour,
    }
    if loaded or s.driver_version is not None:
        flavour = f" ({s.driver_flavour} kernel modules)" if s.driver_flavour else ""
        version = s.driver_version or s.module_version or "version unread"
        return [passed("host", f"NVIDIA driver {version} loaded{flavour}", **evidence)]
    if g.gpus:  # the driver answered for them: loaded by definition
        version = g.driver_version or "version unread"
        return [
            passed(
                "host",
                f"NVIDIA driver {version} answered for {len(g.gpus)} GPU(s) ({g.source})",
                inventory=g.source,
                **evidence,
            )
        ]
    if g.nvlink_gpus:  # nvidia-smi nvlink -s listed them: the driver answered
        return [
            passed(
                "host",
                f"NVIDIA driver loaded: it answered nvidia-smi nvlink -s for "
                f"{len(g.nvlink_gpus)} GPU(s)",
                inventory="nvidia-smi nvlink",
                **evidence,
            )
        ]
    if g.nvidia_bound:  # lspci -vvv: "Kernel driver in use: nvidia", bound by the module
        return [
            passed(
                "host",
                f"NVIDIA driver loaded: lspci shows {len(g.nvidia_bound)} GPU(s) bound to "
                "it (Kernel driver in use: nvidia)",
                inventory="lspci",
                bound=list(g.nvidia_bound),
                **evidence,
            )
        ]
    why = s.unread.get("driver_version", "missing")
    booted = _boot_load(ctx)
    if booted is not None and loaded is None and not why.startswith("missing"):
        version, when, line = booted
        return [
            passed(
                "host",
                f"NVIDIA driver {version} was loaded {when}, as the kernel log shows (the "
                "boot that log covers; whether it is loaded now is not in this bundle)",
                kernel_log=line,
                **evidence,
            )
        ]
    evidence["reason"] = why
    if g.error:
        evidence["nvidia_smi"] = g.error
    userspace = s.libcuda_version or (s.userspace_versions[-1] if s.userspace_versions else None)
    evidence["userspace_driver"] = userspace
    # libcuda.so.1 in the linker cache shows the driver installed, its version read or not
    installed = s.driver_installed()
    if installed:
        evidence["driver_installed"] = installed
    no_driver = g.error is not None and NO_DRIVER in g.error.lower()
    if loaded is False or why.startswith("missing"):
        return [_not_loaded(ctx, g.count, userspace, installed, None, evidence)]
    if no_driver and unrecorded(s.unread.get("modules")):  # nvidia-smi alone: its own words
        return [_not_loaded(ctx, g.count, userspace, installed, g.error, evidence)]
    unseen = [r for r in (s.unread.get("modules", ""), why) if unrecorded(r)]
    if unseen:  # the bundle lacks them: the fix is to bring them, not to install a driver
        return [unknown("host", "; ".join(dict.fromkeys(unseen)), remedy=UNSEEN, **evidence)]
    return [unknown("host", f"whether the nvidia module is loaded could not be read: {why}")]


def _boot_load(ctx: Context) -> tuple[str, str, str] | None:
    """The version, time and line of the last ``NVRM: loading ... Kernel Module`` in the
    kernel log (nvidia.ko loaded at that boot: evidence of that boot, not of now), or None."""
    with suppress(FactError):
        loads = [e for e in ctx.kernel_log.events or () if e.kind == "driver_loaded"]
        e = loads[-1] if loads else None
        if e is not None and e.detail:
            if e.time is not None:
                when = "at " + e.time.isoformat(timespec="seconds")
            elif e.boot_seconds is not None:
                when = f"{e.boot_seconds:.0f} s after boot"
            else:
                when = f"(log line {e.line_no})"
            return e.detail, when, e.raw.strip()
    return None


def _not_loaded(
    ctx: Context,
    gpus: int,
    userspace: str | None,
    shown: str | None,
    smi: str | None,
    evidence: dict[str, Any],
) -> Outcome:
    """``shown``: what shows the driver installed (``StackFacts.driver_installed``)."""
    installed = ""
    if userspace:
        installed = f"; the userspace of driver {userspace} is installed"
        installed += ", so the module did not load"
    elif shown:
        installed = f"; the driver is installed ({shown}), so the module did not load"
    dist = ctx.os.distribution
    remedy = install_remedy(dist)
    if userspace or shown:  # installed: load it, or rebuild it for the running kernel
        again = package_command(dist, userspace.split(".")[0] if userspace else None)
        remedy = f"{LOAD_HINT} To rebuild it for this kernel, reinstall the driver: {again}."
    if smi is not None:  # nvidia-smi's own words are the precise reason
        what = f"nvidia-smi could not talk to the driver ({smi})"
    else:
        what = f"{gpus} NVIDIA GPU(s) seen but the nvidia kernel module is not loaded"
    return failed("host", what + installed, remedy=remedy, **evidence)


@check(
    "stack.driver.userspace_match",
    title="The driver's userspace libraries match the loaded kernel module",
    level=Level.QUICK,
    needs=("stack", "gpu", "kernel_log"),
    when=("nvidia_gpu",),
    remedy=MISMATCH_REMEDY,
    source="NVRM 'API mismatch' and NVML 'Driver/library version mismatch': libcuda, "
    "libnvidia-ml and nvidia.ko must come from one driver release",
)
def userspace_match(ctx: Context) -> list[Outcome]:
    """Compares proc/driver/nvidia/version (or sys/module/nvidia/version) with libcuda,
    libnvidia-ml and the libnvidia-* sonames in ldconfig -p, nvidia-smi's driver_version, and
    looks for NVRM API mismatch lines in the kernel log."""
    s, g = ctx.stack, ctx.gpu
    kernel = s.driver_version or s.module_version
    booted = None if kernel else _boot_load(ctx)
    if booted is not None:  # the log's load line: the module of that boot, not of now
        kernel = booted[0]
    if kernel is None:
        why = s.unread.get("driver_version", "missing")
        if unrecorded(why):
            return [skipped("host", f"no kernel module version to compare: {why}")]
        if why.startswith("missing"):
            return [
                skipped(
                    "host",
                    "the nvidia kernel module is not loaded: no version to compare "
                    "(see stack.driver.loaded)",
                )
            ]
        return [unknown("host", f"the kernel module's version could not be read: {why}")]
    found: dict[str, str] = {}
    if s.module_version and s.driver_version and s.module_version != s.driver_version:
        found["sys/module/nvidia/version"] = s.module_version
    if s.libcuda_version:
        found["libcuda.so.1"] = s.libcuda_version
    if s.libnvidia_ml_version:
        found["libnvidia-ml.so.1"] = s.libnvidia_ml_version
    side_by_side = s.userspace_versions if len(s.userspace_versions) > 1 else ()
    if len(s.userspace_versions) == 1:  # libnvidia-glcore.so.580.95.05 and its siblings
        found["libnvidia-*.so.<version>"] = s.userspace_versions[0]
    elif side_by_side and not found and kernel not in side_by_side:
        found["libnvidia-*.so.<version>"] = side_by_side[-1]
    if g.driver_version:
        found[f"{g.source} driver_version"] = g.driver_version
    events = [e for e in ctx.kernel_log.events or () if e.kind == "api_mismatch"]
    nvml_error = g.error if g.error and _NVML_MISMATCH in g.error.lower() else None
    mismatched = {k: v for k, v in found.items() if v != kernel}
    evidence: dict[str, Any] = {"kernel_module": kernel, "userspace": found}
    if side_by_side:
        evidence["side_by_side"] = list(side_by_side)
    if events:
        evidence["kernel_log"] = [e.message for e in events[-3:]]
    if nvml_error:
        evidence["nvidia_smi"] = nvml_error
    if booted is not None and mismatched and not (events or nvml_error):
        return [
            unknown(
                "host",
                f"the kernel log shows module {kernel} loaded {booted[1]}, the userspace is "
                + ", ".join(f"{k} {v}" for k, v in mismatched.items())
                + ": a reboot since that boot would explain it (proc/driver/nvidia/version: "
                "not in this bundle)",
                **evidence,
            )
        ]
    if mismatched or events or nvml_error:
        what = ", ".join(f"{k} {v}" for k, v in mismatched.items()) or (
            "the kernel log reports an NVRM API mismatch" if events else f"nvidia-smi: {nvml_error}"
        )
        return [failed("host", f"kernel module {kernel} but {what}", **evidence)]
    if s.unread.get("libcuda_version", "").startswith("missing"):
        return [
            failed(
                "host",
                f"kernel module {kernel} is loaded but libcuda.so.1 is not in the linker cache: "
                "CUDA applications cannot find the driver",
                remedy="Install the driver's userspace of the same release (libnvidia-compute-"
                f"{kernel.split('.')[0]} on Ubuntu, nvidia-driver-cuda-libs on RHEL), then sudo "
                "ldconfig.",
                **evidence,
            )
        ]
    if not found:
        reasons = {k: s.unread[k] for k in ("libraries", "libcuda_version") if k in s.unread}
        side = f"{kernel} (loaded {booted[1]}, the kernel log shows)" if booted else kernel
        return [
            unknown(
                "host",
                f"no userspace driver version could be read to compare with {side}",
                reasons=reasons,
            )
        ]
    if side_by_side:
        return [
            warned(
                "host",
                f"driver {kernel} is loaded and used, but libraries of several driver releases "
                "are installed side by side: " + ", ".join(side_by_side),
                remedy=SIDE_BY_SIDE_REMEDY,
                **evidence,
            )
        ]
    return [passed("host", f"kernel module and userspace are driver {kernel}", **evidence)]

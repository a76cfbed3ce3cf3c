"""The GPU inventory: does the driver answer, does it list every GPU, is any GPU lost."""

from __future__ import annotations

from typing import Any

from dolmen.checks.context import Context
from dolmen.checks.gpu.actions import DRAIN
from dolmen.checks.gpu.gpus import no_inventory, target
from dolmen.checks.model import Level, Outcome, check, failed, passed, skipped, unknown, warned
from dolmen.facts.gpu import GpuFacts
from dolmen.host.gpu import Gpu
from dolmen.values.busid import gpu_subject

# What the driver stack prints when it is not running, as opposed to a slow or refused read:
# nvidia-smi (exit 9) "couldn't communicate with the NVIDIA driver", NVML "Driver Not Loaded",
# nvidia-smi (exit 6) "No devices were found" while GPUs sit on the PCI bus.
_DRIVER_DOWN = (
    "couldn't communicate with the nvidia driver",
    "driver not loaded",
    "no devices were found",
    "unable to determine the device handle",
)


@check(
    "gpu.count",
    title="The driver lists every GPU: as many as expected, and every NVIDIA GPU on the PCI bus",
    level=Level.QUICK,
    needs=("gpu",),
    when=("nvidia_gpu",),
    remedy=(
        "Look for the missing GPU in the kernel log (dmesg | grep -i -e NVRM -e Xid); reboot "
        "the node; if it stays missing, reseat or service it (nvidia-bug-report.sh)."
    ),
    source="aznhc azure_gpu_count.nhc and GCM gpu_num: listed count = expected count",
)
def gpu_count(ctx: Context) -> list[Outcome]:
    """Reads the driver's GPU list, the NVIDIA GPUs in sys/bus/pci, [validate] expected_gpus
    and the baseline's GPU count."""
    facts = ctx.gpu
    if not facts.gpus:
        return [no_inventory(facts)]
    listed = len(facts.gpus)
    out: list[Outcome] = []
    for bdf in facts.pci_gpus_missing_from_driver:
        out.append(
            failed(
                gpu_subject(bdf),
                f"NVIDIA GPU {bdf} is on the PCI bus but the driver does not list it "
                "(fallen off the bus, or failed to initialise)",
                pci_address=bdf,
                listed=listed,
                pci_gpus=len(facts.pci_gpus),
            )
        )
    expected, origin = _expected(ctx)
    evidence: dict[str, Any] = {
        "listed": listed,
        "attached_gpus": facts.inventory.attached_gpus,
        "pci_gpus": len(facts.pci_gpus) if "pci_gpus" not in facts.unread else None,
        "expected": expected,
        "expected_from": origin,
    }
    if expected is not None and listed < expected:
        out.append(
            failed("host", f"{listed} GPUs listed, {expected} expected ({origin})", **evidence)
        )
    elif expected is not None and listed > expected:
        out.append(
            warned(
                "host",
                f"{listed} GPUs listed, more than the {expected} expected ({origin})",
                remedy="Update [validate] expected_gpus (or the baseline) if the node changed.",
                **evidence,
            )
        )
    elif expected is not None:
        out.append(passed("host", f"{listed} GPUs listed, as expected ({origin})", **evidence))
    elif "pci_gpus" not in facts.unread and facts.pci_gpus:
        if not facts.pci_gpus_missing_from_driver:
            out.append(
                passed("host", f"{listed} GPUs listed, every NVIDIA GPU on the PCI bus", **evidence)
            )
    else:
        out.append(
            skipped(
                "host",
                f"{listed} GPUs listed; nothing to compare with (set [validate] expected_gpus, "
                "give a baseline, or capture sys/bus/pci)",
                **evidence,
            )
        )
    return out


def _expected(ctx: Context) -> tuple[int | None, str]:
    configured = ctx.config.get("validate", "expected_gpus")
    if isinstance(configured, int):
        return configured, "[validate] expected_gpus"
    # The baseline model carries the GPU count of the known-good host (dolmen baseline).
    from_baseline = getattr(ctx.baseline, "gpu_count", None)
    if isinstance(from_baseline, int):
        return from_baseline, "baseline"
    return None, "nothing"


@check(
    "gpu.driver.responds",
    title="The NVIDIA driver answers for the GPUs on the PCI bus",
    level=Level.QUICK,
    needs=("gpu",),
    when=("nvidia_gpu",),
    remedy=(
        "Check the driver: lsmod | grep nvidia, dmesg | grep NVRM, systemctl status "
        "nvidia-persistenced; reload it (modprobe nvidia) or reinstall the driver matching the "
        "kernel, then reboot."
    ),
    source="nvidia-smi exit 9 'couldn't communicate with the NVIDIA driver'; NVML not loaded",
)
def driver_responds(ctx: Context) -> list[Outcome]:
    """Reads the inventory's source, error and per-reader attempts, and the PCI GPU list."""
    facts = ctx.gpu
    inv = facts.inventory
    evidence: dict[str, Any] = {
        "source": facts.source,
        "driver_version": facts.driver_version,
        "attempts": dict(inv.attempts),
        "pci_gpus": list(facts.pci_gpus),
    }
    if facts.gpus:
        complaint = inv.unread.get("nvidia-smi")
        note = f" (nvidia-smi complained: {complaint})" if complaint else ""
        return [
            passed(
                "host",
                f"the driver answered through {facts.source} for {len(facts.gpus)} GPUs{note}",
                **evidence,
            )
        ]
    why = facts.error or "the driver's output lists no GPU"
    texts = " ".join([why, *inv.attempts.values()]).lower()
    evidence["error"] = why
    if any(s in texts for s in _DRIVER_DOWN) or facts.error is None:
        return [
            failed(
                "host",
                f"NVIDIA GPUs are seen ({_seen_by(facts)}) but the driver does not answer: {why}",
                **evidence,
            )
        ]
    if why.startswith("missing") and ctx.host.kind == "live":
        return [
            failed(
                "host",
                f"NVIDIA GPUs are on the PCI bus but neither NVML nor nvidia-smi is there: {why}",
                remedy="Install the NVIDIA driver (its userspace: libnvidia-ml, nvidia-smi).",
                **evidence,
            )
        ]
    return [unknown("host", f"the GPU inventory could not be read: {why}", **evidence)]


@check(
    "gpu.lost",
    title="No GPU answers 'GPU is lost'",
    level=Level.QUICK,
    needs=("gpu",),
    when=("nvidia_gpu",),
    remedy=(
        f"{DRAIN.capitalize()} and reboot it (a lost GPU rarely survives nvidia-smi -r); "
        "collect nvidia-bug-report.sh and service the GPU if it is lost again."
    ),
    source="nvidia-smi 'GPU is lost' / NVML_ERROR_GPU_IS_LOST: the GPU stopped answering",
)
def gpu_lost(ctx: Context) -> list[Outcome]:
    """Reads each GPU's ``lost`` flag (any field that answered "GPU is lost")."""
    facts = ctx.gpu
    if not facts.gpus:
        return [no_inventory(facts)]
    return [_lost(g) for g in facts.gpus]


def _lost(gpu: Gpu) -> Outcome:
    if gpu.lost:
        lost_fields = sorted(k for k, v in gpu.unread.items() if v == "gpu is lost")
        return failed(
            gpu.subject,
            "the GPU is lost: the driver cannot reach it",
            fields=lost_fields[:20],
            target=target(gpu),
        )
    return passed(gpu.subject, "the GPU answers", name=gpu.name)


def _seen_by(facts: GpuFacts) -> str:
    """Which sources show the GPUs: "8 on PCI tree, lspci" or "1 by GPU driver inventory"."""
    names = sorted({n for g in facts.seen for n in g.sources} | set(facts.unnamed))
    return f"{facts.count} by {', '.join(names)}" if names else "by no source"

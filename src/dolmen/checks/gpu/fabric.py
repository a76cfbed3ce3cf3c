"""NVLink fabric registration on NVSwitch systems (HGX, NVL72): state, status and health.

The driver registers each GPU with the fabric manager at boot: ``state`` goes Not
Started -> In Progress -> Completed, and ``status`` says whether it succeeded.
From 570 the driver also reports the fabric's health (``summary``, ``route_unhealthy``,
``bandwidth``...). PCIe boards without NVSwitch read N/A ("not supported").
"""

from __future__ import annotations

from typing import Any

from dolmen.checks.context import Context
from dolmen.checks.gpu.gpus import per_gpu, unread
from dolmen.checks.model import Level, Outcome, check, failed, passed, warned
from dolmen.host.gpu import Gpu

# health leaves that mean trouble when "True" (route_recovery_in_progress is transient).
_BAD_FLAGS = ("route_unhealthy", "access_timeout_recovery")
_TRANSIENT = ("route_recovery_in_progress",)


@check(
    "gpu.fabric",
    title="Each GPU is registered with the NVLink fabric and the fabric is healthy",
    level=Level.QUICK,
    needs=("gpu",),
    when=("nvidia_gpu",),
    remedy=(
        "Check the fabric manager: systemctl status nvidia-fabricmanager and "
        "journalctl -u nvidia-fabricmanager; restart it (systemctl restart "
        "nvidia-fabricmanager) with the GPUs idle, or reboot; on NVL72 check the NVLink switch "
        "trays (nvidia-smi -q -d FABRIC)."
    ),
    source="nvidia-smi -q 'Fabric' (state, status, health; 550+/570+); NVIDIA Fabric Manager guide",
)
def fabric(ctx: Context) -> list[Outcome]:
    """Reads ``fabric`` (state, status, health summary and flags) per GPU."""

    def body(gpu: Gpu) -> Outcome:
        f = gpu.fabric
        if f.state is None:
            return unread(gpu, "fabric.state", "fabric state")
        ev: dict[str, Any] = {
            "state": f.state,
            "status": f.status,
            "clique_id": f.clique_id,
            "cluster_uuid": f.cluster_uuid,
            "health": dict(f.health),
        }
        state = f.state.lower()
        if state == "in progress":
            return warned(
                gpu.subject,
                "fabric registration in progress (normal for a few minutes after boot)",
                remedy="Read again in a few minutes; if it stays, see the fabric manager's log.",
                **ev,
            )
        if state != "completed":
            return failed(gpu.subject, f"fabric registration {f.state}", **ev)
        if f.status is not None and f.status.lower() != "success":
            return failed(
                gpu.subject, f"fabric registration completed with status {f.status}", **ev
            )
        bad = [k for k in _BAD_FLAGS if f.health.get(k, "").lower() == "true"]
        summary = f.health_summary
        if bad or (summary is not None and summary.lower() != "healthy"):
            what = ", ".join(bad) if bad else f"summary {summary}"
            return failed(gpu.subject, f"fabric unhealthy: {what}", **ev)
        if f.status is None:
            return unread(gpu, "fabric.status", "fabric status")
        busy = [k for k in _TRANSIENT if f.health.get(k, "").lower() == "true"]
        if busy:
            return warned(gpu.subject, f"fabric {', '.join(busy)}", **ev)
        bandwidth = f.health.get("bandwidth")
        if bandwidth is not None and bandwidth.lower() not in ("full", "n/a"):
            return warned(gpu.subject, f"fabric bandwidth {bandwidth}", **ev)
        return passed(gpu.subject, "registered with the fabric (Completed, Success)", **ev)

    return per_gpu(ctx, body)

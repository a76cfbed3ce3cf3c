"""The NVIDIA kernel modules beside nvidia.ko: nvidia_uvm for CUDA, nvidia_peermem for
GPUDirect RDMA. Whether the module is loaded is judged here; its errors in the kernel log
are ``gpu.peermem``'s (checks/gpu/kernel_events.py), within the log window and with the
catalogue's severity, so that one error is reported once."""

from __future__ import annotations

from dolmen.checks.context import Context
from dolmen.checks.model import Level, Outcome, check, passed, skipped, unknown, warned

UVM_REMEDY = (
    "sudo modprobe nvidia_uvm (or nvidia-modprobe -u -c=0), and load it at boot: "
    "echo nvidia_uvm | sudo tee /etc/modules-load.d/nvidia-uvm.conf"
)
PEERMEM_REMEDY = (
    "sudo modprobe nvidia_peermem, and load it at boot: echo nvidia_peermem | sudo tee "
    "/etc/modules-load.d/nvidia-peermem.conf (it ships with the driver since R470 and needs "
    "the IB stack, MLNX_OFED or inbox, loaded first); if it does not load, dmesg | grep peermem"
)


@check(
    "stack.modules",
    title="The nvidia_uvm module is loaded, and nvidia_peermem where InfiniBand HCAs are",
    level=Level.QUICK,
    needs=("stack", "infiniband"),
    when=("nvidia_gpu",),
    remedy=UVM_REMEDY,
    source="CUDA needs /dev/nvidia-uvm (nvidia_uvm); GPUDirect RDMA needs nvidia_peermem "
    "(NVIDIA GPUDirect RDMA guide) unless NCCL uses DMA-BUF",
)
def modules(ctx: Context) -> list[Outcome]:
    """Reads proc/modules and the InfiniBand/RoCE ports (sysfs, ibstat)."""
    s = ctx.stack
    if s.modules is None:
        why = s.unread.get("modules", "missing: proc/modules")
        return [unknown("host", f"the loaded modules could not be read: {why}")]
    if not s.modules.get("nvidia"):
        return [skipped("host", "the nvidia module is not loaded (see stack.driver.loaded)")]
    out: list[Outcome] = []
    if s.modules.get("nvidia_uvm"):
        out.append(passed("module:nvidia_uvm", "nvidia_uvm is loaded"))
    else:
        out.append(
            warned(
                "module:nvidia_uvm",
                "nvidia_uvm is not loaded: CUDA programs fail to initialise unless "
                "nvidia-modprobe can load it when they start (never inside a container)",
            )
        )
    ports = ctx.infiniband.ports
    if ports:
        hcas = sorted({p.device for p in ports})
        if s.modules.get("nvidia_peermem"):
            out.append(
                passed(
                    "module:nvidia_peermem",
                    f"nvidia_peermem is loaded for GPUDirect RDMA over {len(hcas)} HCA(s)",
                )
            )
        else:
            out.append(
                warned(
                    "module:nvidia_peermem",
                    f"GPUs and {len(hcas)} InfiniBand/RoCE HCA(s) but nvidia_peermem is not "
                    "loaded: GPUDirect RDMA falls back to host memory (slower NCCL across "
                    "nodes) unless NCCL uses DMA-BUF (open kernel modules, kernel 5.12+)",
                    remedy=PEERMEM_REMEDY,
                    hcas=hcas,
                )
            )
    return out

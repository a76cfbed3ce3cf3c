"""The cases whose conclusion validate does not reach today, per test function, grouped
by the reason: the issue-8 item (and the check) that owns them. Regenerated after the issue-8
branches merged (main, 2026-12-01): every case that passes left its group; the reasons of
the cases that were already marked are those of the first run and may name more checks than
still fail (`pytest tests/test_recordings_alone.py --runxfail` shows today's). The marks are
strict: when a change makes a case pass, its id must leave its group here (an empty group
goes too)."""

from __future__ import annotations


def _by_reason(groups: dict[str, tuple[str, ...]]) -> dict[str, str]:
    return {case: reason for reason, cases in groups.items() for case in cases}


UNDER_KEY = _by_reason(
    {
        "issue 8 single-file formats (dcgmi): nothing reads dcgmi nvlink --link-status (all links Down)": (
            "dcgm/issues__dcgmi-diag-excerpts.md#DCGM-198-nvlink",
        ),
        "issue 8 evidence over absence: the SXid lines name NVSwitch 0000:04:00.0; gpu.sxid skips 'no NVIDIA GPU on this host'": (
            "kernel-logs/issues__xid-excerpts.md#NVIDIA-nvtrust-issues-124",
        ),
        "issue 8 evidence over absence: NVRM Xid lines name the GPU; gpu.xid skips 'no NVIDIA GPU on this host'": (
            "kernel-logs/issues__xid-excerpts.md#akash-network-support-issues-244",
        ),
        "as a bare --from FILE the verdict differs from the file under its key: AssertionError: (\"8 NDR ports and the bond ACTIVE/LinkUp; mlx5_1's link_downed reads 255 (the 8-bit counter saturated: the link went d..._overrun_errors 15 abov": (
            "sysfs/gpud__sys-class-infiniband-h100.0",
        ),
    }
)

BARE = _by_reason(
    {
        "single-file detection: not a file dolmen reads (text of no kind it knows)": (
            "dcgm/issues__dcgmi-diag-excerpts.md#DCGM-198-diag",
            "dcgm/issues__dcgmi-diag-excerpts.md#DCGM-55",
            "dcgm/issues__dcgmi-diag-excerpts.md#go-dcgm-52",
        ),
        "issue 8 single-file formats (dcgmi): nothing reads dcgmi nvlink --link-status (all links Down)": (
            "dcgm/issues__dcgmi-diag-excerpts.md#DCGM-198-nvlink",
        ),
        "issue 8 evidence over absence: the SXid lines name NVSwitch 0000:04:00.0; gpu.sxid skips 'no NVIDIA GPU on this host'": (
            "kernel-logs/issues__xid-excerpts.md#NVIDIA-nvtrust-issues-124",
        ),
        "issue 8 evidence over absence: NVRM Xid lines name the GPU; gpu.xid skips 'no NVIDIA GPU on this host'": (
            "kernel-logs/issues__xid-excerpts.md#NVIDIA-open-gpu-kernel-modules-issues-1150",
            "kernel-logs/issues__xid-excerpts.md#akash-network-support-issues-244",
        ),
    }
)

DRIVER_LOADED = _by_reason({})

NOTHING_INVENTED = _by_reason({})

ABSENCE_NAMED = _by_reason(
    {
        "issue 8 evidence over absence: skip/unknown claim absence on the host ('on this host', 'missing') for sources the bundle lacks: skip gpu.*, skip interconnect.ib.*, skip interconnect.nic.link, skip interconnect.nvlink.state, skip interconnect.roce, skip stack.container.cdi, skip stack.container.nvidia_runtime, skip stack.cuda.driver_compat, skip stack.driver.loaded, skip stack.driver.userspace_match, skip stack.modules, skip storage.nvme, skip system.kernel, skip tuning.cpu.governor, skip tuning.drift, skip tuning.gpu.persistence, skip tuning.irq.balance, skip tuning.limits.memlock, skip tuning.numa_balancing, unknown interconnect.nic.pcie_limited, unknown security.ima, unknown security.lockdown, unknown security.secure_boot, unknown security.tpm, unknown storage.io_errors, unknown system.numa, unknown system.pcie.aer": (
            "cuda-env/issues__nvcc-version-excerpts.md#nccl-1578-nvidia-smi",
            "nvidia-smi-captures/nvidia_gpu_exporter__linux-x86_64__nvidia-geforce-rtx-2080-super__595.71.05.txt#table",
            "nvidia-smi-captures/nvidia_gpu_exporter__linux-x86_64__nvidia-geforce-rtx-2080-super__595.71.05.txt#table-load",
            "nvidia-smi-captures/nvidia_gpu_exporter__linux-x86_64__nvidia-geforce-rtx-2080-super__610.57.04.txt#table",
            "nvidia-smi-captures/nvidia_gpu_exporter__linux-x86_64__nvidia-geforce-rtx-2080-super__610.57.04.txt#table-load",
            "nvidia-smi-captures/nvidia_gpu_exporter__linux-x86_64__nvidia-geforce-rtx-4080-super__595.71.05.txt#table",
            "nvidia-smi-captures/nvidia_gpu_exporter__linux-x86_64__nvidia-geforce-rtx-4080-super__595.71.05.txt#table-load",
            "nvidia-smi-captures/nvidia_gpu_exporter__linux-x86_64__nvidia-h100-80gb-hbm3__590.48.01.txt#table",
            "nvidia-smi-captures/nvidia_gpu_exporter__linux-x86_64__nvidia-h100-80gb-hbm3__590.48.01.txt#table-load",
            "nvidia-smi-captures/nvidia_gpu_exporter__linux-x86_64__nvidia-h100-mig__590.48.01.txt#table",
            "nvidia-smi-captures/nvidia_gpu_exporter__linux-x86_64__nvidia-h100-mig__590.48.01.txt#table-load",
            "nvidia-smi-captures/nvidia_gpu_exporter__linux-x86_64__nvidia-h200-mig__590.48.01.txt#table",
            "nvidia-smi-captures/nvidia_gpu_exporter__linux-x86_64__nvidia-h200-mig__590.48.01.txt#table-load",
            "nvidia-smi-captures/nvidia_gpu_exporter__linux-x86_64__nvidia-h200__590.48.01.txt#table",
            "nvidia-smi-captures/nvidia_gpu_exporter__linux-x86_64__nvidia-h200__590.48.01.txt#table-load",
            "nvidia-smi-captures/nvidia_gpu_exporter__linux-x86_64__nvidia-l40s__595.80.txt#table",
            "nvidia-smi-captures/nvidia_gpu_exporter__linux-x86_64__nvidia-l40s__595.80.txt#table-load",
            "nvidia-smi-captures/nvidia_gpu_exporter__windows-x86_64__nvidia-geforce-rtx-2080-super__591.86.txt#table",
            "nvidia-smi-captures/nvidia_gpu_exporter__windows-x86_64__nvidia-geforce-rtx-2080-super__591.86.txt#table-load",
            "nvidia-smi-captures/nvidia_gpu_exporter__windows-x86_64__nvidia-geforce-rtx-2080-super__610.62.txt#table",
            "nvidia-smi-captures/nvidia_gpu_exporter__windows-x86_64__nvidia-geforce-rtx-2080-super__610.62.txt#table-load",
            "nvidia-smi-text/azurehpc__orig_nvsmi8_output.txt",
            "nvidia-smi-text/gpud__nvidia-smi-query.535.183.01.out.0.invalid",
            "nvidia-smi-text/gpud__nvidia-smi.525.125.06.out.0.valid",
            "nvidia-smi-text/gpud__nvidia-smi.550.90.07.out.0.valid",
        ),
        "still wrong after the issue-8 merges: AssertionError: assert not ['unknown interconnect.topology gpu:7: GPU7: GPU6-GPU7: path not read; paths to 10 NIC(s) not read; affinity not read (missing (no GPU7 row: th": (
            "nvidia-smi-topo/issues__topo-m-excerpts.md#nccl-820",
        ),
    }
)

XFAIL: dict[str, dict[str, str]] = {
    "under_key": UNDER_KEY,
    "bare": BARE,
    "driver_loaded": DRIVER_LOADED,
    "nothing_invented": NOTHING_INVENTED,
    "absence_named": ABSENCE_NAMED,
}

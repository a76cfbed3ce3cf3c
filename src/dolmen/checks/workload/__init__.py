"""``workload.*``: the active tests of ``--level full`` (GEMM, memory, PCIe, peer copies,
NCCL, storage I/O, DCGM), one module per check, reading ``ctx.workloads``.

``WORKLOAD_OF`` names the workload (dolmen.workloads.RUNNERS) each check reads, so that the
suite runs the workloads first, outside the checks' time limit. A new workload check adds
its row here.
"""

WORKLOAD_OF: dict[str, str] = {
    "workload.gemm": "gemm",
    "workload.memory_bandwidth": "memory",
    "workload.pcie_bandwidth": "memory",
    "workload.peer_bandwidth": "memory",
    "workload.nccl_allreduce": "collective",
    "workload.storage_io": "storage",
    "workload.dcgm_diag": "dcgm",
}

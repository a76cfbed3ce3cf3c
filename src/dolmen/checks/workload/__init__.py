"""``workload.*``: the active tests of ``--level full`` (GEMM, memory, NCCL, storage I/O)."""

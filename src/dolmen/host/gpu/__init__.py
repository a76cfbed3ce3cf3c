"""``dolmen.host.gpu``: the GPU model (``model``) and its readers.

Readers: NVML (``nvml``), ``nvidia-smi -q -x`` (``nvsmi``), ``nvidia-smi -q`` text
(``nvsmi_text``, which rebuilds the XML's tree with ``nvsmi_labels`` and reads it with
``nvsmi``), the default ``nvidia-smi`` table (``nvsmi_table``), and nvidia-smi's own
failure lines (``nvsmi_failure``). The package re-exports the model, which checks and
facts read; ``read.read_gpus`` (behind ``Host.gpus``) chooses the reader. Imports run
one way: model <- build, nvsmi_values <- nvsmi_sections <- nvsmi <- nvsmi_text,
nvsmi_table, nvsmi_failure <- read; nvml <- read.
"""

from dolmen.host.gpu.model import (
    ABSENT,
    DEPRECATED,
    GPU_LOST,
    NO_PERMISSION,
    NOT_SUPPORTED,
    ClockEvents,
    Clocks,
    Ecc,
    EccCounts,
    Fabric,
    Gpu,
    GpuInventory,
    Memory,
    Mig,
    MigDevice,
    NvLink,
    Pcie,
    Power,
    RemappedRows,
    Reset,
    RetiredPages,
    Temperature,
    Utilization,
)

__all__ = [
    "ABSENT",
    "DEPRECATED",
    "GPU_LOST",
    "NOT_SUPPORTED",
    "NO_PERMISSION",
    "ClockEvents",
    "Clocks",
    "Ecc",
    "EccCounts",
    "Fabric",
    "Gpu",
    "GpuInventory",
    "Memory",
    "Mig",
    "MigDevice",
    "NvLink",
    "Pcie",
    "Power",
    "RemappedRows",
    "Reset",
    "RetiredPages",
    "Temperature",
    "Utilization",
]

"""The GPU inventory model, one for both readers (a leaf: it imports only dolmen.frozen
and, for ``Gpu.subject``, dolmen.values).

NVML (``dolmen.host.gpu.nvml``, live hosts whose libnvidia-ml loads) and
nvidia-smi (``nvsmi``: ``-q -x``; ``nvsmi_text``: ``-q``; ``nvsmi_table``: the default
table; every other case, host trees included) all build these classes;
``dolmen.host.gpu.read`` picks the reader.
A value that could not be read is None and its key (``"power.draw"``,
``"ecc.volatile.uncorrectable"``) maps to the reason in the Gpu's ``unread``,
using the reason words of docs/architecture.md.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import field

from dolmen.frozen import frozen
from dolmen.values.busid import gpu_subject

# Reasons (docs/architecture.md "Facts conventions"): the first two mean "skip",
# the others "unknown".
NOT_SUPPORTED = "not supported"
DEPRECATED = "deprecated"
NO_PERMISSION = "insufficient permissions"
GPU_LOST = "gpu is lost"
ABSENT = "not supported: not in this driver's output"


@frozen
class MigDevice:
    """One MIG device (GPU instance + compute instance) of a GPU in MIG mode."""

    index: int | None = None
    gpu_instance_id: int | None = None
    compute_instance_id: int | None = None
    memory_total_mib: int | None = None


@frozen
class Mig:
    """MIG mode now and after the next GPU reset, and the MIG devices that exist."""

    current: bool | None = None
    pending: bool | None = None
    devices: tuple[MigDevice, ...] = ()


@frozen
class EccCounts:
    """One ECC counter set. Totals add SRAM and DRAM (Turing+) or read the single/double-bit
    totals (Kepler..Volta); ``raw`` keeps each location as read (``dram_uncorrectable``,
    ``double_bit.device_memory``, ``uncorrectable_sram_sources.sram_l2``)."""

    correctable: int | None = None
    uncorrectable: int | None = None
    raw: Mapping[str, int] = field(default_factory=dict)


@frozen
class Ecc:
    """ECC mode and counters: ``volatile`` since the driver loaded, ``aggregate`` lifetime."""

    mode: bool | None = None
    mode_pending: bool | None = None
    volatile: EccCounts = field(default_factory=EccCounts)
    aggregate: EccCounts = field(default_factory=EccCounts)
    sram_threshold_exceeded: bool | None = None
    channel_repair_pending: bool | None = None  # 580+
    tpc_repair_pending: bool | None = None  # 580+


@frozen
class RetiredPages:
    """Dynamic page retirement (Kepler..Volta; N/A from Ampere, which remaps rows instead)."""

    sbe: int | None = None  # pages retired for multiple single-bit errors
    dbe: int | None = None  # pages retired for a double-bit error
    pending: bool | None = None  # a retirement waits for the next driver reload


@frozen
class RemappedRows:
    """Row remapping (Ampere+ data-center boards)."""

    correctable: int | None = None
    uncorrectable: int | None = None
    pending: bool | None = None
    failure: bool | None = None
    histogram: Mapping[str, int] = field(default_factory=dict)  # max/high/partial/low/none banks


@frozen
class ClockEvents:
    """Why clocks are held down: ``active`` reason names (``sw_power_cap``, ``hw_slowdown``...,
    the same across the R535 throttle -> event rename) and, from 580, time spent per reason."""

    active: tuple[str, ...] | None = None
    counters_us: Mapping[str, int] = field(default_factory=dict)


@frozen
class Temperature:
    """Degrees C. Absolute thresholds (Kepler..Ampere) or margins to T.Limit (Ada+, 535+):
    ``tlimit`` is how far the GPU is below T.Limit now; ``tlimit_slowdown`` is the margin at
    which it slows down (e.g. -2), so the GPU slows when ``tlimit <= tlimit_slowdown``."""

    gpu: int | None = None
    memory: int | None = None
    shutdown: int | None = None
    slowdown: int | None = None
    max_operating: int | None = None
    memory_max: int | None = None
    tlimit: int | None = None
    tlimit_shutdown: int | None = None
    tlimit_slowdown: int | None = None
    tlimit_max_operating: int | None = None


@frozen
class Power:
    """Watts. ``draw`` prefers the instant reading, then the average, then the legacy one."""

    draw: float | None = None
    limit: float | None = None  # requested (set by the administrator)
    enforced_limit: float | None = None  # in force now
    default_limit: float | None = None
    min_limit: float | None = None
    max_limit: float | None = None


@frozen
class Clocks:
    """MHz, current and maximum."""

    graphics: int | None = None
    sm: int | None = None
    memory: int | None = None
    graphics_max: int | None = None
    sm_max: int | None = None
    memory_max: int | None = None


@frozen
class Utilization:
    """Percent busy over the last sample period."""

    gpu: int | None = None
    memory: int | None = None


@frozen
class Memory:
    """Frame buffer, MiB."""

    total_mib: int | None = None
    used_mib: int | None = None
    reserved_mib: int | None = None


@frozen
class Pcie:
    """The GPU's PCIe link: generation and width now and at most, and the replay counter.
    ``gen_max`` is the link's maximum; ``gen_device_max`` / ``gen_host_max`` (535+) say which
    end limits it."""

    gen_current: int | None = None
    gen_max: int | None = None
    gen_device_current: int | None = None
    gen_device_max: int | None = None
    gen_host_max: int | None = None
    width_current: int | None = None
    width_max: int | None = None
    replay_counter: int | None = None


@frozen
class Fabric:
    """NVLink fabric registration (NVSwitch systems): state ``Completed``, status ``Success``."""

    state: str | None = None
    status: str | None = None
    clique_id: int | None = None
    cluster_uuid: str | None = None
    health_summary: str | None = None
    health: Mapping[str, str] = field(default_factory=dict)


@frozen
class Reset:
    """Whether the driver asks for a reset (<= 570) and its recovery action (570+)."""

    required: bool | None = None
    drain_recommended: bool | None = None
    recovery_action: str | None = None


@frozen
class NvLink:
    """One NVLink of a GPU: ``state`` is ``up``, ``down`` or ``inactive``."""

    link: int
    state: str
    speed_gbps: float | None = None


@frozen
class Gpu:
    """One GPU as the driver reports it. See the module docstring for None and ``unread``."""

    position: int  # order in the driver's enumeration (NVML index, nvidia-smi "GPU N")
    index: int | None = None  # minor number: /dev/nvidia<index>
    name: str | None = None
    brand: str | None = None
    architecture: str | None = None
    uuid: str | None = None
    bus_id: str | None = None  # as the driver prints it: 00000000:9B:00.0
    pci_address: str | None = None  # normalised like sysfs: 0000:9b:00.0
    pci_device_id: str | None = None  # 233010DE: device 2330, vendor 10DE
    serial: str | None = None
    vbios: str | None = None
    board_id: str | None = None
    board_part_number: str | None = None
    gpu_part_number: str | None = None
    persistence_mode: bool | None = None
    compute_mode: str | None = None
    virtualization_mode: str | None = None  # None, Pass-Through, VGPU...
    driver_model: str | None = None  # WDDM/TCC on Windows
    performance_state: str | None = None
    mig: Mig = field(default_factory=Mig)
    ecc: Ecc = field(default_factory=Ecc)
    retired_pages: RetiredPages = field(default_factory=RetiredPages)
    remapped_rows: RemappedRows = field(default_factory=RemappedRows)
    clock_events: ClockEvents = field(default_factory=ClockEvents)
    temperature: Temperature = field(default_factory=Temperature)
    power: Power = field(default_factory=Power)
    clocks: Clocks = field(default_factory=Clocks)
    utilization: Utilization = field(default_factory=Utilization)
    memory: Memory = field(default_factory=Memory)
    pcie: Pcie = field(default_factory=Pcie)
    fabric: Fabric = field(default_factory=Fabric)
    reset: Reset = field(default_factory=Reset)
    lost: bool = False  # the driver answered "GPU is lost" for this GPU
    processes: int | None = None
    nvlinks: tuple[NvLink, ...] | None = None  # filled by NVML; from nvidia-smi see facts.gpu
    unread: Mapping[str, str] = field(default_factory=dict)

    @property
    def subject(self) -> str:
        """The check subject for this GPU, ``values.busid.gpu_subject``: ``gpu:00000000:9B:00.0``
        however the source spelled the bus id (UUID, then position, without one)."""
        return gpu_subject(self.bus_id or self.pci_address, self.uuid, self.position)


@frozen
class GpuInventory:
    """Every GPU the driver reports, where the list came from and, when empty, why.

    ``source`` is ``nvml``, ``nvidia-smi`` (``-q -x``, or nvidia-smi's own failure text:
    ``error`` holds it), ``nvidia-smi -q``, ``nvidia-smi table`` or ``none`` (nothing could
    be read: ``error`` says why). ``attempts`` says why each source tried before was not
    used. ``unread["gpus"]`` notes a text that was cut off.
    """

    source: str = "none"
    gpus: tuple[Gpu, ...] = ()
    driver_version: str | None = None
    cuda_version: str | None = None
    attached_gpus: int | None = None  # as reported; trimmed recordings hold fewer blocks
    error: str | None = None
    attempts: Mapping[str, str] = field(default_factory=dict)
    unread: Mapping[str, str] = field(default_factory=dict)

"""What each NVML reading becomes in the Gpu model: ``FIELDS`` (model keys, the NVML
function or a small struct reader, its arguments, a converter) and the readers and
converters it names. The calls are made by ``dolmen.host.gpu.nvml``."""

from __future__ import annotations

import ctypes
import uuid
from collections.abc import Callable, Mapping
from typing import Any

import pynvml

from dolmen.host.gpu.model import MigDevice, NvLink
from dolmen.values.busid import BusId

NVLINK_LINKS = 18  # Hopper and Blackwell have 18 links per GPU, Ampere 12

_MIB = 1 << 20


def as_text(value: Any) -> str:
    """An NVML string (bytes from older nvidia-ml-py) as text."""
    return value.decode(errors="replace") if isinstance(value, bytes) else str(value)


def cuda_text(version: int) -> str:
    """NVML's CUDA driver version integer as nvidia-smi prints it."""
    return f"{version // 1000}.{version % 1000 // 10}"  # 13000 -> "13.0"


def _field(lib: Any, handle: Any, field_id: int) -> Any:
    """One NVML field value (nvmlDeviceGetFieldValues), raising its own error code."""
    value = lib.nvmlDeviceGetFieldValues(handle, [field_id])[0]
    if value.nvmlReturn != pynvml.NVML_SUCCESS:
        raise pynvml.NVMLError(value.nvmlReturn)
    member = ("dVal", "uiVal", "ulVal", "ullVal", "sllVal", "siVal", "usVal")[value.valueType]
    return getattr(value.value, member)


def _pci(lib: Any, h: Any) -> tuple[str, str | None, str]:
    info = lib.nvmlDeviceGetPciInfo(h)
    bus = as_text(info.busId)
    return bus, _sysfs(bus), f"{info.pciDeviceId:08X}"


def _sysfs(bus: str) -> str | None:
    parsed = BusId.parse(bus)
    return parsed.sysfs if parsed else None


def _fabric(lib: Any, h: Any) -> tuple[str, str, int, str]:
    info = lib.c_nvmlGpuFabricInfo_t()
    lib.nvmlDeviceGetGpuFabricInfo(h, ctypes.byref(info))
    if info.state == pynvml.NVML_GPU_FABRIC_STATE_NOT_SUPPORTED:
        raise pynvml.NVMLError(pynvml.NVML_ERROR_NOT_SUPPORTED)
    states = {1: "Not Started", 2: "In Progress", 3: "Completed"}
    status = "Success" if info.status == 0 else as_text(lib.nvmlErrorString(info.status))
    cluster = str(uuid.UUID(bytes=bytes(info.clusterUuid)))
    return states.get(info.state, str(info.state)), status, int(info.cliqueId), cluster


def _mig_devices(lib: Any, h: Any) -> tuple[MigDevice, ...]:
    if lib.nvmlDeviceGetMigMode(h)[0] != 1:
        return ()
    out = []
    for i in range(lib.nvmlDeviceGetMaxMigDeviceCount(h)):
        try:
            mh = lib.nvmlDeviceGetMigDeviceHandleByIndex(h, i)
        except pynvml.NVMLError_NotFound:
            continue  # an unused slot
        out.append(
            MigDevice(
                index=i,
                gpu_instance_id=lib.nvmlDeviceGetGpuInstanceId(mh),
                compute_instance_id=lib.nvmlDeviceGetComputeInstanceId(mh),
                memory_total_mib=lib.nvmlDeviceGetMemoryInfo(mh).total // _MIB,
            )
        )
    return tuple(out)


def _processes(lib: Any, h: Any) -> int:
    # nvidia-smi lists compute and graphics processes; a C+G process is in both lists.
    procs = [*lib.nvmlDeviceGetComputeRunningProcesses(h)]
    procs += lib.nvmlDeviceGetGraphicsRunningProcesses(h)
    return len({p.pid for p in procs})


def _nvlinks(lib: Any, h: Any) -> tuple[NvLink, ...]:
    """Links 0..17; the first link NVML refuses ends the list (none: no NVLink)."""
    try:
        mbps = _field(lib, h, pynvml.NVML_FI_DEV_NVLINK_SPEED_MBPS_COMMON)
        speed: float | None = mbps / 1000 if mbps else None
    except (pynvml.NVMLError, AttributeError):  # the speed is a bonus; the states still count
        speed = None
    links = []
    for link in range(NVLINK_LINKS):
        try:
            up = lib.nvmlDeviceGetNvLinkState(h, link) == pynvml.NVML_FEATURE_ENABLED
        except (pynvml.NVMLError_NotSupported, pynvml.NVMLError_InvalidArgument):
            break
        links.append(NvLink(link, "up" if up else "inactive", speed if up else None))
    return tuple(links)


_BRANDS = {1: "Quadro", 2: "Tesla", 3: "NVS", 4: "GRID", 5: "GeForce", 6: "TITAN"}
_BRANDS |= {7: "NVIDIA Virtual Applications", 8: "NVIDIA Virtual PC"}
_BRANDS |= {9: "NVIDIA Virtual Compute Server", 10: "NVIDIA RTX Virtual Workstation"}
_BRANDS |= {11: "NVIDIA Cloud Gaming", 12: "Quadro RTX", 13: "NVIDIA RTX", 14: "NVIDIA"}
_ARCHS = {2: "Kepler", 3: "Maxwell", 4: "Pascal", 5: "Volta", 6: "Turing", 7: "Ampere"}
_ARCHS |= {8: "Ada Lovelace", 9: "Hopper", 10: "Blackwell"}
_COMPUTE = {0: "Default", 1: "Exclusive_Thread", 2: "Prohibited", 3: "Exclusive_Process"}

_VIRT = {0: "None", 1: "Pass-Through", 2: "VGPU", 3: "Host VGPU", 4: "Host VSGA"}

_RECOVERY = {0: "None", 1: "GPU Reset", 2: "Node Reboot", 3: "Drain P2P", 4: "Drain and Reset"}

# nvmlClocksEventReason* bits, named as the nvidia-smi parser names them.
_EVENT_BITS = {
    0x1: "gpu_idle",
    0x2: "applications_clocks_setting",
    0x4: "sw_power_cap",
    0x8: "hw_slowdown",
    0x10: "sync_boost",
    0x20: "sw_thermal_slowdown",
    0x40: "hw_thermal_slowdown",
    0x80: "hw_power_brake_slowdown",
    0x100: "display_clocks_setting",
}


def _named(table: Mapping[int, str]) -> Callable[[int], str]:
    return lambda code: table.get(code, f"unknown ({code})")


def _on(value: int) -> bool:
    return bool(value == pynvml.NVML_FEATURE_ENABLED)


def _watts(milliwatts: int) -> float:
    return milliwatts / 1000


def _pair(conv: Callable[[Any], Any]) -> Callable[[Any], tuple[Any, Any]]:
    return lambda pair: (conv(pair[0]), conv(pair[1]))


Reader = str | Callable[[Any, Any], Any]  # an NVML function name, or f(lib, handle)

E, T = pynvml.NVML_MEMORY_ERROR_TYPE_CORRECTED, pynvml.NVML_MEMORY_ERROR_TYPE_UNCORRECTED
VOL, AGG = pynvml.NVML_VOLATILE_ECC, pynvml.NVML_AGGREGATE_ECC
TH = pynvml.NVML_TEMPERATURE_THRESHOLD_SHUTDOWN, pynvml.NVML_TEMPERATURE_THRESHOLD_SLOWDOWN

CAUSE_SBE = pynvml.NVML_PAGE_RETIREMENT_CAUSE_MULTIPLE_SINGLE_BIT_ECC_ERRORS

CAUSE_DBE = pynvml.NVML_PAGE_RETIREMENT_CAUSE_DOUBLE_BIT_ECC_ERROR


COUNTER_MAX = (1 << 64) - 1  # NVML counters are unsigned long long


def count(value: Any) -> int:
    """An NVML counter: an int (not a bool) in 0..2**64-1; ValueError else, so a wrapped,
    negative or mocked-up answer is "malformed" (unknown), never a count a check trusts."""
    if isinstance(value, bool) or not isinstance(value, int) or not 0 <= value <= COUNTER_MAX:
        raise ValueError(f"not a counter: {value!r}"[:80])
    return value


def _identity(value: Any) -> Any:
    return value


def convert(conv: Callable[[Any], Any], fn: Callable[..., Any], *args: Any) -> Any:
    """``conv`` of what ``fn(*args)`` answers (one FIELDS row read)."""
    return conv(fn(*args))


# keys -> reader -> extra arguments -> converter of the answer
FIELDS: tuple[tuple[str | tuple[str, ...], Reader, tuple[Any, ...], Callable[[Any], Any]], ...] = (
    ("index", "nvmlDeviceGetMinorNumber", (), int),
    ("name", "nvmlDeviceGetName", (), as_text),
    ("brand", "nvmlDeviceGetBrand", (), _named(_BRANDS)),
    ("architecture", "nvmlDeviceGetArchitecture", (), _named(_ARCHS)),
    ("uuid", "nvmlDeviceGetUUID", (), as_text),
    (("bus_id", "pci_address", "pci_device_id"), _pci, (), _identity),
    ("serial", "nvmlDeviceGetSerial", (), as_text),
    ("vbios", "nvmlDeviceGetVbiosVersion", (), as_text),
    ("board_id", "nvmlDeviceGetBoardId", (), lambda v: f"0x{v:x}"),
    ("board_part_number", "nvmlDeviceGetBoardPartNumber", (), as_text),
    ("persistence_mode", "nvmlDeviceGetPersistenceMode", (), _on),
    ("compute_mode", "nvmlDeviceGetComputeMode", (), _named(_COMPUTE)),
    ("virtualization_mode", "nvmlDeviceGetVirtualizationMode", (), _named(_VIRT)),
    ("performance_state", "nvmlDeviceGetPerformanceState", (), lambda p: f"P{p}"),
    (("mig.current", "mig.pending"), "nvmlDeviceGetMigMode", (), _pair(_on)),
    ("mig.devices", _mig_devices, (), _identity),
    (("ecc.mode", "ecc.mode_pending"), "nvmlDeviceGetEccMode", (), _pair(_on)),
    ("ecc.volatile.correctable", "nvmlDeviceGetTotalEccErrors", (E, VOL), count),
    ("ecc.volatile.uncorrectable", "nvmlDeviceGetTotalEccErrors", (T, VOL), count),
    ("ecc.aggregate.correctable", "nvmlDeviceGetTotalEccErrors", (E, AGG), count),
    ("ecc.aggregate.uncorrectable", "nvmlDeviceGetTotalEccErrors", (T, AGG), count),
    ("retired_pages.sbe", "nvmlDeviceGetRetiredPages", (CAUSE_SBE,), len),
    ("retired_pages.dbe", "nvmlDeviceGetRetiredPages", (CAUSE_DBE,), len),
    ("retired_pages.pending", "nvmlDeviceGetRetiredPagesPendingStatus", (), _on),
    (
        tuple(f"remapped_rows.{k}" for k in ("correctable", "uncorrectable", "pending", "failure")),
        "nvmlDeviceGetRemappedRows",
        (),
        lambda r: (count(r[0]), count(r[1]), bool(r[2]), bool(r[3])),
    ),
    (
        "clock_events.active",
        "nvmlDeviceGetCurrentClocksEventReasons",
        (),
        lambda bits: tuple(name for bit, name in _EVENT_BITS.items() if bits & bit),
    ),
    ("temperature.gpu", "nvmlDeviceGetTemperature", (pynvml.NVML_TEMPERATURE_GPU,), int),
    ("temperature.memory", lambda lib, h: _field(lib, h, pynvml.NVML_FI_DEV_MEMORY_TEMP), (), int),
    ("temperature.shutdown", "nvmlDeviceGetTemperatureThreshold", (TH[0],), int),
    ("temperature.slowdown", "nvmlDeviceGetTemperatureThreshold", (TH[1],), int),
    (
        "temperature.max_operating",
        "nvmlDeviceGetTemperatureThreshold",
        (pynvml.NVML_TEMPERATURE_THRESHOLD_GPU_MAX,),
        int,
    ),
    (
        "temperature.memory_max",
        "nvmlDeviceGetTemperatureThreshold",
        (pynvml.NVML_TEMPERATURE_THRESHOLD_MEM_MAX,),
        int,
    ),
    ("temperature.tlimit", "nvmlDeviceGetMarginTemperature", (), int),
    ("power.draw", "nvmlDeviceGetPowerUsage", (), _watts),
    ("power.limit", "nvmlDeviceGetPowerManagementLimit", (), _watts),
    ("power.enforced_limit", "nvmlDeviceGetEnforcedPowerLimit", (), _watts),
    ("power.default_limit", "nvmlDeviceGetPowerManagementDefaultLimit", (), _watts),
    (
        ("power.min_limit", "power.max_limit"),
        "nvmlDeviceGetPowerManagementLimitConstraints",
        (),
        _pair(_watts),
    ),
    ("clocks.graphics", "nvmlDeviceGetClockInfo", (pynvml.NVML_CLOCK_GRAPHICS,), int),
    ("clocks.sm", "nvmlDeviceGetClockInfo", (pynvml.NVML_CLOCK_SM,), int),
    ("clocks.memory", "nvmlDeviceGetClockInfo", (pynvml.NVML_CLOCK_MEM,), int),
    ("clocks.graphics_max", "nvmlDeviceGetMaxClockInfo", (pynvml.NVML_CLOCK_GRAPHICS,), int),
    ("clocks.sm_max", "nvmlDeviceGetMaxClockInfo", (pynvml.NVML_CLOCK_SM,), int),
    ("clocks.memory_max", "nvmlDeviceGetMaxClockInfo", (pynvml.NVML_CLOCK_MEM,), int),
    (
        ("utilization.gpu", "utilization.memory"),
        "nvmlDeviceGetUtilizationRates",
        (),
        lambda u: (int(u.gpu), int(u.memory)),
    ),
    (
        ("memory.total_mib", "memory.used_mib"),
        "nvmlDeviceGetMemoryInfo",
        (),
        lambda m: (m.total // _MIB, m.used // _MIB),
    ),
    ("pcie.gen_current", "nvmlDeviceGetCurrPcieLinkGeneration", (), int),
    ("pcie.gen_max", "nvmlDeviceGetMaxPcieLinkGeneration", (), int),
    ("pcie.gen_device_max", "nvmlDeviceGetGpuMaxPcieLinkGeneration", (), int),
    ("pcie.width_current", "nvmlDeviceGetCurrPcieLinkWidth", (), int),
    ("pcie.width_max", "nvmlDeviceGetMaxPcieLinkWidth", (), int),
    ("pcie.replay_counter", "nvmlDeviceGetPcieReplayCounter", (), count),
    (
        ("fabric.state", "fabric.status", "fabric.clique_id", "fabric.cluster_uuid"),
        _fabric,
        (),
        _identity,
    ),
    (
        "reset.recovery_action",
        lambda lib, h: _field(lib, h, pynvml.NVML_FI_DEV_GET_GPU_RECOVERY_ACTION),
        (),
        _named(_RECOVERY),
    ),
    ("processes", _processes, (), _identity),
    ("nvlinks", _nvlinks, (), _identity),
)

# Model keys NVML has no call for (nvidia-smi derives or prints them itself).
NOT_READ_KEYS = (
    "gpu_part_number",
    "driver_model",
    "ecc.sram_threshold_exceeded",
    "ecc.channel_repair_pending",
    "ecc.tpc_repair_pending",
    "temperature.tlimit_shutdown",
    "temperature.tlimit_slowdown",
    "temperature.tlimit_max_operating",
    "memory.reserved_mib",
    "pcie.gen_device_current",
    "pcie.gen_host_max",
    "fabric.health_summary",
    "reset.required",
    "reset.drain_recommended",
)

"""Labels of ``nvidia-smi -q`` text and the XML tags they print as with ``-q -x``.

Most labels are their tag in words ("Product Name" is ``product_name``); the
table below lists the others, per parent tag, as seen in the real ``-q`` texts
of drivers 535 to 610 (../shared/recordings nvidia-smi-text and -captures) next
to the XML of the same drivers. A label that maps to ``None`` is a wrapper the
XML does not have (610's "GPU Ceiling Power Limit" holds the limits the XML
keeps in <gpu_power_readings>); ``a/b`` is a leaf the XML nests one level down.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Mapping

_CLOCKS = {"Graphics": "graphics_clock", "SM": "sm_clock", "Memory": "mem_clock"}
_CLOCKS |= {"Video": "video_clock"}
_POWER: Mapping[str, str | None] = {
    "Instantaneous Power Draw": "instant_power_draw",
    "GPU Ceiling Power Limit": None,
}
_ECC_SET = {
    "SRAM Uncorrectable SEC-DED": "sram_uncorrectable_secded",
    "Texture Shared": "texture_shm",
}
_MODES = {"Current": "current_{}", "Pending": "pending_{}"}

# parent tag -> label -> tag (or path, or None: hoist the children)
_TAGS: Mapping[str, Mapping[str, str | None]] = {
    "": {"KMD Version": "driver_version", "CUDA UMD Version": "cuda_version"},  # Windows 610
    "gpu": {
        "GPU UUID": "uuid",
        "Serial Number": "serial",
        "FRU Part Number": "gpu_fru_part_number",
        "MIG Device": "mig_device",
        "GPU PDI": "pdi",
    },
    "mig_mode": {k: v.format("mig") for k, v in _MODES.items()},
    "driver_model": {k: v.format("dm") for k, v in _MODES.items()},
    "ecc_mode": {k: v.format("ecc") for k, v in _MODES.items()},
    "gpu_operation_mode": {k: v.format("gom") for k, v in _MODES.items()},
    "volatile": _ECC_SET,
    "aggregate": _ECC_SET,
    "retired_pages": {
        "Single Bit ECC": "multiple_single_bit_retirement/retired_count",
        "Double Bit ECC": "double_bit_retirement/retired_count",
        "Pending Page Blacklist": "pending_blacklist",
        "Pending Page Retirement": "pending_retirement",
    },
    "remapped_rows": {
        "Correctable Error": "remapped_row_corr",
        "Uncorrectable Error": "remapped_row_unc",
        "Pending": "remapped_row_pending",
        "Remapping Failure Occurred": "remapped_row_failure",
        "Bank Remap Availability Histogram": "row_remapper_histogram",
    },
    "row_remapper_histogram": {
        k: f"row_remapper_histogram_{k.lower()}" for k in ("Max", "High", "Partial", "Low", "None")
    },
    "temperature": {
        "GPU Current Temp": "gpu_temp",
        "GPU T.Limit Temp": "gpu_temp_tlimit",
        "GPU Current T.Limit Temp": "gpu_temp_tlimit",  # 610
        "GPU Shutdown Temp": "gpu_temp_max_threshold",
        "GPU Slowdown Temp": "gpu_temp_slow_threshold",
        "GPU Max Operating Temp": "gpu_temp_max_gpu_threshold",
        "Memory Current Temp": "memory_temp",
        "Memory Max Operating Temp": "gpu_temp_max_mem_threshold",
        "GPU Shutdown T.Limit Temp": "gpu_temp_max_tlimit_threshold",
        "GPU Slowdown T.Limit Temp": "gpu_temp_slow_tlimit_threshold",
        "GPU Max Operating T.Limit Temp": "gpu_temp_max_gpu_tlimit_threshold",
        "Memory Max Operating T.Limit Temp": "gpu_temp_max_mem_tlimit_threshold",
    },
    "gpu_power_readings": _POWER,
    "power_readings": _POWER,
    "module_power_readings": _POWER,
    "gpu_memory_power_readings": _POWER,
    "clocks": _CLOCKS,
    "max_clocks": _CLOCKS,
    "applications_clocks": _CLOCKS,
    "default_applications_clocks": _CLOCKS,
    "deferred_clocks": _CLOCKS,
    "max_customer_boost_clocks": _CLOCKS,
    "utilization": {
        "Gpu": "gpu_util",
        "GPU": "gpu_util",
        "Memory": "memory_util",
        "Encoder": "encoder_util",
        "Decoder": "decoder_util",
        "JPEG": "jpeg_util",
        "OFA": "ofa_util",
    },
    "pci": {
        "Bus": "pci_bus",
        "Device": "pci_device",
        "Domain": "pci_domain",
        "Device Id": "pci_device_id",
        "Bus Id": "pci_bus_id",
        "Sub System Id": "pci_sub_system_id",
        "GPU Link Info": "pci_gpu_link_info",
        "Bridge Chip": "pci_bridge_chip",
        "Replays Since Reset": "replay_counter",
        "Replay Number Rollovers": "replay_rollover_counter",
        "Tx Throughput": "tx_util",
        "Rx Throughput": "rx_util",
    },
    "pci_gpu_link_info": {"PCIe Generation": "pcie_gen", "Link Width": "link_widths"},
    "pcie_gen": {
        "Max": "max_link_gen",
        "Current": "current_link_gen",
        "Device Current": "device_current_link_gen",
        "Device Max": "max_device_link_gen",
        "Host Max": "max_host_link_gen",
    },
    "link_widths": {"Max": "max_link_width", "Current": "current_link_width"},
    "fabric": {"CliqueId": "cliqueId", "ClusterUUID": "clusterUuid"},
    "clocks_event_reasons_counters": {
        "SW Power Capping": "clocks_event_reasons_counters_sw_power_cap",
        "Sync Boost": "clocks_event_reasons_counters_sync_boost",
        "SW Thermal Slowdown": "clocks_event_reasons_counters_sw_therm_slowdown",
        "HW Thermal Slowdown": "clocks_event_reasons_counters_hw_therm_slowdown",
        "HW Power Braking": "clocks_event_reasons_counters_hw_power_brake",
    },
    "processes": {"Process ID": "process_info"},  # one per process, as <process_info>
    "mig_device": {
        "FB Memory Usage": "fb_memory_usage",
        "Shared FB Memory Usage": "fb_memory_usage",  # 590+
    },
}

# Clock event (throttle before R535) reasons: <clocks_event_reason_gpu_idle> and so on.
_REASONS = {"Idle": "gpu_idle", "Display Clock Setting": "display_clocks_setting"}
_REASON_PARENTS = {
    "clocks_event_reasons": "clocks_event_reason_",
    "clocks_throttle_reasons": "clocks_throttle_reason_",
}
_WORDS = re.compile(r"[^a-z0-9]+")


@functools.lru_cache(maxsize=4096)  # 8 GPU blocks repeat the same few hundred labels
def tag_of(parent: str, label: str) -> str | None:
    """The XML tag (or ``a/b`` path) of ``label`` under the element tagged ``parent``
    (``""``: the top of the report); None for a wrapper whose children go to ``parent``."""
    prefix = _REASON_PARENTS.get(parent)
    if prefix is not None:
        return prefix + (_REASONS.get(label) or words(label))
    table = _TAGS.get(parent, {})
    if label in table:
        return table[label]
    return words(label)


def words(label: str) -> str:
    """The tag a label reads as: lower case words joined by ``_`` (``"Bus Id"``: ``bus_id``)."""
    return _WORDS.sub("_", label.lower()).strip("_") or "_"


def value_of(tag: str, value: str) -> str:
    """The value as the XML prints it where the text differs: ``0x233010DE`` is ``233010DE``."""
    if tag == "pci_device_id":
        return value.strip().removeprefix("0x")
    return value

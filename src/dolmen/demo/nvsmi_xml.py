"""A synthetic ``nvidia-smi -q -x`` document for the sample bundles (``dolmen demo``).

The real recordings of ../shared/recordings may not ship in the package, so a sample's
GPUs are rendered from a few values, in the element names and layout of the driver's
``nvsmi_device_v13.dtd`` (580-series output): the same parser reads them as a capture.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any
from xml.sax.saxutils import escape

Tree = Mapping[str, Any]


def gpu_block(gpu: Mapping[str, Any], index: int) -> Tree:
    """One ``<gpu>``'s elements, from a sample's ``[[gpu]]`` row (bus id, faults)."""
    remap_failure = "Yes" if gpu.get("remap_failure") else "No"
    dbe = int(gpu.get("dram_uncorrectable", 0))
    return {
        "product_name": gpu.get("name", "NVIDIA H100 80GB HBM3"),
        "product_brand": "NVIDIA",
        "product_architecture": gpu.get("architecture", "Hopper"),
        "persistence_mode": "Enabled",
        "mig_mode": {"current_mig": "Disabled", "pending_mig": "Disabled"},
        "serial": f"165000000{index:04d}",
        "uuid": f"GPU-d0170000-0000-4000-8000-{index:012d}",
        "minor_number": str(index),
        "vbios_version": "96.00.99.00.01",
        "board_part_number": "692-2G520-0200-000",
        "gpu_part_number": "2330-885-A1",
        "pci": {
            "pci_bus_id": gpu["bus_id"],
            "pci_device_id": gpu.get("pci_device_id", "0x233010DE"),
            "pci_gpu_link_info": {
                "pcie_gen": {
                    "max_link_gen": "5",
                    "current_link_gen": "5",
                    "device_current_link_gen": "5",
                    "max_device_link_gen": "5",
                    "max_host_link_gen": "5",
                },
                "link_widths": {"max_link_width": "16x", "current_link_width": "16x"},
            },
            "replay_counter": "0",
        },
        "performance_state": "P0",
        "clocks_event_reasons": {
            f"clocks_event_reason_{name}": "Not Active"
            for name in (
                "gpu_idle",
                "applications_clocks_setting",
                "sw_power_cap",
                "hw_slowdown",
                "hw_thermal_slowdown",
                "hw_power_brake_slowdown",
                "sync_boost",
                "sw_thermal_slowdown",
                "display_clocks_setting",
            )
        },
        "fb_memory_usage": {"total": "81559 MiB", "reserved": "551 MiB", "used": "0 MiB"},
        "compute_mode": "Default",
        "utilization": {"gpu_util": "0 %", "memory_util": "0 %"},
        "ecc_mode": {"current_ecc": "Enabled", "pending_ecc": "Enabled"},
        "ecc_errors": {
            "volatile": _ecc(dbe),
            "aggregate": {**_ecc(dbe), "sram_threshold_exceeded": "No"},
        },
        "retired_pages": {
            "multiple_single_bit_retirement": {"retired_count": "N/A"},
            "double_bit_retirement": {"retired_count": "N/A"},
            "pending_blacklist": "N/A",
            "pending_retirement": "N/A",
        },
        "remapped_rows": {
            "remapped_row_corr": "0",
            "remapped_row_unc": str(dbe),
            "remapped_row_pending": "No",
            "remapped_row_failure": remap_failure,
        },
        "temperature": {
            "gpu_temp": f"{gpu.get('temperature', 33)} C",
            "gpu_temp_max_threshold": "92 C",
            "gpu_temp_slow_threshold": "89 C",
            "gpu_temp_max_gpu_threshold": "87 C",
            "memory_temp": f"{gpu.get('temperature', 33) + 4} C",
            "gpu_temp_max_mem_threshold": "95 C",
        },
        "gpu_power_readings": {
            "average_power_draw": "72.41 W",
            "instant_power_draw": "72.33 W",
            "current_power_limit": "700.00 W",
            "requested_power_limit": "700.00 W",
            "default_power_limit": "700.00 W",
            "min_power_limit": "200.00 W",
            "max_power_limit": "700.00 W",
        },
        "clocks": {"graphics_clock": "345 MHz", "sm_clock": "345 MHz", "mem_clock": "2619 MHz"},
        "max_clocks": {
            "graphics_clock": "1980 MHz",
            "sm_clock": "1980 MHz",
            "mem_clock": "2619 MHz",
        },
        "fabric": {"state": "Completed", "status": "Success"},
        "gpu_recovery_action": "None",
        "processes": None,
    }


def _ecc(dbe: int) -> dict[str, str]:
    return {
        "sram_correctable": "0",
        "sram_uncorrectable_parity": "0",
        "sram_uncorrectable_secded": "0",
        "dram_correctable": "0",
        "dram_uncorrectable": str(dbe),
    }


def render(gpus: Sequence[Mapping[str, Any]], driver: str, cuda: str) -> str:
    """The whole document for ``gpus`` (``[[gpu]]`` rows of a sample)."""
    lines = [
        '<?xml version="1.0" ?>',
        '<!DOCTYPE nvidia_smi_log SYSTEM "nvsmi_device_v13.dtd">',
        "<nvidia_smi_log>",
        "\t<timestamp>Sun Oct 25 15:00:00 2026</timestamp>",
        f"\t<driver_version>{escape(driver)}</driver_version>",
        f"\t<cuda_version>{escape(cuda)}</cuda_version>",
        f"\t<attached_gpus>{len(gpus)}</attached_gpus>",
    ]
    for i, gpu in enumerate(gpus):
        block = gpu_block(gpu, i)
        if gpu.get("lost"):  # the driver answers this for every value of a GPU off the bus
            block = _lost(block)
        lines.append(f'\t<gpu id="{escape(gpu["bus_id"])}">')
        _elements(block, 2, lines)
        lines.append("\t</gpu>")
    lines.append("</nvidia_smi_log>")
    return "\n".join(lines) + "\n"


def _lost(tree: Tree) -> dict[str, Any]:
    return {k: (_lost(v) if isinstance(v, Mapping) else "GPU is lost") for k, v in tree.items()}


def _elements(tree: Tree, depth: int, out: list[str]) -> None:
    pad = "\t" * depth
    for tag, value in tree.items():
        if value is None:
            out.append(f"{pad}<{tag}>\n{pad}</{tag}>")
        elif isinstance(value, Mapping):
            out.append(f"{pad}<{tag}>")
            _elements(value, depth + 1, out)
            out.append(f"{pad}</{tag}>")
        else:
            out.append(f"{pad}<{tag}>{escape(str(value))}</{tag}>")

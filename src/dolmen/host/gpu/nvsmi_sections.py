"""What each part of ``<gpu>`` in ``nvidia-smi -q -x`` becomes in the Gpu model.

``FIELDS`` maps one model key to the element paths that have held it across
drivers, most preferred first; the functions below read the sections that are
more than one leaf (ECC counters in two layouts, clock event reasons under two
names, MIG devices, processes). PROVENANCE.md section 3 of the recordings lists
the renames covered here.
"""

from __future__ import annotations

import xml.etree.ElementTree as ET
from collections.abc import Mapping
from typing import Any

from dolmen.host.gpu import nvsmi_values as v
from dolmen.host.gpu.model import ABSENT, DEPRECATED, NOT_SUPPORTED, MigDevice

_LINK = "pci/pci_gpu_link_info/"


def _both(leaf: str) -> tuple[str, str]:
    # gpu_power_readings (535+) replaced power_readings; same leaf names for the limits.
    return (f"gpu_power_readings/{leaf}", f"power_readings/{leaf}")


# key in the Gpu model -> paths under <gpu>, most preferred first -> converter
FIELDS: tuple[tuple[str, tuple[str, ...], v.Conv], ...] = (
    ("index", ("minor_number",), v.integer),
    ("name", ("product_name",), v.text),
    ("brand", ("product_brand",), v.text),
    ("architecture", ("product_architecture",), v.text),
    ("uuid", ("uuid",), v.text),
    ("pci_device_id", ("pci/pci_device_id",), v.text),
    ("serial", ("serial",), v.text),
    ("vbios", ("vbios_version",), v.text),
    ("board_id", ("board_id",), v.text),
    ("board_part_number", ("board_part_number",), v.text),
    ("gpu_part_number", ("gpu_part_number",), v.text),
    ("persistence_mode", ("persistence_mode",), v.flag),
    ("compute_mode", ("compute_mode",), v.text),
    ("virtualization_mode", ("gpu_virtualization_mode/virtualization_mode",), v.text),
    ("driver_model", ("driver_model/current_dm",), v.text),
    ("performance_state", ("performance_state",), v.text),
    ("mig.current", ("mig_mode/current_mig",), v.flag),
    ("mig.pending", ("mig_mode/pending_mig",), v.flag),
    ("ecc.mode", ("ecc_mode/current_ecc",), v.flag),
    ("ecc.mode_pending", ("ecc_mode/pending_ecc",), v.flag),
    ("ecc.sram_threshold_exceeded", ("ecc_errors/aggregate/sram_threshold_exceeded",), v.flag),
    ("ecc.channel_repair_pending", ("ecc_errors/channel_repair_pending",), v.flag),
    ("ecc.tpc_repair_pending", ("ecc_errors/tpc_repair_pending",), v.flag),
    (
        "retired_pages.sbe",
        ("retired_pages/multiple_single_bit_retirement/retired_count",),
        v.count,
    ),
    ("retired_pages.dbe", ("retired_pages/double_bit_retirement/retired_count",), v.count),
    # pending_blacklist was renamed pending_retirement; newer drivers print both.
    (
        "retired_pages.pending",
        ("retired_pages/pending_retirement", "retired_pages/pending_blacklist"),
        v.flag,
    ),
    ("remapped_rows.correctable", ("remapped_rows/remapped_row_corr",), v.count),
    ("remapped_rows.uncorrectable", ("remapped_rows/remapped_row_unc",), v.count),
    ("remapped_rows.pending", ("remapped_rows/remapped_row_pending",), v.flag),
    ("remapped_rows.failure", ("remapped_rows/remapped_row_failure",), v.flag),
    ("temperature.gpu", ("temperature/gpu_temp",), v.celsius),
    ("temperature.memory", ("temperature/memory_temp",), v.celsius),
    ("temperature.shutdown", ("temperature/gpu_temp_max_threshold",), v.celsius),
    ("temperature.slowdown", ("temperature/gpu_temp_slow_threshold",), v.celsius),
    ("temperature.max_operating", ("temperature/gpu_temp_max_gpu_threshold",), v.celsius),
    ("temperature.memory_max", ("temperature/gpu_temp_max_mem_threshold",), v.celsius),
    ("temperature.tlimit", ("temperature/gpu_temp_tlimit",), v.celsius),
    ("temperature.tlimit_shutdown", ("temperature/gpu_temp_max_tlimit_threshold",), v.celsius),
    ("temperature.tlimit_slowdown", ("temperature/gpu_temp_slow_tlimit_threshold",), v.celsius),
    (
        "temperature.tlimit_max_operating",
        ("temperature/gpu_temp_max_gpu_tlimit_threshold",),
        v.celsius,
    ),
    # 570 dropped gpu_power_readings/power_draw for instant_power_draw + average_power_draw.
    # module_ and gpu_memory_power_readings use the same leaf names: only this parent counts.
    (
        "power.draw",
        (
            "gpu_power_readings/instant_power_draw",
            "gpu_power_readings/average_power_draw",
            *_both("power_draw"),
        ),
        v.watts,
    ),
    (
        "power.limit",
        ("gpu_power_readings/requested_power_limit", "power_readings/power_limit"),
        v.watts,
    ),
    (
        "power.enforced_limit",
        ("gpu_power_readings/current_power_limit", "power_readings/enforced_power_limit"),
        v.watts,
    ),
    ("power.default_limit", _both("default_power_limit"), v.watts),
    ("power.min_limit", _both("min_power_limit"), v.watts),
    ("power.max_limit", _both("max_power_limit"), v.watts),
    ("clocks.graphics", ("clocks/graphics_clock",), v.mhz),
    ("clocks.sm", ("clocks/sm_clock",), v.mhz),
    ("clocks.memory", ("clocks/mem_clock",), v.mhz),
    ("clocks.graphics_max", ("max_clocks/graphics_clock",), v.mhz),
    ("clocks.sm_max", ("max_clocks/sm_clock",), v.mhz),
    ("clocks.memory_max", ("max_clocks/mem_clock",), v.mhz),
    ("utilization.gpu", ("utilization/gpu_util",), v.percent),
    ("utilization.memory", ("utilization/memory_util",), v.percent),
    ("memory.total_mib", ("fb_memory_usage/total",), v.mib),
    ("memory.used_mib", ("fb_memory_usage/used",), v.mib),
    ("memory.reserved_mib", ("fb_memory_usage/reserved",), v.mib),
    ("pcie.gen_current", (_LINK + "pcie_gen/current_link_gen",), v.integer),
    ("pcie.gen_max", (_LINK + "pcie_gen/max_link_gen",), v.integer),
    ("pcie.gen_device_current", (_LINK + "pcie_gen/device_current_link_gen",), v.integer),
    ("pcie.gen_device_max", (_LINK + "pcie_gen/max_device_link_gen",), v.integer),
    ("pcie.gen_host_max", (_LINK + "pcie_gen/max_host_link_gen",), v.integer),
    ("pcie.width_current", (_LINK + "link_widths/current_link_width",), v.width),
    ("pcie.width_max", (_LINK + "link_widths/max_link_width",), v.width),
    ("pcie.replay_counter", ("pci/replay_counter",), v.count),
    ("fabric.state", ("fabric/state",), v.text),
    ("fabric.status", ("fabric/status",), v.text),
    ("fabric.clique_id", ("fabric/cliqueId",), v.integer),
    ("fabric.cluster_uuid", ("fabric/clusterUuid",), v.text),
    ("fabric.health_summary", ("fabric/health/summary",), v.text),
    # gpu_reset_status went away in 580; gpu_recovery_action (570+) replaces it.
    ("reset.required", ("gpu_reset_status/reset_required",), v.flag),
    ("reset.drain_recommended", ("gpu_reset_status/drain_and_reset_recommended",), v.flag),
    ("reset.recovery_action", ("gpu_recovery_action",), v.text),
)


# Fields read together: a board that reads one of them supports them all, so a blank or
# N/A sibling is an unreadable counter there, not an unsupported feature.
_GROUPS = (
    ("retired_pages.sbe", "retired_pages.dbe"),
    (
        "remapped_rows.correctable",
        "remapped_rows.uncorrectable",
        "remapped_rows.pending",
        "remapped_rows.failure",
    ),
)


def siblings(values: Mapping[str, Any], unread: dict[str, str]) -> None:
    """Turn a skippable reason into "unreadable" where a sibling of ``_GROUPS`` was read."""
    for group in _GROUPS:
        read = [k for k in group if k in values]
        for key in group:
            if read and key in unread and _skippable(unread[key]):
                unread[key] = f"unreadable: {key} is blank while {read[0]} reads"


# Kepler..Volta: ecc_errors/<set>/{single,double}_bit/<location>+total.
# Turing+: flat sram_/dram_ counters; 570+ splits sram_uncorrectable into parity + secded.
_CORRECTABLE = ("single_bit.total", "sram_correctable", "dram_correctable")
_UNCORRECTABLE = (
    "double_bit.total",
    "sram_uncorrectable",
    "sram_uncorrectable_parity",
    "sram_uncorrectable_secded",
    "dram_uncorrectable",
)


def ecc(idx: v.Index, values: dict[str, Any], unread: dict[str, str]) -> None:
    """``ecc.volatile`` and ``ecc.aggregate``: totals over whichever layout is there, and the
    raw per-location counters."""
    for which in ("volatile", "aggregate"):
        key = f"ecc.{which}"
        node = idx.get(f"ecc_errors/{which}")
        if node is None:
            unread[f"{key}.correctable"] = unread[f"{key}.uncorrectable"] = v.absent(
                idx, f"ecc_errors/{which}/total"
            )
            continue
        nums: dict[str, int] = {}
        whys: dict[str, str] = {}
        for child in node:
            for leaf in child if len(child) else (child,):
                name = f"{child.tag}.{leaf.tag}" if leaf is not child else leaf.tag
                text = (leaf.text or "").strip()
                try:
                    nums[name] = v.count(text)
                except ValueError:
                    why = (v.sentinel(text) or f"malformed: {text[:40]!r}") if text else v.EMPTY
                    whys[name] = _required(name, why, text, values.get("ecc.mode"))
        if which == "aggregate":
            sources = idx.get("ecc_errors/aggregate_uncorrectable_sram_sources")
            for tag, n in v.numbers(sources, "", v.count).items():
                nums[f"uncorrectable_sram_sources.{tag}"] = n
        values[f"{key}.raw"] = nums
        for part, names in (("correctable", _CORRECTABLE), ("uncorrectable", _UNCORRECTABLE)):
            total, why = _total(nums, whys, names)
            if total is None:
                unread[f"{key}.{part}"] = why
            else:
                values[f"{key}.{part}"] = total


# The DRAM counters and the per-kind totals: with ECC on, the driver counts them on every
# board that has ECC, so a blank or N/A there hides errors (on-chip SRAM locations such
# as texture_memory, or 570's parity/SEC-DED split, do read N/A on healthy boards).
_DRAM = ("dram_correctable", "dram_uncorrectable", "single_bit.total", "double_bit.total")


def _required(name: str, why: str, text: str, ecc_on: object) -> str:
    """``why`` for a counter that is not a number, made "unreadable" where ECC is on and the
    counter is one the board must keep (a skip there would pass a GPU as error-free)."""
    if ecc_on is True and name in _DRAM and _skippable(why):
        shown = repr(text[:40]) if text else "empty"
        return f"unreadable: ECC is enabled but {name} is {shown}"
    return why


def _skippable(reason: str) -> bool:
    return reason.startswith((NOT_SUPPORTED, DEPRECATED))


def _total(
    nums: Mapping[str, int], whys: Mapping[str, str], names: tuple[str, ...]
) -> tuple[int | None, str]:
    """The sum of the readable counters; None when one that should be readable is not
    (a lost GPU, a permission): a partial sum could hide the errors a check looks for."""
    hard = [whys[n] for n in names if n in whys and not _skippable(whys[n])]
    if hard:
        return None, hard[0]
    got = [nums[n] for n in names if n in nums]
    if got:
        return sum(got), ""
    soft = [whys[n] for n in names if n in whys]
    return None, soft[0] if soft else ABSENT


# R535 renamed clocks_throttle_reasons/clocks_throttle_reason_* to clocks_event_reasons/
# clocks_event_reason_*; 580 added counters whose names abbreviate "thermal" and drop
# "_slowdown" from the power brake: map them onto the reason names.
_REASON_SETS = (
    ("clocks_event_reasons", "clocks_event_reason_"),
    ("clocks_throttle_reasons", "clocks_throttle_reason_"),
)
_COUNTER_NAMES = {
    "sw_therm_slowdown": "sw_thermal_slowdown",
    "hw_therm_slowdown": "hw_thermal_slowdown",
    "hw_power_brake": "hw_power_brake_slowdown",
}


def clock_events(idx: v.Index, values: dict[str, Any], unread: dict[str, str]) -> None:
    """``clock_events``: the active reasons under either name, and the 580+ counters."""
    tag, prefix = next(((t, p) for t, p in _REASON_SETS if t in idx), _REASON_SETS[0])
    active: list[str] = []
    reason = ""
    readable = False
    for child in idx.get(tag, ()):
        try:
            if v.flag((child.text or "").strip()):
                active.append(child.tag.removeprefix(prefix))
            readable = True
        except KeyError:
            reason = reason or v.read_leaf(idx, f"{tag}/{child.tag}")[1] or "malformed"
    if readable:
        values["clock_events.active"] = tuple(active)
    else:
        unread["clock_events.active"] = reason or v.absent(idx, f"{tag}/x")
    counters = v.numbers(
        idx.get("clocks_event_reasons_counters"),
        "clocks_event_reasons_counters_",
        v.microseconds,
        unread,
        "clock_events.counters_us",
    )
    values["clock_events.counters_us"] = {_COUNTER_NAMES.get(k, k): n for k, n in counters.items()}


def fabric_health(node: ET.Element | None) -> dict[str, str]:
    """fabric/health leaves that hold a value (580+: summary, bandwidth, route_unhealthy...)."""
    return {
        c.tag: v.text(c.text or "")
        for c in (node if node is not None else ())
        if c.text and c.text.strip() and not v.sentinel(c.text)
    }


def mig_devices(node: ET.Element | None) -> tuple[MigDevice, ...]:
    """MIG devices; ``<mig_devices>None</mig_devices>`` when MIG is off."""
    return tuple(
        MigDevice(
            index=v.optional(v.integer, md.findtext("index")),
            gpu_instance_id=v.optional(v.integer, md.findtext("gpu_instance_id")),
            compute_instance_id=v.optional(v.integer, md.findtext("compute_instance_id")),
            memory_total_mib=v.optional(v.mib, md.findtext("fb_memory_usage/total")),
        )
        for md in (node.findall("mig_device") if node is not None else ())
    )


def processes(idx: v.Index, values: dict[str, Any], unread: dict[str, str]) -> None:
    """``processes``: how many processes use the GPU (compute and graphics)."""
    node = idx.get("processes")
    text = (node.text or "").strip() if node is not None else ""
    why = ABSENT if node is None else (v.sentinel(text) if text else None)
    if why:
        unread["processes"] = why
    elif node is not None:
        values["processes"] = sum(1 for c in node if c.tag == "process_info")

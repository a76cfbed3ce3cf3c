"""NVLink state per GPU against the knowledge base's link count and speed for its model.

The KB gives, per model, the number of links and the total bidirectional NVLink
bandwidth (datasheet figures: H100 SXM 18 links, 900 GB/s; A100 SXM 12, 600 GB/s).
One link's speed in one direction is therefore ``bandwidth / links / 2`` (25 GB/s
on both); ``nvidia-smi nvlink -s`` prints the signalling rate, at or above it
(26.562 GB/s on H100, 25 GB/s on A100), so a link below it has trained down.

PCIe boards have no links (``not supported``, or empty output); boards that take
an NVLink bridge (A100/H100 PCIe, L40-class cards have none) list their links as
inactive when no bridge is fitted, which is a build choice, not a fault. Links said
Down (``dcgmi nvlink --link-status``'s ``D``, which names no model) with none up fail:
DCGM lists a link only where the GPU has one.
"""

from __future__ import annotations

from typing import Any

from dolmen.checks.context import Context
from dolmen.checks.model import Level, Outcome, check, failed, passed, skipped, unknown
from dolmen.facts.gpu_nvlink import MIG_MODE
from dolmen.host.gpu import NOT_SUPPORTED, Gpu, NvLink
from dolmen.kb.gpus import GpuModel

_EPSILON = 0.01  # GB/s: nvidia-smi prints three decimals


@check(
    "interconnect.nvlink.state",
    title="Every NVLink of each GPU is up, as many links as the model has, at full speed",
    level=Level.QUICK,
    needs=("gpu",),
    when=("nvidia_gpu",),
    remedy=(
        "Look at nvidia-smi nvlink -s and nvidia-smi nvlink -e; on NVSwitch systems check the "
        "fabric manager (systemctl status nvidia-fabricmanager). Reset the GPUs when idle "
        "(nvidia-smi -r) or reboot; links that stay down or slow mean a baseboard/NVSwitch "
        "fault: drain the node (<drain>) and open a service case."
    ),
    source=(
        "KB gpus.toml nvlink_links and nvlink_bandwidth_gbs (NVIDIA datasheets); aznhc: no "
        "inactive link, 18 links at 26.562 GB/s on H100"
    ),
)
def nvlink_state(ctx: Context) -> list[Outcome]:
    """Reads ``nvlinks``/``nvlink_notes`` (NVML, else nvidia-smi nvlink -s) per GPU."""
    facts = ctx.gpu
    gpus = facts.gpus or facts.nvlink_gpus  # nvidia-smi nvlink -s alone names its GPUs
    if not gpus:
        why = facts.error or "the driver lists no GPU"
        return [unknown("host", f"GPU inventory unreadable: {why}")]
    if "nvlinks" in facts.unread:
        return [unknown("host", f"NVLink state unreadable: {facts.unread['nvlinks']}")]
    return [_judge(ctx, g) for g in gpus]


def _judge(ctx: Context, gpu: Gpu) -> Outcome:
    model = ctx.kb.gpus.match(gpu.name) if gpu.name else None
    links = ctx.gpu.nvlinks.get(gpu.subject)
    note = ctx.gpu.nvlink_notes.get(gpu.subject)
    expected = model.nvlink_links if model else None
    speed = _per_link_speed(model)
    ev: dict[str, Any] = {
        "model": gpu.name,
        "kb_model": model.id if model else None,
        "expected_links": expected,
        "expected_speed_gbps": speed,
    }
    s = gpu.subject
    if links is None:
        return unknown(s, "NVLink state not reported for this GPU", **ev)
    if note == NOT_SUPPORTED:
        return skipped(s, "this board has no NVLink", **ev)
    if note == MIG_MODE:  # the links exist; nvidia-smi would not list them
        return unknown(
            s, "NVLink state not reported: nvidia-smi does not query it in MIG mode", **ev
        )
    if not links and note is None:
        if expected:
            return unknown(s, f"no NVLink listed for this GPU ({expected} expected)", **ev)
        # Drivers before the "does not have or support NVLink" line printed nothing at all.
        return skipped(s, "no NVLink listed: a board without NVLink", **ev)
    up = [link for link in links if link.state == "up"]
    if not up:
        if expected:
            return failed(s, f"all NVLinks inactive ({expected} expected up)", **ev)
        if model is not None:
            return skipped(s, f"no NVLink bridge fitted ({model.name}: every link inactive)", **ev)
        down = [link.link for link in links if link.state == "down"]
        if down:  # said Down (dcgmi's D), not nvidia-smi's bridge-less "<inactive>"
            ev |= {"links_up": 0, "links_reported": len(links), "down": down}
            return failed(s, f"all {len(links)} NVLinks reported, none up ({len(down)} Down)", **ev)
        return unknown(s, "every NVLink inactive, and the model is not in the KB", **ev)
    return _compare(s, links, up, expected, speed, ev)


def _compare(
    s: str,
    links: tuple[NvLink, ...],
    up: list[NvLink],
    expected: int | None,
    speed: float | None,
    ev: dict[str, Any],
) -> Outcome:
    down = [f"{link.link}:{link.state}" for link in links if link.state != "up"]
    slow = [
        f"{link.link}:{link.speed_gbps:g} GB/s"
        for link in up
        if speed is not None and link.speed_gbps is not None and link.speed_gbps < speed - _EPSILON
    ]
    ev |= {"links_up": len(up), "links_reported": len(links), "down": down, "slow": slow}
    problems: list[str] = []
    if down:
        problems.append(f"{len(down)} link(s) not up ({', '.join(down)})")
    if expected is not None and len(links) < expected:
        problems.append(f"{len(links)} link(s) reported, the model has {expected}")
    if slow:
        problems.append(f"{len(slow)} link(s) below {speed:g} GB/s ({', '.join(slow)})")
    if problems:
        return failed(s, "; ".join(problems), **ev)
    rates = sorted({link.speed_gbps for link in up if link.speed_gbps is not None})
    at = f" at {'/'.join(f'{r:g}' for r in rates)} GB/s" if rates else ""
    if expected is None:
        return passed(s, f"{len(up)} NVLink(s) up{at} (model's link count not in the KB)", **ev)
    return passed(s, f"{len(up)}/{expected} NVLinks up{at}", **ev)


def _per_link_speed(model: GpuModel | None) -> float | None:
    """One link's one-way speed: the datasheet's bidirectional total over links, halved."""
    if model is None or not model.nvlink_links or not model.nvlink_bandwidth_gbs:
        return None
    return model.nvlink_bandwidth_gbs / model.nvlink_links / 2

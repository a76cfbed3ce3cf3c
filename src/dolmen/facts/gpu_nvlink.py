"""The ``nvidia-smi nvlink -s`` parser: per GPU, each link's state and speed.

Output, one block per GPU::

    GPU 0: NVIDIA A100-SXM4-80GB (UUID: GPU-...)
         Link 0: 25 GB/s
         Link 3: <inactive>

or the line saying why there are none ("NVML: Unable to retrieve NVLink information as all
links are inactive", "... does not have or support NVLink").
"""

from __future__ import annotations

import re

from dolmen.frozen import frozen
from dolmen.frozen.regex import pattern
from dolmen.host.gpu import NOT_SUPPORTED, NvLink


@frozen
class NvlinkGpu:
    """One GPU's block in ``nvidia-smi nvlink -s``."""

    position: int  # "GPU <n>:" (the NVML index, the order of ``nvidia-smi -q -x``)
    name: str | None = None
    uuid: str | None = None
    links: tuple[NvLink, ...] = ()
    note: str | None = None  # "all links inactive", "not supported", MIG_MODE


# "Nvlink queries are not supported for Devices in MIG mode": nvidia-smi says nothing of the
# links of a GPU in MIG mode (the H100 and H200 MIG captures of nvidia_gpu_exporter).
MIG_MODE = "not queried in MIG mode"

_GPU_LINE = pattern(r"^GPU (\d+): (.*?)(?: \(UUID: ([^)]*)\))?\s*$")
_LINK_LINE = pattern(r"^\s*Link (\d+): (.*?)\s*$")
_SPEED = pattern(r"^(\d+(?:\.\d+)?) GB/s$")


def parse_nvlink_status(text: str) -> tuple[NvlinkGpu, ...]:
    """``nvidia-smi nvlink -s``: per GPU, each link's state and speed (``Link 0: 25 GB/s``,
    ``Link 3: <inactive>``), or the line saying why there are none. Unknown lines are ignored;
    empty output (a board without NVLink) gives no GPUs."""
    blocks: list[tuple[re.Match[str], list[str]]] = []
    for line in text.splitlines():
        if m := _GPU_LINE.match(line):
            blocks.append((m, []))
        elif blocks:
            blocks[-1][1].append(line)
    return tuple(_block(head, lines) for head, lines in blocks)


def _block(head: re.Match[str], lines: list[str]) -> NvlinkGpu:
    links: list[NvLink] = []
    note = None
    for line in lines:
        lower = line.lower()
        if m := _LINK_LINE.match(line):
            speed = _SPEED.match(m[2])
            if speed:
                links.append(NvLink(int(m[1]), "up", float(speed[1])))
            else:
                state = "inactive" if "inactive" in m[2].lower() else "down"
                links.append(NvLink(int(m[1]), state))
        elif "all links are inactive" in lower:  # "NVML: Unable to retrieve NVLink ..."
            note = "all links inactive"
        elif "does not have or support nvlink" in lower:
            note = NOT_SUPPORTED
        elif "not supported for devices in mig mode" in lower:
            note = MIG_MODE
    return NvlinkGpu(int(head[1]), head[2], head[3], tuple(links), note)


# dcgmi nvlink --link-status: "gpuId 0:" then one letter per link, in link order.
DCGMI_ARGV = ("dcgmi", "nvlink", "--link-status")
_DCGMI_GPU = pattern(r"^\s*gpuId (\d{1,4}):\s*$")
_DCGMI_STATES = {"U": "up", "D": "down", "X": "disabled"}  # "_": not supported, no link


def parse_dcgmi_link_status(text: str) -> tuple[NvlinkGpu, ...]:
    """``dcgmi nvlink --link-status``: per gpuId (DCGM's GPU id, NVML's index, so the
    ``position``), a row of link states, ``U`` up, ``D`` down, ``X`` disabled, ``_`` not
    supported (no link there). The NvSwitches part and unknown lines are ignored; a GPU
    whose row was cut off has no links, and one with only ``_`` has no NVLink."""
    out: list[NvlinkGpu] = []
    gpu: int | None = None
    for line in text.splitlines():
        if m := _DCGMI_GPU.match(line):
            gpu = int(m[1])
            out.append(NvlinkGpu(gpu))
            continue
        cells = line.split()
        if gpu is None or not cells or not all(c in "UDX_" and len(c) == 1 for c in cells):
            if line.strip():
                gpu = None  # a row belongs right under its gpuId line
            continue
        links = tuple(NvLink(i, _DCGMI_STATES[c]) for i, c in enumerate(cells) if c != "_")
        note = NOT_SUPPORTED if not links else None
        out[-1] = NvlinkGpu(gpu, links=out[-1].links + links, note=note)
        gpu = None
    return tuple(out)

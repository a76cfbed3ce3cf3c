"""nvidia-smi's own failure texts: what it prints instead of (or before) its output.

A driver that is not loaded, a library that does not match it, a GPU whose handle
cannot be had: nvidia-smi says so in one line, in every output format (XML, ``-q``
text, the default table). These lines are the precise reason a check can show,
so each reader looks for them before calling the output malformed.
"""

from __future__ import annotations

import re

from dolmen.frozen.regex import pattern
from dolmen.host.gpu.build import model_keys
from dolmen.host.gpu.model import GPU_LOST, Gpu
from dolmen.values.busid import BusId

# Whole-output failures, as nvidia-smi prints them (lower case): exit 9, 6, 18, 12, 255.
_WHOLE = (
    "couldn't communicate with the nvidia driver",  # exit 9: the module is not loaded
    "no devices were found",  # exit 6: the driver sees no GPU
    "failed to initialize nvml",  # exit 18 "Driver/library version mismatch", "Unknown Error"
    "couldn't find libnvidia-ml.so",  # exit 12: the userspace is not installed
    "nvml library version",  # the line after "version mismatch" (535+)
    "no supported gpus were found",
)
# "Unable to determine the device handle for GPU 0000:3B:00.0: Unknown Error" (also "gpu",
# no space before the bus id on older drivers, and "GPU is lost.  Reboot the system ...").
_HANDLE = pattern(
    r"unable to determine the device handle for gpu\s*"
    r"([0-9a-f]{1,8}:[0-9a-f]{2}:[0-9a-f]{2}\.[0-7])\s*:\s*(.*)$",
    re.IGNORECASE,
)
MAX_LINE = 300  # longer lines are output, not one of these messages


def failure_lines(text: str) -> tuple[str, ...]:
    """The failure lines of ``text``, whitespace collapsed, in order (none: ``()``)."""
    lowered = text.lower()
    if "device handle" not in lowered and not any(phrase in lowered for phrase in _WHOLE):
        return ()  # the usual case, decided without a pass per line
    found: list[str] = []
    for raw in text.splitlines():
        line = " ".join(raw.split())
        if not line or len(line) > MAX_LINE:
            continue
        lower = line.lower()
        if _HANDLE.search(line) or any(phrase in lower for phrase in _WHOLE):
            found.append(line)
    return tuple(found)


def is_failure_line(line: str) -> bool:
    """Whether one line is a failure line (the text readers skip these as they go)."""
    return bool(failure_lines(line))


def handle_failures(lines: tuple[str, ...]) -> tuple[tuple[str, str], ...]:
    """``(bus id as nvidia-smi prints it, what it said)`` for each GPU without a handle."""
    out: list[tuple[str, str]] = []
    for line in lines:
        m = _HANDLE.search(line)
        bus = BusId.parse(m[1]) if m else None
        if m and bus is not None and all(b != bus.nvsmi for b, _ in out):
            out.append((bus.nvsmi, m[2].strip() or "no reason given"))
    return tuple(out)


def handle_gpu(position: int, bus_id: str, said: str) -> Gpu:
    """The GPU nvidia-smi could not open: its bus id, and every field unread for that reason.
    It is ``lost``: whatever the words ("GPU is lost", "Unknown Error", "GPU requires
    reset"), the driver cannot reach it, so ``gpu.lost`` fails on it and no other check
    reads it."""
    why = (
        GPU_LOST
        if "gpu is lost" in said.lower()
        else f"unreadable: nvidia-smi: Unable to determine the device handle: {said[:120]}"
    )
    bus = BusId.parse(bus_id)
    every = sorted(model_keys() - {"position", "lost", "unread", "bus_id", "pci_address"})
    return Gpu(
        position=position,
        bus_id=bus_id,
        pci_address=bus.sysfs if bus else None,
        lost=True,
        unread=dict.fromkeys(every, why),
    )


def describe(lines: tuple[str, ...], what: str) -> str:
    """The inventory's ``error`` for these lines: ``command failed: <what>: <lines>``."""
    return f"command failed: {what}: {'; '.join(lines)}"


def with_handle_gpus(gpus: tuple[Gpu, ...], lines: tuple[str, ...]) -> tuple[Gpu, ...]:
    """``gpus`` and, after them, a lost GPU for each handle failure not already listed."""
    listed = {BusId.parse(g.bus_id) for g in gpus}
    extra = [(bus, said) for bus, said in handle_failures(lines) if BusId.parse(bus) not in listed]
    start = max((g.position for g in gpus), default=-1) + 1
    return gpus + tuple(handle_gpu(start + i, bus, said) for i, (bus, said) in enumerate(extra))

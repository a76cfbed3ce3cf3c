"""A stand-in for pynvml that serves a host tree's ``nvidia-smi -q -x`` through the NVML calls
Meta's GCM health checks make, so GCM can run its real check code on the same 8-GPU data
dolmen reads. Used only by bench/validate_vs_gcm.py, in GCM's own virtualenv.

The tree is named by $DOLMEN_BENCH_TREE. Everything is parsed once, at nvmlInit, which
favours GCM: real NVML initialisation costs more than parsing one XML file.
"""

from __future__ import annotations

import importlib.util
import os
import re
import sys
import xml.etree.ElementTree as ET
from collections import namedtuple
from typing import Any

# The real pynvml (nvidia-ml-py, installed with GCM) gives the constants and error
# classes GCM imports; only the device calls below are replaced.
_here = os.path.dirname(os.path.abspath(__file__))
_real = next(
    os.path.join(p, f)
    for p in sys.path
    if p and os.path.abspath(p) != _here
    for f in ("pynvml/nvml.py", "pynvml.py")  # the pynvml package (11.x) or nvidia-ml-py
    if os.path.isfile(os.path.join(p, f))
)
_spec = importlib.util.spec_from_file_location("_real_pynvml", _real)
assert _spec is not None and _spec.loader is not None
_module = importlib.util.module_from_spec(_spec)
sys.modules["_real_pynvml"] = _module  # it looks itself up there while loading
_spec.loader.exec_module(_module)
globals().update({k: v for k, v in vars(_module).items() if not k.startswith("__")})
NVMLError = _module.NVMLError
NVMLError_NotSupported = _module.NVMLError_NotSupported
_Memory = namedtuple("_Memory", "total free used")
_Util = namedtuple("_Util", "gpu memory")
_GPUS: list[ET.Element] = []


def nvmlInit() -> None:
    path = os.path.join(os.environ["DOLMEN_BENCH_TREE"], "commands", "nvidia-smi%20-q%20-x")
    _GPUS[:] = ET.parse(path).getroot().findall("gpu")


def nvmlShutdown() -> None:
    _GPUS.clear()


def nvmlDeviceGetCount() -> int:
    return len(_GPUS)


def nvmlDeviceGetHandleByIndex(index: int) -> int:
    if not 0 <= index < len(_GPUS):
        raise NVMLError("invalid argument")
    return index


def _num(gpu: int, path: str) -> int:
    text = (_GPUS[gpu].findtext(path) or "N/A").strip()
    m = re.match(r"^-?\d+(\.\d+)?", text)
    if m is None:
        raise NVMLError_NotSupported(path)
    return int(float(m.group(0)))


def nvmlDeviceGetTemperature(handle: int, sensor: int) -> int:
    return _num(handle, "temperature/gpu_temp")


def nvmlDeviceGetPowerUsage(handle: int) -> int:
    for p in ("gpu_power_readings/instant_power_draw", "gpu_power_readings/power_draw"):
        try:
            return _num(handle, p) * 1000
        except NVMLError_NotSupported:
            continue
    raise NVMLError_NotSupported("power")


def nvmlDeviceGetEnforcedPowerLimit(handle: int) -> int:
    return _num(handle, "gpu_power_readings/current_power_limit") * 1000


def nvmlDeviceGetTotalEccErrors(handle: int, kind: int, counter: int) -> int:
    where = "volatile" if counter == _module.NVML_VOLATILE_ECC else "aggregate"
    names = (
        ["dram_correctable", "sram_correctable"]
        if kind == _module.NVML_MEMORY_ERROR_TYPE_CORRECTED
        else ["dram_uncorrectable", "sram_uncorrectable_parity", "sram_uncorrectable_secded"]
    )
    total = 0
    for name in names:
        try:
            total += _num(handle, f"ecc_errors/{where}/{name}")
        except NVMLError_NotSupported:
            continue
    return total


def nvmlDeviceGetRetiredPages(handle: int, cause: int) -> list[int]:
    return []  # Hopper has no page retirement: rows are remapped instead


def nvmlDeviceGetRetiredPagesPendingStatus(handle: int) -> int:
    return 0


def nvmlDeviceGetRemappedRows(handle: int) -> tuple[int, int, int, int]:
    g = _GPUS[handle]

    def yes(p: str) -> int:
        return int((g.findtext(p) or "").strip() == "Yes")

    return (
        _num(handle, "remapped_rows/remapped_row_corr"),
        _num(handle, "remapped_rows/remapped_row_unc"),
        yes("remapped_rows/remapped_row_pending"),
        yes("remapped_rows/remapped_row_failure"),
    )


def nvmlDeviceGetComputeRunningProcesses(handle: int) -> list[Any]:
    return []


def nvmlDeviceGetMemoryInfo(handle: int) -> Any:
    mib = 1 << 20
    return _Memory(
        _num(handle, "fb_memory_usage/total") * mib,
        _num(handle, "fb_memory_usage/free") * mib,
        _num(handle, "fb_memory_usage/used") * mib,
    )


def nvmlDeviceGetUtilizationRates(handle: int) -> Any:
    return _Util(_num(handle, "utilization/gpu_util"), _num(handle, "utilization/memory_util"))


def nvmlDeviceGetVbiosVersion(handle: int) -> str:
    return (_GPUS[handle].findtext("vbios_version") or "").strip()


def nvmlDeviceGetApplicationsClock(handle: int, clock: int) -> int:
    raise NVMLError_NotSupported("applications clocks are deprecated on this driver")

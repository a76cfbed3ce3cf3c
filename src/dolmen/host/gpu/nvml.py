"""The GPU inventory through NVML (nvidia-ml-py), on a live host whose libnvidia-ml loads.

Each field is one row of ``FIELDS``: the model key(s), the NVML function (a
name looked up on the library, or a small function for calls that need a
struct) with its extra arguments, and a converter. A call that fails leaves the
field None and records why, in the same words as the nvidia-smi parser:
NotSupported -> "not supported", NoPermission -> "insufficient permissions",
GpuIsLost -> "gpu is lost". The table and its converters are in ``nvml_fields``. pynvml is
imported only in host/gpu: here and in nvml_fields (the inventory), nvml_worker (the
bounded read in a forked worker, and the one library load all share), versions (the
driver's and NVML's versions) and nvml_sampler (samples during a workload).
"""

from __future__ import annotations

import contextlib
import functools
from collections.abc import Callable
from typing import Any

import pynvml

from dolmen.host.gpu.build import build, model_keys
from dolmen.host.gpu.model import (
    DEPRECATED,
    GPU_LOST,
    NO_PERMISSION,
    NOT_SUPPORTED,
    Gpu,
    GpuInventory,
)
from dolmen.host.gpu.nvml_fields import FIELDS, NOT_READ_KEYS, as_text, convert, cuda_text

NOT_READ = "not supported: not read through NVML"


def read_nvml(lib: Any = pynvml) -> GpuInventory | str:
    """Every GPU NVML sees, or the reason NVML is unavailable (then nvidia-smi is used).

    ``lib`` is the pynvml module; tests pass an object with the same functions.
    """
    try:
        lib.nvmlInit()
    except (pynvml.NVMLError, OSError) as e:
        return f"not loaded: {e}"
    try:
        count = lib.nvmlDeviceGetCount()
        values: dict[str, Any] = {}
        unread: dict[str, str] = {}
        _call(lambda: as_text(lib.nvmlSystemGetDriverVersion()), "driver_version", values, unread)
        _call(
            lambda: cuda_text(lib.nvmlSystemGetCudaDriverVersion()), "cuda_version", values, unread
        )
        gpus = tuple(_gpu(lib, i) for i in range(count))
    except pynvml.NVMLError as e:
        return f"unreadable: NVML: {e}"
    finally:
        with contextlib.suppress(pynvml.NVMLError):
            lib.nvmlShutdown()
    return GpuInventory(source="nvml", gpus=gpus, attached_gpus=count, unread=unread, **values)


def reason(error: Exception) -> str:
    """The reason words for an NVML error (docs/architecture.md)."""
    if isinstance(error, pynvml.NVMLError_NotSupported | pynvml.NVMLError_FunctionNotFound):
        return NOT_SUPPORTED
    if isinstance(error, pynvml.NVMLError_Deprecated):
        return DEPRECATED
    if isinstance(error, pynvml.NVMLError_NoPermission):
        return NO_PERMISSION
    if isinstance(error, pynvml.NVMLError_GpuIsLost):
        return GPU_LOST
    return f"unreadable: NVML: {error}"


def _call(
    fn: Callable[[], Any],
    keys: str | tuple[str, ...],
    values: dict[str, Any],
    unread: dict[str, str],
) -> bool:
    """Run one NVML read; store its value(s) or the reason for each key. True if lost."""
    names = (keys,) if isinstance(keys, str) else keys
    try:
        got = fn()
    except pynvml.NVMLError as e:
        for k in names:
            unread[k] = reason(e)
        return isinstance(e, pynvml.NVMLError_GpuIsLost)
    except AttributeError as e:  # an nvidia-ml-py older than the call or struct it needs
        for k in names:
            unread[k] = f"{NOT_SUPPORTED}: nvidia-ml-py has no {e.name or e}"
        return False
    except (ValueError, TypeError, KeyError) as e:
        for k in names:
            unread[k] = f"malformed: NVML answer ({e.__class__.__name__}: {e})"
        return False
    values.update(zip(names, got) if isinstance(keys, tuple) else ((keys, got),))
    return False


def _gpu(lib: Any, position: int) -> Gpu:
    try:
        h = lib.nvmlDeviceGetHandleByIndex(position)
    except pynvml.NVMLError as e:
        # No handle, no field: every one of them is unread for the same reason.
        every = sorted(model_keys() - {"position", "lost", "unread"})
        lost = isinstance(e, pynvml.NVMLError_GpuIsLost)
        return Gpu(position=position, lost=lost, unread=dict.fromkeys(every, reason(e)))
    values: dict[str, Any] = {"position": position}
    unread: dict[str, str] = dict.fromkeys(NOT_READ_KEYS, NOT_READ)
    lost = False
    for keys, reader, args, conv in FIELDS:
        if isinstance(reader, str):
            fn = getattr(lib, reader, None)
            if fn is None:  # an older nvidia-ml-py
                for k in (keys,) if isinstance(keys, str) else keys:
                    unread[k] = f"{NOT_SUPPORTED}: nvidia-ml-py has no {reader}"
                continue
            thunk = functools.partial(convert, conv, fn, h, *args)
        else:
            thunk = functools.partial(convert, conv, reader, lib, h)
        lost |= _call(thunk, keys, values, unread)
    _ecc_on_needs_counts(values, unread)
    values["lost"] = lost
    values["unread"] = unread
    return build(Gpu, values)


def _ecc_on_needs_counts(values: dict[str, Any], unread: dict[str, str]) -> None:
    """With ECC on the driver counts errors: a total it calls unsupported is unknown, not a
    skip (nvidia-smi's reader applies the same rule to blank and N/A DRAM counters)."""
    if values.get("ecc.mode") is not True:
        return
    for key, why in list(unread.items()):
        if (
            key.startswith("ecc.")
            and key.endswith("correctable")
            and why.startswith((NOT_SUPPORTED, DEPRECATED))
        ):
            unread[key] = f"unreadable: ECC is enabled but NVML says {why!r}"

"""The NVML library's own version, for ``dolmen version``.

``nvmlSystemGetNVMLVersion`` names the libnvidia-ml that answers (``12.535.183.01``), which
is what a bug report needs beside the kernel module's version (/proc/driver/nvidia/version):
the two differ after a driver upgrade without a reboot. The call runs in the NVML worker
process (``nvml_worker``), within a deadline, since a wedged driver blocks nvmlInit in the
kernel and ``dolmen version`` must still print.
"""

from __future__ import annotations

import contextlib
from typing import Any

from dolmen.host.deadline import Deadline

TIMEOUT = 10.0  # nvmlInit alone; far less than the inventory's 60 s, nothing else is read


def read_nvml_version(
    *, lib: Any = None, timeout: float = TIMEOUT
) -> tuple[str | None, str | None]:
    """(the NVML version, None), or (None, why it is unknown: ``not loaded: ...``,
    ``not installed: nvidia-ml-py``, ``timed out ...``)."""
    try:
        import pynvml
    except ImportError:
        return None, "not installed: nvidia-ml-py (pip install nvidia-ml-py)"
    from dolmen.host.gpu import nvml_worker

    lib = pynvml if lib is None else lib
    loaded = nvml_worker.load_library(lib)
    if loaded:
        return None, loaded
    got = nvml_worker._in_child(lambda _tell: _ask(lib), timeout, False, Deadline(None))
    if isinstance(got, tuple):
        return got
    return None, str(got)


def _ask(lib: Any) -> tuple[str | None, str | None]:
    """In the worker: init, ask, shut down."""
    import pynvml

    from dolmen.host.gpu.nvml import reason
    from dolmen.host.gpu.nvml_fields import as_text

    try:
        lib.nvmlInit()
    except (pynvml.NVMLError, OSError) as e:
        return None, f"not loaded: {e}"
    try:
        return as_text(lib.nvmlSystemGetNVMLVersion()), None
    except pynvml.NVMLError as e:
        return None, reason(e)
    except AttributeError as e:  # a stand-in or an nvidia-ml-py without the call
        return None, f"not supported: nvidia-ml-py has no {e.name or e}"
    finally:
        with contextlib.suppress(pynvml.NVMLError):
            lib.nvmlShutdown()

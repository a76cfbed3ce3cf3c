"""``[gpu]``: GPU persistence mode, e.g. ``persistence_mode = true``.

Read through the GPU inventory (NVML on a live host, ``nvidia-smi -q -x``
otherwise); set with ``nvidia-smi -pm 1``, which also works while
nvidia-persistenced runs (it forwards the request to the daemon). The mode
set this way lasts until the driver unloads; keeping it across reboots is
nvidia-persistenced's job (a ``[services]`` entry), which the plan says.
A host tree can be read but not changed (it cannot run nvidia-smi).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from dolmen.host import Host
from dolmen.host.gpu.read import read_gpus
from dolmen.tune.model import ApplyFailed, Change, Reading, Target
from dolmen.tune.settings.base import Entry, Setting

NVSMI_TIMEOUT = 60.0  # -pm on 8 GPUs without the daemon initialises each one


def _on_off(flag: bool) -> str:
    return "on" if flag else "off"


class GpuPersistence(Setting):
    """GPU persistence mode (all GPUs at once)."""

    section = "gpu"
    persists = False  # lasts until the driver unloads (module docstring)
    title = "GPU persistence mode"

    def key(self, raw: str) -> str:
        if raw != "persistence_mode":
            raise ValueError(f"unknown [gpu] key {raw!r}; valid keys: persistence_mode")
        return raw

    def validate(self, key: str, value: Any, fields: Mapping[str, Any]) -> str:
        if not isinstance(value, bool):
            raise ValueError("persistence_mode takes true or false")
        return _on_off(value)

    def targets(self, host: Host, entry: Entry) -> list[Target] | str:
        inv = read_gpus(host)
        if not inv.gpus:
            return f"no NVIDIA GPU readable here ({inv.error or 'the driver lists none'})"
        return [
            Target(
                self.section,
                entry.key,
                f"persistence mode ({len(inv.gpus)} GPU{'s' if len(inv.gpus) > 1 else ''})",
                entry.value,
                "",
                entry.origin,
                entry.source,
            )
        ]

    def read(self, host: Host, target: Target) -> Reading:
        modes = [g.persistence_mode for g in read_gpus(host).gpus]
        if not modes or any(m is None for m in modes):
            return Reading(None, skip="unknown: the driver did not report persistence mode")
        value = _on_off(all(bool(m) for m in modes))
        if host.kind != "live":
            return Reading(value, skip="a host tree cannot run nvidia-smi; apply on the host")
        notes: tuple[str, ...] = ()
        if target.desired == "on":
            notes = ("lasts until the driver unloads; nvidia-persistenced keeps it at boot",)
        return Reading(value, notes=notes)

    def capture(self, host: Host, change: Change) -> dict[str, Any]:
        gpus = read_gpus(host).gpus
        return {"modes": {g.bus_id or str(g.position): bool(g.persistence_mode) for g in gpus}}

    def apply(self, host: Host, change: Change) -> None:
        flag = "1" if change.target.desired == "on" else "0"
        res = host.run(["nvidia-smi", "-pm", flag], timeout=NVSMI_TIMEOUT)
        if not res.ok:
            raise ApplyFailed(res.describe())

    def revert(self, host: Host, change: Change, saved: Mapping[str, Any]) -> None:
        modes = saved.get("modes", {})
        for bus, on in dict(modes).items():
            res = host.run(["nvidia-smi", "-i", bus, "-pm", "1" if on else "0"], timeout=60)
            if not res.ok:
                raise ApplyFailed(res.describe())

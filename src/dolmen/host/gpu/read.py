"""``read_gpus(host)``, the reader behind ``Host.gpus``: NVML on a live host, else nvidia-smi.

A value that could not be read is None and its key maps to the reason in the
Gpu's ``unread`` (dolmen.host.gpu.model). This module knows hosts only as
``Runner`` (what it calls), so ``host.base`` can use it without an import circle.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from typing import Protocol

from dolmen.host.command import CommandResult, RunStatus
from dolmen.host.gpu.model import GpuInventory
from dolmen.host.gpu.nvsmi import parse_nvsmi_xml

NVSMI_ARGV = ("nvidia-smi", "-q", "-x")
# -q -x on an 8-GPU host without persistence mode takes seconds (each GPU initialises).
NVSMI_TIMEOUT = 60.0


class Runner(Protocol):
    """What the reader needs of a host: its kind (NVML only on live) and its commands."""

    @property
    def kind(self) -> str: ...

    def run(
        self, argv: Sequence[str], *, timeout: float = ..., key: str | None = None
    ) -> CommandResult: ...


def read_gpus(host: Runner) -> GpuInventory:
    """The inventory of ``host``: NVML on a live host whose library loads, else nvidia-smi."""
    attempts: dict[str, str] = {}
    if host.kind == "live":
        # pynvml (about 30 ms to import) loads only where NVML can answer: a live host.
        from dolmen.host.gpu.nvml import read_nvml

        got = read_nvml()
        if isinstance(got, GpuInventory):
            return got
        attempts["nvml"] = got
    inv = read_nvsmi(host)
    return dataclasses.replace(inv, attempts={**attempts, **inv.attempts})


def read_nvsmi(host: Runner) -> GpuInventory:
    """The inventory from ``nvidia-smi -q -x`` run on (or recorded from) ``host``."""
    res = host.run(NVSMI_ARGV, timeout=NVSMI_TIMEOUT)
    if res.status is RunStatus.OK or (
        res.status is RunStatus.FAILED and "<nvidia_smi_log" in res.stdout
    ):
        inv = parse_nvsmi_xml(res.stdout)
        if inv.error is None and res.ok:
            return inv
        if inv.error is None:
            # A non-zero exit with a whole document: keep the GPUs, say the command complained.
            failed = res.failure()
            return dataclasses.replace(inv, unread={**inv.unread, "nvidia-smi": failed})
        if res.ok:
            return dataclasses.replace(inv, attempts={"nvidia-smi": inv.error})
    why = res.failure()
    return GpuInventory(source="none", error=why, attempts={"nvidia-smi": why})

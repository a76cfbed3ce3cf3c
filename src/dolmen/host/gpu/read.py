"""``read_gpus(host)``, the reader behind ``Host.gpus``: NVML on a live host, else nvidia-smi.

nvidia-smi is read in its three forms, each only when the one before gave
nothing usable: ``-q -x`` (XML), ``-q`` (the same report as text), and the
default table. On a live host the later forms run only when the earlier one
failed, so a healthy host runs ``nvidia-smi -q -x`` alone; on a host tree a form
that was not recorded is passed over for the next. ``attempts`` says why each
tried source was not used. A value that could not be read is None and its key
maps to the reason in the Gpu's ``unread`` (dolmen.host.gpu.model). This module
knows hosts only as ``Runner`` (what it calls), so ``host.base`` can use it
without an import circle.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Sequence
from typing import Protocol

from dolmen.host.command import NOT_IN_BUNDLE, CommandResult, RunStatus
from dolmen.host.deadline import Deadline
from dolmen.host.gpu import nvsmi_failure as f
from dolmen.host.gpu.model import GpuInventory
from dolmen.host.gpu.nvsmi import parse_nvsmi_xml

NVSMI_ARGV = ("nvidia-smi", "-q", "-x")
TEXT_ARGV = ("nvidia-smi", "-q")
TABLE_ARGV = ("nvidia-smi",)
# -q -x on an 8-GPU host without persistence mode takes seconds (each GPU initialises).
NVSMI_TIMEOUT = 60.0


def _text(text: str) -> GpuInventory:
    # The fallbacks' parsers load only where -q -x was not there: 2 ms of every quick run.
    from dolmen.host.gpu.nvsmi_text import parse_nvsmi_text

    return parse_nvsmi_text(text)


def _table(text: str) -> GpuInventory:
    from dolmen.host.gpu.nvsmi_table import parse_nvsmi_table

    return parse_nvsmi_table(text)


Parser = Callable[[str], GpuInventory]
# (name in ``attempts``, command, parser), in the order they are tried
SOURCES: tuple[tuple[str, tuple[str, ...], Parser], ...] = (
    ("nvidia-smi -q -x", NVSMI_ARGV, lambda text: parse_nvsmi_xml(_xml_part(text))),
    ("nvidia-smi -q", TEXT_ARGV, _text),
    ("nvidia-smi table", TABLE_ARGV, _table),
)


class Runner(Protocol):
    """What the reader needs of a host: its kind (NVML only on live), its commands, and the
    run's deadline (the NVML read waits no longer)."""

    @property
    def kind(self) -> str: ...

    @property
    def deadline(self) -> Deadline: ...

    def run(
        self, argv: Sequence[str], *, timeout: float = ..., key: str | None = None
    ) -> CommandResult: ...


def read_gpus(host: Runner) -> GpuInventory:
    """The inventory of ``host``: NVML on a live host whose library loads, else nvidia-smi."""
    attempts: dict[str, str] = {}
    if host.kind == "live":
        # pynvml (about 30 ms to import) loads only where NVML can answer: a live host. The
        # read runs in a worker process the deadline can kill (a hung driver blocks in C).
        from dolmen.host.gpu.nvml_worker import read_nvml_bounded

        got = read_nvml_bounded(host.deadline)
        if isinstance(got, GpuInventory):
            return got
        attempts["nvml"] = got
        if got.startswith("timed out"):  # nvidia-smi asks the same driver: it would hang too
            return GpuInventory(source="none", error=got, attempts=attempts)
    inv = read_nvsmi(host)
    return dataclasses.replace(inv, attempts={**attempts, **inv.attempts})


def read_nvsmi(host: Runner) -> GpuInventory:
    """The inventory from nvidia-smi: the first of ``SOURCES`` that lists GPUs, else the most
    telling failure (nvidia-smi's own words beat a command that was not recorded)."""
    attempts: dict[str, str] = {}
    failed: list[GpuInventory] = []
    for name, argv, parse in SOURCES:
        inv, go_on = read_one(host.run(argv, timeout=NVSMI_TIMEOUT), parse)
        if inv.error is None or inv.gpus:
            return dataclasses.replace(inv, attempts=attempts)
        attempts[name] = inv.error
        failed.append(inv)
        if not go_on:
            break
    # "missing" and "not in this bundle" say the least: a later source's absence must not
    # hide why an earlier one failed (a recorded timeout, nvidia-smi's own words).
    quiet = ("missing", NOT_IN_BUNDLE)
    best = next((i for i in failed if not (i.error or "").startswith(quiet)), failed[0])
    return dataclasses.replace(best, attempts=attempts)


def read_one(res: CommandResult, parse: Parser) -> tuple[GpuInventory, bool]:
    """One source's inventory, and whether a later source could do better: not after
    nvidia-smi said why it failed, timed out or could not be run (the next form would
    say, or cost, the same), yes when this one is absent or its output unusable."""
    out = res.stdout if not res.stderr else f"{res.stdout}\n{res.stderr}"
    failures = f.failure_lines(out) if res.status in (RunStatus.OK, RunStatus.FAILED) else ()
    what = " ".join(res.argv) + (f": exit {res.rc}" if res.rc else "")
    if res.status is RunStatus.OK or (res.status is RunStatus.FAILED and res.stdout.strip()):
        inv = parse(res.stdout)
        if inv.error is None or inv.gpus:
            if not res.ok:  # a non-zero exit with a whole report: keep the GPUs, note it
                inv = dataclasses.replace(inv, unread={**inv.unread, "nvidia-smi": res.failure()})
            if failures:  # and the GPUs it could not open, with its words as the error
                error = f.describe(failures, what)
                gpus = f.with_handle_gpus(inv.gpus, failures)
                unread = {**inv.unread, "nvidia-smi": error}
                inv = dataclasses.replace(inv, gpus=gpus, error=error, unread=unread)
            return inv, False
        if not failures:
            return (inv if res.ok else _failed(res)), True
    if failures:
        return GpuInventory(source="nvidia-smi", error=f.describe(failures, what)), False
    inv = _failed(res)
    return inv, res.status in (RunStatus.MISSING, RunStatus.UNRECORDED, RunStatus.FAILED)


def _failed(res: CommandResult) -> GpuInventory:
    why = res.failure()
    return GpuInventory(source="none", error=why)


def _xml_part(text: str) -> str:
    """The XML document without the failure lines nvidia-smi may print before it
    ("Unable to determine the device handle for GPU ...": they are read separately)."""
    start = text.find("<?xml")
    if start <= 0:
        return text
    head = text[:start]
    lines = [line for line in head.splitlines() if line.strip()]
    return text[start:] if all(f.is_failure_line(line) for line in lines) else text

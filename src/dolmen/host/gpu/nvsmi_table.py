"""The default ``nvidia-smi`` table (no arguments) to the GPU model, never raising.

The box people paste most: the driver and CUDA versions, then per GPU three rows
(index, name, persistence mode or Windows driver model, bus id, display, volatile
uncorrectable ECC; fan, temperature, performance state, power draw / cap, memory
used / total, utilisation, compute mode; MIG mode), then the MIG devices and the
processes. What the table shows is read with the XML reader's converters and
placeholders (``nvsmi_values``); every other field is None with ``NOT_SHOWN``: the value
is not in this input, which says nothing of the GPU. Not ``missing`` (the word for a source
the host vouches is absent) and not ``not supported`` (which checks skip): a check says
``unknown``, since ``nvidia-smi -q -x`` would have shown it.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Callable
from typing import Any

from dolmen.host.gpu import nvsmi_failure as f
from dolmen.host.gpu import nvsmi_values as v
from dolmen.host.gpu.build import build, model_keys
from dolmen.host.gpu.model import NOT_SUPPORTED, Gpu, GpuInventory, MigDevice
from dolmen.host.gpu.nvsmi import MAX_CHARS, MAX_GPUS
from dolmen.values.busid import BusId

SOURCE = "nvidia-smi table"
NOT_SHOWN = "not shown: the nvidia-smi table has no column for it (nvidia-smi -q -x has)"
_HEADER = re.compile(
    r"NVIDIA-SMI\s+(\S+)\s+(?:Driver|KMD) Version:\s*(\S+)\s+CUDA (?:UMD )?Version:\s*(\S+)"
)
_FIRST = re.compile(r"^\s*(\d+)\s+(.*?)\s+(On|Off|N/A|WDDM|TCC|MCDM)\s*$")  # index name pers.
_BUS = re.compile(r"^\s*([0-9A-Fa-f]{1,8}:[0-9A-Fa-f]{2}:[0-9A-Fa-f]{2}\.[0-7])\s+(\S+)\s*$")
_USED = re.compile(r"^\s*(\S+)\s*/\s*(\S+)\s*$")  # "72W / 700W", "1MiB / 81559MiB"
# The table abbreviates the compute mode; the XML (and the model) spell it out.
_COMPUTE = {"E. Process": "Exclusive_Process", "E. Thread": "Exclusive_Thread"}
_NOT_NUMBER = {"On", "Off"}  # the ECC column in MIG mode / with ECC disabled


def parse_nvsmi_table(text: str) -> GpuInventory:
    """The inventory the ``nvidia-smi`` table shows; ``error`` when it holds no table (or
    only one of nvidia-smi's failure lines, which is then the error)."""
    if len(text) > MAX_CHARS:
        return GpuInventory(source="none", error=f"malformed: {len(text)} characters")
    failures = f.failure_lines(text)
    lines = text.expandtabs().splitlines()
    header = next((m for line in lines if (m := _HEADER.search(line))), None)
    rows = _gpu_rows(lines)
    if header is None or not rows:
        if failures:
            return GpuInventory(source="nvidia-smi", error=f.describe(failures, "nvidia-smi"))
        what = "no 'NVIDIA-SMI ... Driver Version' line" if header is None else "no GPU rows"
        return GpuInventory(source="none", error=f"malformed: not an nvidia-smi table ({what})")
    if len(rows) > MAX_GPUS:
        return GpuInventory(source="none", error=f"malformed: {len(rows)} GPU rows")
    mig = _mig_devices(lines)
    procs = _processes(lines)
    gpus = tuple(_gpu(row, mig, procs) for row in rows)
    unread: dict[str, str] = {"attached_gpus": NOT_SHOWN}
    values: dict[str, Any] = {}
    for key, raw in (("driver_version", header[2]), ("cuda_version", header[3])):
        why = v.sentinel(raw)
        if why:
            unread[key] = why
        else:
            values[key] = raw
    return GpuInventory(
        source=SOURCE,
        gpus=f.with_handle_gpus(gpus, failures),
        error=f.describe(failures, "nvidia-smi") if failures else None,
        unread=unread,
        **values,
    )


def _cells(line: str) -> list[str]:
    """The cells of a ``| a | b | c |`` row (without the outer empty ones)."""
    return line.strip().strip("|").split("|")


def _gpu_rows(lines: list[str]) -> list[list[list[str]]]:
    """Each GPU's rows of cells: a row whose first cell is ``<index> <name> <On|Off>`` starts
    a GPU, the rows up to the next ``+---`` separator belong to it."""
    gpus: list[list[list[str]]] = []
    current: list[list[str]] | None = None
    for line in lines:
        s = line.strip()
        if s.startswith("+") or not s.startswith("|"):
            current = None
            continue
        cells = _cells(s)
        if len(cells) == 3 and _FIRST.match(cells[0]) and _BUS.match(cells[1]):
            current = [cells]
            gpus.append(current)
        elif current is not None and len(cells) == 3:
            current.append(cells)
    return gpus


def _section(lines: list[str], title: str) -> list[str] | None:
    """The body rows of the box titled ``title`` (``Processes:``), None without that box."""
    for i, line in enumerate(lines):
        if title in line:
            body: list[str] = []
            started = False
            for row in lines[i + 1 :]:
                s = row.strip()
                if s.startswith("|="):
                    started = True
                elif started and s.startswith("|"):
                    body.append(s)
                elif started and not s.startswith("+"):
                    break
            return body if started else None
    return None


def _mig_devices(lines: list[str]) -> dict[int, list[MigDevice]]:
    """MIG devices by GPU index: ``| GPU GI CI MIG | used / total | ...``, first row each."""
    out: dict[int, list[MigDevice]] = {}
    for row in _section(lines, "MIG devices:") or ():
        cells = _cells(row)
        ids = cells[0].split()
        if len(ids) != 4 or not all(i.isdigit() for i in ids) or len(cells) < 2:
            continue
        mem = _USED.match(cells[1])
        total = v.optional(v.mib, mem[2]) if mem else None
        gpu, gi, ci, dev = (int(i) for i in ids)
        out.setdefault(gpu, []).append(MigDevice(dev, gi, ci, total))
    return out


def _processes(lines: list[str]) -> dict[int, int] | None:
    """Processes per GPU index; None when the table has no Processes box (cut off)."""
    body = _section(lines, "Processes:")
    if body is None:
        return None
    counts: dict[int, int] = {}
    for row in body:
        first = _cells(row)[0].split()[:1]
        if first and first[0].isdigit():
            counts[int(first[0])] = counts.get(int(first[0]), 0) + 1
    return counts


def _gpu(
    rows: list[list[str]], mig: dict[int, list[MigDevice]], procs: dict[int, int] | None
) -> Gpu:
    """One GPU from its rows; what the rows do not show is ``NOT_SHOWN``."""
    first, bus = _FIRST.match(rows[0][0]), _BUS.match(rows[0][1])
    assert first is not None and bus is not None  # _gpu_rows kept only such rows
    position = int(first[1])
    values: dict[str, Any] = {"position": position, "bus_id": bus[1]}
    unread = dict.fromkeys(_scalar_keys(), NOT_SHOWN)
    put = _putter(values, unread)
    parsed = BusId.parse(bus[1])
    if parsed is not None:
        values["pci_address"] = parsed.sysfs
    del unread["bus_id"], unread["pci_address"]
    name = first[2].strip()
    if name.endswith("..."):  # long names are cut to fit the column
        unread["name"] = f"cut off: the nvidia-smi table cuts the name short ({name[:40]!r})"
    else:
        put("name", name, v.text)
    mode = first[3]
    if mode in ("WDDM", "TCC", "MCDM"):  # Windows shows the driver model in that column
        put("driver_model", mode, v.text)
    else:
        put("persistence_mode", mode, v.flag)
    _ecc(rows[0][2], put, unread)
    if len(rows) > 1:
        _second(rows[1], put, unread)
    if len(rows) > 2:  # 450+: the MIG M. row
        put("mig.current", rows[2][2].strip().rstrip("*"), v.flag)
    if mig.get(position):
        values["mig.devices"] = tuple(mig[position])
    if procs is not None:
        values["processes"] = procs.get(position, 0)
        del unread["processes"]
    values["unread"] = unread
    return build(Gpu, values)


Put = Callable[[str, str, v.Conv], None]


def _putter(values: dict[str, Any], unread: dict[str, str]) -> Put:
    """``put(key, shown, conv)``: the converted value, or the placeholder's or malformed
    reason (the XML reader's words)."""

    def put(key: str, shown: str, conv: v.Conv) -> None:
        raw = shown.strip()
        why = (v.sentinel(raw) if raw else v.EMPTY) or ""
        if not why:
            try:
                values[key] = conv(raw)
                unread.pop(key, None)
                return
            except (ValueError, KeyError):
                why = f"malformed: {raw[:40]!r}"
        unread[key] = why

    return put


def _ecc(cell: str, put: Put, unread: dict[str, str]) -> None:
    """The Volatile Uncorr. ECC column: the count (ECC on), ``Off``, ``On`` (MIG mode: no
    count shown), or a placeholder for both."""
    shown = cell.strip()
    key = "ecc.volatile.uncorrectable"
    if shown in _NOT_NUMBER:
        put("ecc.mode", shown, v.flag)
        unread[key] = (
            f"{NOT_SUPPORTED}: ECC is disabled"
            if shown == "Off"
            else "not shown: the nvidia-smi table shows the ECC mode, not the count"
        )
        return
    put(key, shown, v.count)
    if key in unread:
        unread["ecc.mode"] = unread[key]
    else:
        put("ecc.mode", "On", v.flag)


def _second(row: list[str], put: Put, unread: dict[str, str]) -> None:
    """``Fan Temp Perf Pwr:Usage/Cap | Memory-Usage | GPU-Util Compute M.``"""
    words = row[0].split()
    if words and (why := v.sentinel(words[0])) and why.startswith("unreadable"):
        # The fan column reads ERR! when NVML fails on the fan (a dead fan or controller);
        # N/A (no fan: a passively cooled board) is no failure, and no field is kept.
        unread["fan.speed"] = why
    if len(words) >= 4:
        put("temperature.gpu", words[1], v.celsius)
        put("performance_state", words[2], v.text)
        power = _USED.match(" ".join(words[3:]))
        put("power.draw", power[1] if power else " ".join(words[3:]), v.watts)
        if power:
            put("power.enforced_limit", power[2], v.watts)
    memory = _USED.match(row[1])
    if memory:
        put("memory.used_mib", memory[1], v.mib)
        put("memory.total_mib", memory[2], v.mib)
    else:
        unread["memory.used_mib"] = unread["memory.total_mib"] = f"malformed: {row[1][:40]!r}"
    util, _, compute = row[2].strip().partition(" ")
    if util:
        put("utilization.gpu", util, v.percent)
    if compute.strip():
        put("compute_mode", compute.strip(), lambda s: _COMPUTE.get(s, s))


@functools.cache
def _scalar_keys() -> tuple[str, ...]:
    """The model keys whose default is None (mappings and tuples default to empty)."""
    blank = build(Gpu, {"position": 0})
    return tuple(k for k in sorted(model_keys() - {"position"}) if _get(blank, k) is None)


def _get(obj: Any, dotted: str) -> Any:
    for part in dotted.split("."):
        obj = getattr(obj, part)
    return obj

"""dcgm facts: a recorded ``dcgmi diag -j`` run (DCGM's diagnostic), test by test, GPU by GPU.

Source: ``commands/dcgmi%20diag%20-j`` of a bundle (a pasted file, a sosreport, a tree
someone recorded by hand). dolmen never starts a diagnostic on a live host: ``dcgmi
diag -r 2`` loads every GPU for minutes, which is the ``full`` tier's business, not a
fact. dcgmi exits non-zero when a test fails and still prints the JSON, so the output
is parsed whatever the exit code.

Two layouts are read (DCGM's ``testing/python3/dcgm_diag_schema.json`` and the
older NVVS strings): DCGM 3.3 and 4 put ``"DCGM Diagnostic"`` at the top, with each
result naming ``entity_group``/``entity_id`` and the GPUs' serials in
``entity_groups``; DCGM 2 and early 3 wrote ``"DCGM GPU Diagnostic"`` with
``gpu_ids`` (``"0"`` or ``"0,1,2,3"``). A warning is ``{"warning": ..., "error_id":
...}`` in both, or a bare string in the oldest. GPU ids are DCGM's, which are NVML's
indices (nvidia-smi's ``GPU N``).
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import field
from typing import Any
from urllib.parse import unquote

from dolmen.frozen import frozen
from dolmen.host import Host, RunStatus, command_key

ARGV = ("dcgmi", "diag", "-j")
TEXT_ARGV = ("dcgmi", "diag")  # the table's key: any dcgmi diag run, -r 2, -r 3 -g 7...
_TOPS = ("DCGM Diagnostic", "DCGM GPU Diagnostic")


@frozen
class DiagResult:
    """One test's result on one entity (a GPU, or the whole run for deployment tests)."""

    category: str  # Deployment, Integration, Hardware, Stress...
    test: str  # "Memory", "PCIe", "Diagnostic", "Denylist"...
    status: str  # pass, fail, warn, skip, or DCGM's word lowercased
    gpu: int | None = None  # DCGM's GPU id; None: not a GPU's result (the host, a switch)
    messages: tuple[str, ...] = ()  # DCGM's own warnings, as it wrote them
    error_ids: tuple[int, ...] = ()
    info: tuple[str, ...] = ()


# Why a live host has no diagnostic to read: dolmen starts dcgmi diag only as a workload
# (validate --level full's workload.dcgm_diag), never to collect facts.
LIVE = "not supported on a live host (no recorded diagnostic to read)"


@frozen
class DcgmFacts:
    """A recorded diagnostic. ``unread["diag"]``: why there is none (not in this bundle,
    malformed...). ``serials`` maps GPU ids to serial numbers where DCGM listed them."""

    results: tuple[DiagResult, ...] = ()
    version: str | None = None
    driver_version: str | None = None
    serials: Mapping[int, str] = field(default_factory=dict)
    runtime_error: str | None = None  # the run itself failed (no GPU, DCGM not running)
    unread: Mapping[str, str] = field(default_factory=dict)


def collect(host: Host) -> DcgmFacts:
    """The diagnostic recorded in ``host``'s bundle, if any (see module docstring)."""
    if host.kind == "live":  # what a run at level full does is the check's to say
        return DcgmFacts(unread={"diag": LIVE})
    first = host.run(ARGV, timeout=5)
    for res in (first, *(host.run(a, timeout=5) for a in _text_argvs(host))):
        if res.stdout.strip() and res.status in (RunStatus.OK, RunStatus.FAILED):
            if _is_json(res.stdout):
                return parse_dcgm_diag(res.stdout)
            from dolmen.facts.dcgm_text import parse_dcgm_text  # dcgm_text imports this module

            return parse_dcgm_text(res.stdout)
    return DcgmFacts(unread={"diag": first.failure()})


def _text_argvs(host: Host) -> list[tuple[str, ...]]:
    """The other ``dcgmi diag`` runs a bundle recorded (``dcgmi diag -r 2``, a pasted table
    under ``dcgmi diag``): the human-readable table, which people paste more than ``-j``."""
    prefix = "commands/" + command_key(TEXT_ARGV)
    found = []
    for rel in host.glob(prefix + "*"):
        argv = tuple(unquote(rel.removeprefix("commands/")).split(" "))
        if argv[: len(TEXT_ARGV)] == TEXT_ARGV and argv != ARGV:
            found.append(argv)
    return found


def _is_json(text: str) -> bool:
    return text.lstrip("\ufeff \t\r\n").startswith("{") or any(f'"{t}"' in text for t in _TOPS)


def parse_dcgm_diag(text: str) -> DcgmFacts:
    """The results of ``dcgmi diag -j`` output; never raises (malformed -> ``unread``)."""
    try:
        doc = json.loads(text[text.find("{") :] if "{" in text else text)
    except ValueError as e:
        return DcgmFacts(unread={"diag": f"malformed: not complete JSON ({e})"})
    if not isinstance(doc, dict):
        return DcgmFacts(unread={"diag": "malformed: not a JSON object"})
    top_name = next((k for k in _TOPS if isinstance(doc.get(k), dict)), None)
    if top_name is None:
        return DcgmFacts(unread={"diag": "malformed: no 'DCGM Diagnostic' object"})
    top: dict[str, Any] = doc[top_name]
    results = [r for cat in _list(top.get("test_categories")) for r in _category(cat)]
    meta = doc.get("metadata") if isinstance(doc.get("metadata"), dict) else top
    version = _str(meta.get("version")) if isinstance(meta, dict) else None
    driver = _str(meta.get("Driver Version Detected")) if isinstance(meta, dict) else None
    unread: dict[str, str] = {}
    if not results and not top.get("runtime_error"):
        unread["diag"] = "malformed: no test results"
    return DcgmFacts(
        tuple(results),
        version,
        driver,
        _serials(doc.get("entity_groups")),
        _str(top.get("runtime_error")),
        unread,
    )


def _category(cat: object) -> list[DiagResult]:
    if not isinstance(cat, dict):
        return []
    name = _str(cat.get("category")) or "?"
    out: list[DiagResult] = []
    for test in _list(cat.get("tests")):
        if not isinstance(test, dict):
            continue
        test_name = _str(test.get("name")) or "?"
        for res in _list(test.get("results")):
            if isinstance(res, dict):
                out.extend(_results(name, test_name, res))
    return out


def _results(category: str, test: str, res: dict[str, Any]) -> list[DiagResult]:
    status = (_str(res.get("status")) or "unknown").strip().lower()
    messages: list[str] = []
    ids: list[int] = []
    for w in _list(res.get("warnings")):
        if isinstance(w, dict):
            if text := _str(w.get("warning")):
                messages.append(text)
            if isinstance(w.get("error_id"), int):
                ids.append(w["error_id"])
        elif isinstance(w, str) and w.strip():
            messages.append(w)
    info = res.get("info")
    infos = tuple(
        i for i in (_list(info) if isinstance(info, list) else [info]) if isinstance(i, str)
    )
    gpus = _gpus(res)
    return [
        DiagResult(category, test, status, gpu, tuple(messages), tuple(ids), infos) for gpu in gpus
    ]


def _gpus(res: dict[str, Any]) -> list[int | None]:
    """The GPU ids a result is for: ``entity_id`` of a GPU entity, or ``gpu_ids``."""
    group = res.get("entity_group")
    if isinstance(group, str):
        eid = res.get("entity_id")
        return [eid if group.upper() == "GPU" and isinstance(eid, int) else None]
    raw = res.get("gpu_ids", res.get("gpu_id"))
    if isinstance(raw, int):
        return [raw]
    if isinstance(raw, str):
        ids = [int(p) for p in raw.replace(" ", "").split(",") if p.isdigit()]
        return list(dict.fromkeys(ids)) or [None]
    return [None]


def _serials(groups: object) -> dict[int, str]:
    out: dict[int, str] = {}
    for g in _list(groups):
        if not isinstance(g, dict) or str(g.get("entity_group", "")).upper() != "GPU":
            continue
        for e in _list(g.get("entities")):
            if isinstance(e, dict) and isinstance(e.get("entity_id"), int):
                serial = _str(e.get("serial_num"))
                if serial:
                    out[e["entity_id"]] = serial
    return out


def _list(value: object) -> list[Any]:
    return value if isinstance(value, list) else []


def _str(value: object) -> str | None:
    return value if isinstance(value, str) and value.strip() else None

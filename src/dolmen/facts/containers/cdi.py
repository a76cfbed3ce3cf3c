"""CDI specs (Container Device Interface, what ``nvidia-ctk cdi generate`` writes), read
with a real YAML parser (PyYAML's safe loader; JSON specs with ``json``).

What the checks need from a spec: its kind and version, the device names (``all``,
``0``, ``GPU-<uuid>``), the device nodes it hands to containers (``hostPath`` when
given, else ``path``: the node on the host), the host files it bind-mounts, the driver
version its versioned libraries carry (``libcuda.so.580.95.05``) and the one its
``enable-cuda-compat`` hook names (``--host-driver-version=575.57.08``, toolkit >= 1.17).

Specs come from bundles, so they are untrusted: aliases may fan out (a "billion laughs"
document), so every walk has a budget; nesting deeper than the parser allows, binary
junk and non-mappings are ``malformed`` with the reason, never an exception.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from typing import Any

from dolmen.facts.containers.model import CdiSpec

# Versioned driver libraries a spec mounts (libcuda.so.580.95.05, libnvidia-ml.so.550.54.15).
_LIB_RE = re.compile(r"/lib(?:cuda|nvidia-[\w-]+)\.so\.(\d{2,4}\.\d{1,4}(?:\.\d{1,4})?)$")
_HOOK_RE = re.compile(r"^--host-driver-version=(\d+(?:\.\d+){1,2})$")
_BUDGET = 200_000  # items visited per spec: far above any real spec (a few thousand)


class _Budget(Exception):
    pass


def _load(text: str) -> tuple[Any, str | None]:
    """The document, or (None, reason)."""
    if "\x00" in text:
        return None, "malformed: not text"
    if text.lstrip().startswith("{"):
        try:
            return json.loads(text), None
        except json.JSONDecodeError as e:
            return None, f"malformed: not valid JSON ({e.msg}, line {e.lineno})"
        except (ValueError, RecursionError):
            return None, "malformed: not valid JSON"
    import yaml  # only here: 20 ms a start for the commands that never read a spec

    loader = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
    try:
        return yaml.load(text, Loader=loader), None
    except yaml.MarkedYAMLError as e:
        mark = e.problem_mark
        where = "" if mark is None else f", line {mark.line + 1}"
        return None, f"malformed: not valid YAML ({e.problem or e.context}{where})"
    except (yaml.YAMLError, RecursionError, ValueError) as e:
        return None, f"malformed: not valid YAML ({e.__class__.__name__})"


def _items(value: Any, budget: list[int]) -> Iterator[Any]:
    if not isinstance(value, list):
        return
    for item in value:
        budget[0] -= 1
        if budget[0] < 0:
            raise _Budget
        yield item


def _edits(doc: dict[str, Any], budget: list[int]) -> Iterator[dict[str, Any]]:
    """The spec's global containerEdits, then each device's."""
    edits = doc.get("containerEdits")
    if isinstance(edits, dict):
        yield edits
    for dev in _items(doc.get("devices"), budget):
        if isinstance(dev, dict) and isinstance(dev.get("containerEdits"), dict):
            yield dev["containerEdits"]


def _uniq(values: list[str]) -> tuple[str, ...]:
    return tuple(dict.fromkeys(values))


def parse_cdi_spec(path: str, text: str) -> CdiSpec:
    """A CDI spec (YAML or JSON) and what it hands to containers; ``error`` says why it is
    unusable (not text, not YAML, not a mapping, no kind, no cdiVersion)."""
    doc, why = _load(text)
    if why is not None:
        return CdiSpec(path, None, None, (), why)
    if doc is None:
        return CdiSpec(path, None, None, (), "malformed: empty (truncated?)")
    if not isinstance(doc, dict):
        return CdiSpec(path, None, None, (), f"malformed: not a mapping ({type(doc).__name__})")
    budget = [_BUDGET]
    try:
        names = _uniq(
            [
                str(d["name"])
                for d in _items(doc.get("devices"), budget)
                if isinstance(d, dict) and d.get("name") is not None
            ]
        )
        nodes: list[str] = []
        mounts: list[str] = []
        hooks: list[str] = []
        for edits in _edits(doc, budget):
            for n in _items(edits.get("deviceNodes"), budget):
                if isinstance(n, dict):
                    node = n.get("hostPath") or n.get("path")
                    if isinstance(node, str):
                        nodes.append(node)
            for m in _items(edits.get("mounts"), budget):
                if isinstance(m, dict) and isinstance(m.get("hostPath"), str):
                    mounts.append(m["hostPath"])
            for h in _items(edits.get("hooks"), budget):
                if isinstance(h, dict):
                    hooks.extend(a for a in _items(h.get("args"), budget) if isinstance(a, str))
    except _Budget:
        return CdiSpec(path, None, None, (), "malformed: too many items (aliases fanning out?)")
    kind, version = doc.get("kind"), doc.get("cdiVersion")
    error = None
    if not isinstance(kind, str) or not kind:
        error = "malformed: no kind (truncated?)"
    elif version is None:
        error = "malformed: no cdiVersion"
    libs = _uniq([m[1] for p in mounts if (m := _LIB_RE.search(p))])
    hook = next((m[1] for a in hooks if (m := _HOOK_RE.match(a))), None)
    return CdiSpec(
        path=path,
        kind=kind if isinstance(kind, str) and kind else None,
        cdi_version=None if version is None else str(version),
        devices=names,
        error=error,
        driver_version=hook or (libs[0] if libs else None),
        device_nodes=_uniq(nodes),
        mounts=_uniq(mounts),
        library_versions=libs,
    )

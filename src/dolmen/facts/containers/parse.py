"""Pure parsers of the container sources: daemon.json, containerd's and CRI-O's runtimes
and ``<tool> --version`` (CDI specs: ``cdi.py``)."""

from __future__ import annotations

import json
import re
from collections.abc import Iterator, Mapping
from typing import Any

from dolmen.facts.containers.model import DockerConfig

_VERSION_RE = re.compile(r"\b(\d+\.\d+(?:\.\d+)?(?:[-+~][0-9A-Za-z.]+)?)")


def parse_daemon_json(text: str) -> DockerConfig | None:
    """Runtimes of a Docker ``daemon.json``, or None when it is not a JSON object."""
    try:
        doc = json.loads(text)
    except (ValueError, RecursionError):
        return None
    if not isinstance(doc, dict):
        return None
    raw = doc.get("runtimes")
    runtimes: dict[str, str] = {}
    if isinstance(raw, dict):
        for name, spec in raw.items():
            path = spec.get("path") if isinstance(spec, dict) else None
            runtimes[str(name)] = path if isinstance(path, str) else ""
    default = doc.get("default-runtime")
    features = doc.get("features")
    cdi = features.get("cdi") if isinstance(features, dict) else None
    return DockerConfig(
        default if isinstance(default, str) else None,
        runtimes,
        cdi if isinstance(cdi, bool) else None,
    )


def crio_runtimes(doc: Mapping[str, Any]) -> tuple[dict[str, str], str | None]:
    """Runtimes (name -> runtime_path) and the default of one CRI-O TOML file.

    ``nvidia-ctk runtime configure --runtime=crio`` writes
    ``[crio.runtime.runtimes.nvidia] runtime_path = "/usr/bin/nvidia-container-runtime"``
    (in crio.conf or a drop-in of crio.conf.d).
    """
    crio = doc.get("crio")
    runtime = crio.get("runtime") if isinstance(crio, dict) else None
    if not isinstance(runtime, dict):
        return {}, None
    out: dict[str, str] = {}
    table = runtime.get("runtimes")
    if isinstance(table, dict):
        for name, spec in table.items():
            path = spec.get("runtime_path") if isinstance(spec, dict) else None
            out[str(name)] = path if isinstance(path, str) else ""
    default = runtime.get("default_runtime")
    return out, default if isinstance(default, str) and default else None


def containerd_runtimes(doc: Mapping[str, Any]) -> tuple[list[str], str | None]:
    """Runtime names and the default runtime anywhere in a containerd config (v1, v2 or v3).

    The CRI plugin's path changed across config versions
    (``io.containerd.grpc.v1.cri`` -> ``io.containerd.cri.v1.runtime``), so the
    tables are walked rather than addressed.
    """
    names: list[str] = []
    default: str | None = None
    for table in _tables(doc):
        runtimes = table.get("runtimes")
        if isinstance(runtimes, dict):
            names.extend(str(n) for n in runtimes if str(n) not in names)
        value = table.get("default_runtime_name")
        if isinstance(value, str) and value:
            default = value
    return names, default


def _tables(doc: Mapping[str, Any]) -> Iterator[Mapping[str, Any]]:
    yield doc
    for value in doc.values():
        if isinstance(value, dict):
            yield from _tables(value)


def parse_tool_version(text: str) -> str | None:
    """The first version number a ``--version`` output prints ("Docker version 28.2.2, ...")."""
    for line in text.splitlines():
        m = _VERSION_RE.search(line)
        if m is not None:
            return m[1]
    return None

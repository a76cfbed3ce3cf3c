"""Pure parsers of the container sources: daemon.json, containerd's runtimes, CDI specs
(YAML read line by line, see the package docstring) and ``<tool> --version``."""

from __future__ import annotations

import json
import re
from collections.abc import Iterator, Mapping
from typing import Any

from dolmen.facts.containers.model import CdiSpec, DockerConfig

_VERSION_RE = re.compile(r"\b(\d+\.\d+(?:\.\d+)?(?:[-+~][0-9A-Za-z.]+)?)")

_TOP_KEY_RE = re.compile(r"^([A-Za-z_][\w-]*):\s*(.*?)\s*$")

_NAME_RE = re.compile(r"^(\s*)(?:-\s+)?name:\s*(.*?)\s*$")

# The driver a spec was generated for: nvidia-ctk >= 1.17 passes it to the enable-cuda-compat
# hook; every spec mounts the driver's versioned libraries (libcuda.so.580.95.05).
_CDI_DRIVER_RE = re.compile(
    r"--host-driver-version=(\d+(?:\.\d+){1,2})\b|lib(?:cuda|nvidia-ml)\.so\.(\d+\.\d+(?:\.\d+)?)\b"
)


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
    return DockerConfig(default if isinstance(default, str) else None, runtimes)


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


def parse_cdi_spec(path: str, text: str) -> CdiSpec:
    """kind, cdiVersion and device names of a CDI spec (YAML block style or JSON)."""
    if "\x00" in text:
        return CdiSpec(path, None, None, (), "malformed: not text")
    if text.lstrip().startswith("{"):
        try:
            doc = json.loads(text)
        except json.JSONDecodeError as e:
            return CdiSpec(path, None, None, (), f"malformed: not valid JSON ({e.msg})")
        except (ValueError, RecursionError):  # nesting deeper than the parser allows
            return CdiSpec(path, None, None, (), "malformed: not valid JSON")
        if not isinstance(doc, dict):
            return CdiSpec(path, None, None, (), "malformed: not a JSON object")
        devices = doc.get("devices")
        names = (
            tuple(str(d["name"]) for d in devices or () if isinstance(d, dict) and "name" in d)
            if isinstance(devices, list)
            else ()
        )
        kind, version = doc.get("kind"), doc.get("cdiVersion")
        return _spec(
            path,
            kind if isinstance(kind, str) else None,
            None if version is None else str(version),
            names,
            text,
        )
    top: dict[str, str] = {}
    names_list: list[str] = []
    in_devices = False
    item_indent: int | None = None
    for line in text.splitlines():
        if not line.strip() or line.lstrip().startswith("#") or line.startswith(("---", "...")):
            continue
        key = _TOP_KEY_RE.match(line)
        if key is not None:  # a top-level key (column 0) ends any block
            top.setdefault(key[1], _unquote(key[2]))
            in_devices, item_indent = key[1] == "devices", None
            continue
        if not in_devices:
            continue
        stripped = line.lstrip()
        indent = len(line) - len(stripped)
        if stripped.startswith("- ") and item_indent is None:
            item_indent = indent
        if item_indent is None:
            continue
        m = _NAME_RE.match(line)
        if m is None:
            continue
        dash = stripped.startswith("- ")
        if (dash and indent == item_indent) or (not dash and indent == item_indent + 2):
            names_list.append(_unquote(m[2]))
    return _spec(
        path, top.get("kind") or None, top.get("cdiVersion") or None, tuple(names_list), text
    )


def _spec(
    path: str, kind: str | None, version: str | None, names: tuple[str, ...], text: str
) -> CdiSpec:
    error = None
    if kind is None:
        error = "malformed: no kind (truncated?)"
    elif version is None:
        error = "malformed: no cdiVersion"
    found = _CDI_DRIVER_RE.search(text)
    driver = None if found is None else found[1] or found[2]
    return CdiSpec(path, kind, version, names, error, driver)


def _unquote(value: str) -> str:
    value = value.split(" #", maxsplit=1)[0].strip()
    if len(value) >= 2 and value[0] == value[-1] and value[0] in "\"'":
        return value[1:-1]
    return value


def parse_tool_version(text: str) -> str | None:
    """The first version number a ``--version`` output prints ("Docker version 28.2.2, ...")."""
    for line in text.splitlines():
        m = _VERSION_RE.search(line)
        if m is not None:
            return m[1]
    return None

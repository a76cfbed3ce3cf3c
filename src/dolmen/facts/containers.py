"""Container facts: Docker and containerd runtimes, the NVIDIA Container Toolkit, CDI specs,
and which container tools are installed.

Sources: ``etc/docker/daemon.json``, ``etc/containerd/config.toml`` and its
``conf.d/*.toml`` drop-ins (nvidia-ctk writes ``99-nvidia.toml`` there),
``etc/nvidia-container-runtime/config.toml``, CDI specs in ``etc/cdi`` and
``var/run/cdi`` (``*.yaml``, ``*.yml``, ``*.json``), and ``<tool> --version``
for docker, containerd, podman, enroot, apptainer, singularity, nvidia-ctk and
nvidia-container-cli (tree keys ``docker%20--version``...).

CDI specs are YAML; PyYAML is not a dependency, so ``parse_cdi_spec`` reads the
three things dolmen needs (``kind``, ``cdiVersion``, device names) line by line
from the block style nvidia-ctk writes, and parses JSON specs with ``json``.
"""

from __future__ import annotations

import json
import re
import tomllib
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any

from dolmen.facts.reading import malformed, read_text
from dolmen.host import Host, RunStatus

TOOLS = (
    "docker",
    "containerd",
    "podman",
    "enroot",
    "apptainer",
    "singularity",
    "nvidia-ctk",
    "nvidia-container-cli",
)
CDI_DIRS = ("etc/cdi", "var/run/cdi")
_CDI_SUFFIXES = (".yaml", ".yml", ".json")
_VERSION_RE = re.compile(r"\b(\d+\.\d+(?:\.\d+)?(?:[-+~][0-9A-Za-z.]+)?)")
_TOP_KEY_RE = re.compile(r"^([A-Za-z_][\w-]*):\s*(.*?)\s*$")
_NAME_RE = re.compile(r"^(\s*)(?:-\s+)?name:\s*(.*?)\s*$")
# The driver a spec was generated for: nvidia-ctk >= 1.17 passes it to the enable-cuda-compat
# hook; every spec mounts the driver's versioned libraries (libcuda.so.580.95.05).
_CDI_DRIVER_RE = re.compile(
    r"--host-driver-version=(\d+(?:\.\d+){1,2})\b|lib(?:cuda|nvidia-ml)\.so\.(\d+\.\d+(?:\.\d+)?)\b"
)


@dataclass(frozen=True)
class Tool:
    """A container tool: installed or not, and the version it reports."""

    installed: bool | None  # None: it could not be run (timeout, permissions)
    version: str | None
    detail: str  # the first line it printed, or why it is absent


@dataclass(frozen=True)
class DockerConfig:
    """What ``etc/docker/daemon.json`` says about runtimes."""

    default_runtime: str | None
    runtimes: Mapping[str, str]  # name -> path of the runtime binary ("" when not given)

    @property
    def nvidia_default(self) -> bool:
        """Whether every container gets the NVIDIA runtime without asking for it."""
        return self.default_runtime == "nvidia"


@dataclass(frozen=True)
class ContainerdConfig:
    """Runtimes declared in containerd's configuration (main file and drop-ins)."""

    files: tuple[str, ...]
    runtimes: tuple[str, ...]
    default_runtime: str | None


@dataclass(frozen=True)
class CdiSpec:
    """One CDI spec file; ``error`` says why it is unusable (truncated, no kind...)."""

    path: str
    kind: str | None
    cdi_version: str | None
    devices: tuple[str, ...]
    error: str | None = None
    driver_version: str | None = None  # the driver it was generated for, when it names one


@dataclass(frozen=True)
class ContainerFacts:
    """Container runtimes and their NVIDIA integration; None fields have reasons in ``unread``."""

    docker: DockerConfig | None
    containerd: ContainerdConfig | None
    toolkit_config: str | None  # path of the NVIDIA Container Runtime config.toml
    toolkit_mode: str | None  # its [nvidia-container-runtime] mode (auto | legacy | cdi | csv)
    cdi_specs: tuple[CdiSpec, ...]
    tools: Mapping[str, Tool]
    unread: Mapping[str, str] = field(default_factory=dict)


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


def collect(host: Host) -> ContainerFacts:
    """Read and parse the container runtimes of ``host``."""
    unread: dict[str, str] = {}
    docker = None
    r = read_text(host, "etc/docker/daemon.json")
    if r.text is None:
        unread["docker"] = f"{r.reason}: etc/docker/daemon.json"
    elif (docker := parse_daemon_json(r.text)) is None:
        unread["docker"] = malformed(r.text)
    containerd = _containerd(host, unread)
    toolkit_config = mode = None
    r = read_text(host, "etc/nvidia-container-runtime/config.toml")
    if r.text is None:
        unread["toolkit_config"] = f"{r.reason}: etc/nvidia-container-runtime/config.toml"
        unread["toolkit_mode"] = unread["toolkit_config"]
    else:
        toolkit_config = "etc/nvidia-container-runtime/config.toml"
        mode = _toolkit_mode(r.text)
        if mode is None:
            unread["toolkit_mode"] = "missing: no [nvidia-container-runtime] mode (or malformed)"
    specs = tuple(
        parse_cdi_spec(path, host.read_opt(path) or "")
        for folder in CDI_DIRS
        for path in host.glob(f"{folder}/*")
        if path.endswith(_CDI_SUFFIXES)
    )
    return ContainerFacts(
        docker=docker,
        containerd=containerd,
        toolkit_config=toolkit_config,
        toolkit_mode=mode,
        cdi_specs=specs,
        tools={name: _tool(host, name) for name in TOOLS},
        unread=unread,
    )


def _containerd(host: Host, unread: dict[str, str]) -> ContainerdConfig | None:
    files = [p for p in ["etc/containerd/config.toml"] if host.exists(p)]
    files += host.glob("etc/containerd/conf.d/*.toml")
    if not files:
        unread["containerd"] = "missing: etc/containerd/config.toml"
        return None
    names: list[str] = []
    default = None
    for path in files:
        try:
            doc = tomllib.loads(host.read(path))
        except (OSError, tomllib.TOMLDecodeError) as e:
            unread["containerd"] = f"malformed: {path} ({e})"
            return None
        found, dflt = containerd_runtimes(doc)
        names.extend(n for n in found if n not in names)
        default = dflt or default  # drop-ins are merged after the main file
    return ContainerdConfig(tuple(files), tuple(names), default)


def _toolkit_mode(text: str) -> str | None:
    try:
        doc = tomllib.loads(text)
    except tomllib.TOMLDecodeError:
        return None
    section = doc.get("nvidia-container-runtime")
    mode = section.get("mode") if isinstance(section, dict) else None
    return mode if isinstance(mode, str) else None


def _tool(host: Host, name: str) -> Tool:
    res = host.run([name, "--version"])
    if res.status is RunStatus.MISSING:
        return Tool(False, None, res.reason or "not installed")
    if res.status in (RunStatus.TIMEOUT, RunStatus.DENIED):
        return Tool(None, None, res.failure())
    out = res.stdout.strip() or res.stderr.strip()
    first = out.splitlines()[0] if out else ""
    if not res.ok:
        return Tool(True, parse_tool_version(out), res.failure())
    return Tool(True, parse_tool_version(out), first)

"""Container facts: Docker daemon.json (a real deployed template), containerd configs (v2 and
v3 layouts plus the nvidia-ctk drop-in), the toolkit's config.toml, CDI specs (real issue
excerpts, truncated as recorded, and complete synthetic ones), tool versions; tree hosts,
malformed inputs and a live smoke test.

Synthetic inputs, where no licensed recording exists: containerd config.toml files, the
nvidia-container-runtime config.toml, a complete CDI spec in nvidia-ctk's layout (the one
licensed-less real spec is listed as a gap in PROVENANCE.md), tool --version lines.
"""

from __future__ import annotations

import json
import re
import shutil
from pathlib import Path

import pytest

from dolmen.facts import containers, to_jsonable
from dolmen.facts.containers import (
    containerd_runtimes,
    parse_cdi_spec,
    parse_daemon_json,
    parse_tool_version,
)
from dolmen.host.live import LiveHost
from dolmen.host.tree import TreeHost
from tests.conftest import make_tree, recording

DAEMON = "cuda-env/openpai__daemon-openpai-nvidia-runtime.json"
CDI_EXCERPTS = "cuda-env/issues__cdi-spec-excerpts.md"

CONTAINERD_V2 = """version = 2
[plugins]
  [plugins."io.containerd.grpc.v1.cri"]
    [plugins."io.containerd.grpc.v1.cri".containerd]
      default_runtime_name = "nvidia"
      [plugins."io.containerd.grpc.v1.cri".containerd.runtimes]
        [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.nvidia]
          runtime_type = "io.containerd.runc.v2"
          [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.nvidia.options]
            BinaryName = "/usr/bin/nvidia-container-runtime"
        [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc]
          runtime_type = "io.containerd.runc.v2"
"""
CONTAINERD_V3_MAIN = """version = 3
imports = ["/etc/containerd/conf.d/*.toml"]
[plugins."io.containerd.cri.v1.runtime".containerd.runtimes.runc]
  runtime_type = "io.containerd.runc.v2"
"""
NVIDIA_DROPIN = """version = 3
[plugins."io.containerd.cri.v1.runtime".containerd.runtimes.nvidia]
  runtime_type = "io.containerd.runc.v2"
[plugins."io.containerd.cri.v1.runtime".containerd.runtimes.nvidia.options]
  BinaryName = "/usr/bin/nvidia-container-runtime"
"""
TOOLKIT_TOML = """disable-require = false
[nvidia-container-cli]
ldconfig = "@/sbin/ldconfig.real"
[nvidia-container-runtime]
log-level = "info"
mode = "auto"
runtimes = ["docker-runc", "runc", "crun"]
"""
CDI_FULL = """---
cdiVersion: 0.5.0
containerEdits:
  deviceNodes:
  - path: /dev/nvidia-modeset
  env:
  - NVIDIA_VISIBLE_DEVICES=void
devices:
- containerEdits:
    deviceNodes:
    - path: /dev/nvidia0
    hooks:
    - hookName: createContainer
      path: /usr/bin/nvidia-cdi-hook
  name: "0"
- containerEdits:
    deviceNodes:
    - path: /dev/nvidia0
  name: GPU-0a1b2c3d-aaaa-bbbb-cccc-0123456789ab
- name: all  # every GPU
  containerEdits:
    deviceNodes:
    - path: /dev/nvidia0
kind: nvidia.com/gpu
"""


# "Billion laughs": nine levels of aliases, each ten times the one before.
_LAUGHS = (
    'kind: nvidia.com/gpu\ncdiVersion: "0.5.0"\nl0: &l0 ["lol"]\n'
    + "".join(f"l{i}: &l{i} [{', '.join([f'*l{i - 1}'] * 10)}]\n" for i in range(1, 9))
    + "devices: ["
    + ", ".join(["*l8"] * 10)
    + "]\n"
)


def _excerpts() -> list[str]:
    return re.findall(r"```\n(.*?)```", recording(CDI_EXCERPTS).read_text(), re.S)


# --- parsers -----------------------------------------------------------------------------


def test_daemon_json_real_template() -> None:
    cfg = parse_daemon_json(recording(DAEMON).read_text())
    assert cfg is not None
    assert cfg.default_runtime == "nvidia" and cfg.nvidia_default
    assert cfg.runtimes == {"nvidia": "/usr/bin/nvidia-container-runtime"}


@pytest.mark.parametrize(
    "text", ["", "{", "[]", "\x00\xff", '"nvidia"', '{"a":' * 50000 + "1" + "}" * 50000]
)
def test_daemon_json_malformed(text: str) -> None:
    assert parse_daemon_json(text) is None


def test_daemon_json_without_runtimes() -> None:
    cfg = parse_daemon_json('{"log-driver": "json-file", "runtimes": {"x": 3}}')
    assert cfg is not None and not cfg.nvidia_default and cfg.runtimes == {"x": ""}


def test_containerd_v2_and_v3() -> None:
    from dolmen.compat import tomllib

    names, default = containerd_runtimes(tomllib.loads(CONTAINERD_V2))
    assert names == ["nvidia", "runc"] and default == "nvidia"
    names, default = containerd_runtimes(tomllib.loads(NVIDIA_DROPIN))
    assert names == ["nvidia"] and default is None


def test_cdi_complete_spec() -> None:
    spec = parse_cdi_spec("etc/cdi/nvidia.yaml", CDI_FULL)
    assert spec.error is None
    assert (spec.kind, spec.cdi_version) == ("nvidia.com/gpu", "0.5.0")
    assert spec.devices == ("0", "GPU-0a1b2c3d-aaaa-bbbb-cccc-0123456789ab", "all")


def test_cdi_real_excerpts_truncated() -> None:
    """The recorded specs were cut by the search index: the first lost its kind and
    devices (reported unusable), the second keeps kind and version but no devices."""
    first, second = _excerpts()[:2]
    a = parse_cdi_spec("a.yaml", first)
    assert a.cdi_version == "0.5.0" and a.kind is None and a.error is not None
    b = parse_cdi_spec("b.yaml", second)
    assert (b.kind, b.cdi_version, b.devices, b.error) == ("nvidia.com/gpu", "0.4.0", (), None)


def test_cdi_json_spec() -> None:
    doc = {"cdiVersion": "0.6.0", "kind": "nvidia.com/gpu", "devices": [{"name": "0"}, {}]}
    spec = parse_cdi_spec("var/run/cdi/nvidia.json", json.dumps(doc))
    assert (spec.kind, spec.cdi_version, spec.devices, spec.error) == (
        "nvidia.com/gpu",
        "0.6.0",
        ("0",),
        None,
    )


@pytest.mark.parametrize(
    ("text", "error"),
    [
        ("", "empty"),
        ("# only a comment\n", "empty"),
        ("\x00\xff\x00", "not text"),
        ('{"kind": ', "not valid JSON"),
        ("[1, 2]", "not a mapping"),
        ("kind: [unclosed\n", "not valid YAML"),
        ("kind: a\n\tcdiVersion: 1\n", "not valid YAML"),  # a tab: YAML forbids it
        ("a: &x [1]\nb: *y\n", "not valid YAML"),  # an undefined alias
        ("[" * 100000 + "]" * 100000, "malformed"),  # deeper than the parser allows
        ('{"a":' * 50000 + "1" + "}" * 50000, "not valid JSON"),  # deeper than json allows
        ("kind: nvidia.com/gpu\n", "no cdiVersion"),
        (CDI_FULL[: len(CDI_FULL) // 2], "no kind"),
    ],
)
def test_cdi_malformed(text: str, error: str) -> None:
    spec = parse_cdi_spec("x.yaml", text)
    assert spec.error is not None and error in spec.error


def test_cdi_aliases_fanning_out() -> None:
    """A billion-laughs spec is read in bounded time: the walk never expands nested lists
    (a device that is not a mapping names nothing)."""
    spec = parse_cdi_spec("x.yaml", _LAUGHS)
    assert (spec.kind, spec.devices, spec.device_nodes, spec.error) == (
        "nvidia.com/gpu",
        (),
        (),
        None,
    )


def test_cdi_nodes_mounts_and_libraries() -> None:
    spec = parse_cdi_spec("etc/cdi/nvidia.yaml", CDI_FULL)
    assert spec.device_nodes == ("/dev/nvidia-modeset", "/dev/nvidia0")
    second = _excerpts()[1]
    old = parse_cdi_spec("b.yaml", second)
    assert old.library_versions == ("460.91.03",)
    assert "/usr/lib/x86_64-linux-gnu/libcuda.so.460.91.03" in old.mounts
    assert old.device_nodes[:2] == ("/dev/nvidia-modeset", "/dev/nvidiactl")


@pytest.mark.parametrize(
    ("text", "version"),
    [
        ("Docker version 28.2.2, build e6534b4\n", "28.2.2"),
        ("podman version 4.3.1\n", "4.3.1"),
        ("apptainer version 1.3.4\n", "1.3.4"),
        ("singularity-ce version 4.1.0-jammy\n", "4.1.0-jammy"),
        ("NVIDIA Container Toolkit CLI version 1.17.8\ncommit: f202b80a9b9d\n", "1.17.8"),
        ("cli-version: 1.17.8\nlib-version: 1.17.8\n", "1.17.8"),
        ("containerd containerd.io 1.7.27 05044ec0a9a7\n", "1.7.27"),
        ("", None),
        ("no digits here\n", None),
    ],
)
def test_tool_version(text: str, version: str | None) -> None:
    assert parse_tool_version(text) == version


# --- collect on trees ----------------------------------------------------------------------


def test_collect_gpu_container_host(tmp_path: Path) -> None:
    root = make_tree(
        tmp_path,
        files={
            "etc/docker/daemon.json": recording(DAEMON).read_text(),
            "etc/containerd/config.toml": CONTAINERD_V3_MAIN,
            "etc/containerd/conf.d/99-nvidia.toml": NVIDIA_DROPIN,
            "etc/nvidia-container-runtime/config.toml": TOOLKIT_TOML,
            "etc/cdi/nvidia.yaml": CDI_FULL,
            "etc/cdi/README": "not a spec",
            "var/run/cdi/broken.yaml": _excerpts()[0],
        },
        commands={
            "docker --version": "Docker version 27.5.1, build 9f9e405\n",
            "nvidia-ctk --version": "NVIDIA Container Toolkit CLI version 1.17.8\ncommit: x\n",
            "podman --version": ("", 125, "Error: cannot re-exec process\n"),
        },
    )
    facts = containers.collect(TreeHost(root))
    assert facts.docker is not None and facts.docker.nvidia_default
    assert facts.containerd is not None
    assert facts.containerd.runtimes == ("runc", "nvidia")
    assert facts.containerd.files == (
        "etc/containerd/config.toml",
        "etc/containerd/conf.d/99-nvidia.toml",
    )
    assert facts.toolkit_mode == "auto"
    assert [s.path for s in facts.cdi_specs] == ["etc/cdi/nvidia.yaml", "var/run/cdi/broken.yaml"]
    assert facts.cdi_specs[0].devices[-1] == "all" and facts.cdi_specs[1].error
    tools = facts.tools
    assert tools["docker"] == containers.Tool(
        True, "27.5.1", "Docker version 27.5.1, build 9f9e405"
    )
    assert tools["nvidia-ctk"].version == "1.17.8"
    assert tools["podman"].installed and tools["podman"].detail.startswith("command failed")
    assert tools["enroot"].installed is False
    assert facts.unread == {"crio": "missing: etc/crio/crio.conf"}
    json.dumps(to_jsonable(facts))


def test_collect_empty_tree(tmp_path: Path) -> None:
    """An empty tree recorded nothing: every source is 'not in this bundle', no tool is
    said to be absent."""
    facts = containers.collect(TreeHost(make_tree(tmp_path)))
    for key in ("docker", "containerd", "crio", "toolkit_mode", "cdi_specs"):
        assert facts.unread[key].startswith("not in this bundle: etc/"), key
    assert facts.docker is None and facts.containerd is None and facts.toolkit_mode is None
    assert facts.cdi_specs == ()
    assert all(t.installed is None for t in facts.tools.values())


def test_collect_host_without_runtimes(tmp_path: Path) -> None:
    """A tree that recorded etc/ and its commands, with none of the runtimes: absent."""
    root = make_tree(tmp_path, files={"etc/hostname": "n1\n"}, commands={"uname -r": "6.8\n"})
    facts = containers.collect(TreeHost(root))
    for key in ("docker", "containerd", "crio", "toolkit_mode"):
        assert facts.unread[key].startswith("missing: etc/"), key
    assert "cdi_specs" not in facts.unread and facts.cdi_specs == ()
    assert not any(t.installed for t in facts.tools.values())


@pytest.mark.parametrize("junk", ["", "\x00\xff\xfe" * 20, "[[[", "version = "])
def test_collect_malformed_configs(tmp_path: Path, junk: str) -> None:
    root = make_tree(
        tmp_path,
        files={
            "etc/docker/daemon.json": junk,
            "etc/containerd/config.toml": junk + "\n[x\n",
            "etc/nvidia-container-runtime/config.toml": junk + "\n[x\n",
        },
    )
    facts = containers.collect(TreeHost(root))
    assert facts.docker is None and facts.unread["docker"].startswith("malformed")
    assert facts.containerd is None and facts.unread["containerd"].startswith("malformed")
    assert facts.toolkit_config is not None and facts.toolkit_mode is None
    assert "toolkit_mode" in facts.unread


def test_live_smoke() -> None:
    facts = containers.collect(LiveHost())
    assert set(facts.tools) == set(containers.TOOLS)
    for name, tool in facts.tools.items():
        assert tool.installed is (shutil.which(name) is not None) or tool.installed is None
    assert (facts.docker is None) == ("docker" in facts.unread)
    json.dumps(to_jsonable(facts))

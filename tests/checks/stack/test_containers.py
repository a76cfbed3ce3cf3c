"""stack.container.nvidia_runtime on host trees (stack.container.cdi: test_containers_cdi.py).

Real inputs: a Docker daemon.json with the nvidia runtime (microsoft/pai) and CDI specs
quoted in GitHub issues (driver 575.57.08, cut before its kind; driver 460.91.03 with its
kind but no devices). Synthetic: containerd configuration files (the layout
nvidia-ctk writes), the toolkit's config.toml, a complete CDI spec, the tools' --version
outputs, proc files.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from dolmen.checks.model import Status
from tests.checks.stack.hosts import (
    OS_RELEASE,
    by_subject,
    gpus_on_bus,
    modules,
    nvrm,
    run,
)
from tests.conftest import make_tree, recording

RUNTIME = "stack.container.nvidia_runtime"
CDI = "stack.container.cdi"
DAEMON = "cuda-env/openpai__daemon-openpai-nvidia-runtime.json"
EXCERPTS = "cuda-env/issues__cdi-spec-excerpts.md"
DOCKER = {"docker --version": "Docker version 28.2.2, build e6534b4\n"}
CTK = {"nvidia-ctk --version": "NVIDIA Container Toolkit CLI version 1.17.8\n"}
TOOLKIT_TOML = '[nvidia-container-runtime]\nmode = "{mode}"\n'
CONTAINERD_NVIDIA = """version = 3
[plugins."io.containerd.cri.v1.runtime".containerd.runtimes.nvidia]
  runtime_type = "io.containerd.runc.v2"
"""
CONTAINERD_RUNC = """version = 2
[plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc]
  runtime_type = "io.containerd.runc.v2"
"""


def _spec(driver: str, names: tuple[str, ...]) -> str:
    devices = "".join(
        f'- name: "{n}"\n  containerEdits:\n    deviceNodes:\n    - path: /dev/nvidia{i}\n'
        for i, n in enumerate(names)
    )
    return (
        "---\ncdiVersion: 0.5.0\ncontainerEdits:\n  hooks:\n  - args:\n    - nvidia-cdi-hook\n"
        f"    - enable-cuda-compat\n    - --host-driver-version={driver}\n"
        f"    hookName: createContainer\ndevices:\n{devices}kind: nvidia.com/gpu\n"
    )


def _host(root: Path, files: dict[str, str], commands: dict[str, str], gpus: int = 2) -> Path:
    """A host that ran its commands: one not in ``commands`` is absent from it (a tree
    without commands/ would say nothing about the tools)."""
    (root / "commands").mkdir(parents=True, exist_ok=True)
    return make_tree(
        root,
        files={
            **gpus_on_bus(gpus),
            "etc/os-release": OS_RELEASE["ubuntu"],
            "proc/modules": modules("nvidia"),
            "proc/driver/nvidia/version": nvrm("575.57.08"),
            **files,
        },
        commands=commands,
    )


# --- stack.container.nvidia_runtime ---------------------------------------------------------


def test_runtime_pass_real_daemon_json(tmp_path: Path) -> None:
    files = {
        "etc/docker/daemon.json": recording(DAEMON).read_text(),
        "etc/nvidia-container-runtime/config.toml": TOOLKIT_TOML.format(mode="auto"),
    }
    found = by_subject(run(_host(tmp_path, files, {**DOCKER, **CTK}), RUNTIME))
    docker = found["runtime:docker"]
    assert docker.status is Status.PASS and "default runtime" in docker.summary
    assert docker.evidence["runtimes"] == {"nvidia": "/usr/bin/nvidia-container-runtime"}
    assert found["runtime:nvidia-container-toolkit"].status is Status.PASS


def test_runtime_warn_toolkit_without_docker_runtime(tmp_path: Path) -> None:
    files = {"etc/docker/daemon.json": '{"log-driver": "json-file"}'}
    [f] = run(_host(tmp_path, files, {**DOCKER, **CTK}), RUNTIME)
    assert f.status is Status.WARN and "--gpus works" in f.summary
    assert f.remedy and "nvidia-ctk runtime configure --runtime=docker" in f.remedy


def test_runtime_fail_no_toolkit(tmp_path: Path) -> None:
    [f] = run(_host(tmp_path, {}, DOCKER), RUNTIME)
    assert f.status is Status.FAIL and f.subject == "runtime:docker"
    assert f.remedy and "sudo apt-get install -y nvidia-container-toolkit" in f.remedy


def test_runtime_fail_docker_config_does_not_parse(tmp_path: Path) -> None:
    files = {"etc/docker/daemon.json": '{"default-runtime": "nvidia",'}
    [f] = run(_host(tmp_path, files, {**DOCKER, **CTK}), RUNTIME)
    assert f.status is Status.FAIL and "dockerd will not start" in f.summary


def test_runtime_warn_toolkit_config_absent(tmp_path: Path) -> None:
    files = {"etc/docker/daemon.json": recording(DAEMON).read_text()}
    found = by_subject(run(_host(tmp_path, files, DOCKER), RUNTIME))
    assert found["runtime:docker"].status is Status.PASS
    assert found["runtime:nvidia-container-toolkit"].status is Status.WARN


@pytest.mark.parametrize(
    ("files", "status"),
    [
        ({"etc/containerd/conf.d/99-nvidia.toml": CONTAINERD_NVIDIA}, Status.PASS),
        ({"etc/containerd/config.toml": CONTAINERD_RUNC}, Status.WARN),
        ({"etc/containerd/config.toml": "version = 2\n[plugins\n"}, Status.FAIL),
    ],
)
def test_runtime_containerd(tmp_path: Path, files: dict[str, str], status: Status) -> None:
    commands = {"containerd --version": "containerd github.com/containerd/containerd v1.7.27\n"}
    if status is not Status.WARN:
        files = {
            **files,
            "etc/nvidia-container-runtime/config.toml": TOOLKIT_TOML.format(mode="auto"),
        }
    found = by_subject(run(_host(tmp_path, files, commands), RUNTIME))
    assert found["runtime:containerd"].status is status


def test_runtime_docker_containerd_is_skipped(tmp_path: Path) -> None:
    """Docker's own containerd (no CRI runtime configured) is not a Kubernetes runtime."""
    files = {
        "etc/docker/daemon.json": recording(DAEMON).read_text(),
        "etc/containerd/config.toml": 'disabled_plugins = ["cri"]\n',
        "etc/nvidia-container-runtime/config.toml": TOOLKIT_TOML.format(mode="auto"),
    }
    found = by_subject(run(_host(tmp_path, files, DOCKER), RUNTIME))
    assert found["runtime:containerd"].status is Status.SKIP


def test_runtime_skip_without_runtimes(tmp_path: Path) -> None:
    [f] = run(_host(tmp_path, {}, {}), RUNTIME)
    assert f.status is Status.SKIP and f.summary == "neither Docker nor containerd is installed"


def test_runtime_and_cdi_not_in_the_bundle(tmp_path: Path) -> None:
    """A bundle without commands/ and etc/ says nothing of Docker, containerd or CDI."""
    root = make_tree(tmp_path, files={**gpus_on_bus(2), "proc/modules": modules("nvidia")})
    [f] = run(root, RUNTIME)
    assert f.status is Status.SKIP and f.summary.startswith("not in this bundle: docker --version")
    assert "etc/docker/daemon.json" in f.summary
    [f] = run(root, CDI)
    assert f.status is Status.SKIP
    podman = make_tree(
        tmp_path / "p",
        files={**gpus_on_bus(2)},
        commands={"podman --version": "podman version 5.4.2\n"},
    )
    [f] = run(podman, CDI)
    assert f.status is Status.UNKNOWN and f.summary == "not in this bundle: etc/cdi"

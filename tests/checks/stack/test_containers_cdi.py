"""stack.container.cdi against the host (device nodes and mounted files exist, library
versions equal the loaded driver's, every GPU listed) and stack.container.nvidia_runtime's
CRI-O case, on host trees. Real inputs: CDI specs quoted in GitHub issues (driver 575.57.08
cut before its kind; driver 460.91.03 mounting that driver's libraries). Synthetic: the
complete specs in nvidia-ctk's layout, crio.conf drop-ins as nvidia-ctk writes them."""

from __future__ import annotations

import re
from pathlib import Path

from dolmen.checks.model import Status
from tests.checks.stack.hosts import by_subject, run
from tests.checks.stack.test_containers import EXCERPTS, TOOLKIT_TOML, _host
from tests.conftest import recording

CDI = "stack.container.cdi"
RUNTIME = "stack.container.nvidia_runtime"
LIBDIR = "usr/lib/x86_64-linux-gnu"


def _spec(driver: str, gpus: int, *, lib: str | None = None, extra_node: str = "") -> str:
    """A spec as nvidia-ctk writes it: one device per GPU and "all", the control nodes, the
    hook naming the driver, and libcuda of ``lib`` (default: the same driver)."""
    devices = "".join(
        f'- name: "{i}"\n  containerEdits:\n    deviceNodes:\n    - path: /dev/nvidia{i}\n'
        for i in range(gpus)
    )
    nodes = "".join(f"    - path: /dev/nvidia{i}\n" for i in range(gpus)) + extra_node
    devices += f"- name: all\n  containerEdits:\n    deviceNodes:\n{nodes}"
    return (
        "---\ncdiVersion: 0.5.0\nkind: nvidia.com/gpu\ncontainerEdits:\n"
        "  deviceNodes:\n  - path: /dev/nvidiactl\n  - path: /dev/nvidia-uvm\n"
        "  hooks:\n  - args:\n    - nvidia-cdi-hook\n    - enable-cuda-compat\n"
        f"    - --host-driver-version={driver}\n    hookName: createContainer\n"
        "    path: /usr/bin/nvidia-cdi-hook\n"
        f"  mounts:\n  - hostPath: /{LIBDIR}/libcuda.so.{lib or driver}\n"
        f"    containerPath: /{LIBDIR}/libcuda.so.{lib or driver}\n"
        "    options: [ro, nosuid, nodev, bind]\n"
        f"devices:\n{devices}"
    )


def _devs(gpus: int, driver: str = "575.57.08") -> dict[str, str]:
    """What the host has: its device nodes and the driver's libcuda."""
    files = {f"dev/nvidia{i}": "" for i in range(gpus)}
    files.update({"dev/nvidiactl": "", "dev/nvidia-uvm": ""})
    files[f"{LIBDIR}/libcuda.so.{driver}"] = ""
    return files


def test_good_spec_passes(tmp_path: Path) -> None:
    files = {"etc/cdi/nvidia.yaml": _spec("575.57.08", 2), **_devs(2)}
    [f] = run(_host(tmp_path, files, {}), CDI)
    assert f.status is Status.PASS, f.summary
    assert f.subject == "cdi:/etc/cdi/nvidia.yaml"
    assert f.evidence["spec_driver"] == "575.57.08" and f.evidence["missing"] == []


def test_stale_spec_after_a_driver_update(tmp_path: Path) -> None:
    """Generated for 570.124.06: its libcuda.so.570.124.06 is gone, the 575 driver is loaded."""
    files = {"etc/cdi/nvidia.yaml": _spec("570.124.06", 2), **_devs(2)}
    [f] = run(_host(tmp_path / "a", files, {}), CDI)
    assert f.status is Status.WARN
    assert "generated for driver 570.124.06 but driver 575.57.08 is loaded" in f.summary
    assert f"mounts files that do not exist: /{LIBDIR}/libcuda.so.570.124.06" in f.summary
    assert f.remedy and "nvidia-ctk cdi generate --output=/etc/cdi/nvidia.yaml" in f.remedy
    mode = {**files, "etc/nvidia-container-runtime/config.toml": TOOLKIT_TOML.format(mode="cdi")}
    [f] = run(_host(tmp_path / "b", mode, {}), CDI)
    assert f.status is Status.FAIL  # in CDI mode every GPU container uses the spec


def test_library_of_another_driver(tmp_path: Path) -> None:
    """The hook names the loaded driver, but a library of another one is mounted."""
    files = {"etc/cdi/nvidia.yaml": _spec("575.57.08", 2, lib="570.124.06"), **_devs(2)}
    files[f"{LIBDIR}/libcuda.so.570.124.06"] = ""
    [f] = run(_host(tmp_path, files, {}), CDI)
    assert f.status is Status.WARN and "mounts libraries of driver 570.124.06" in f.summary


def test_missing_device(tmp_path: Path) -> None:
    """A spec that names /dev/nvidia2 on a host whose third GPU is gone."""
    files = {"etc/cdi/nvidia.yaml": _spec("575.57.08", 3), **_devs(2)}
    [f] = run(_host(tmp_path, files, {}), CDI)
    assert f.status is Status.WARN
    assert "names device nodes that do not exist: /dev/nvidia2" in f.summary


def test_too_few_gpus_listed(tmp_path: Path) -> None:
    files = {"etc/cdi/nvidia.yaml": _spec("575.57.08", 1), **_devs(2)}
    [f] = run(_host(tmp_path, files, {}), CDI)
    assert f.status is Status.WARN and "lists 1 GPU(s), the host has 2" in f.summary


def test_devices_not_in_the_bundle_are_unknown(tmp_path: Path) -> None:
    """A bundle without dev/ cannot show the nodes exist: unknown, not pass."""
    files = {"etc/cdi/nvidia.yaml": _spec("575.57.08", 2), f"{LIBDIR}/libcuda.so.575.57.08": ""}
    [f] = run(_host(tmp_path, files, {}), CDI)
    assert f.status is Status.UNKNOWN and "not in this bundle: /dev/nvidiactl" in f.summary


def test_real_excerpts(tmp_path: Path) -> None:
    """The 575 excerpt lost its kind (unusable); the 460 one mounts driver 460.91.03's
    libraries on a host running 575.57.08, and names no device."""
    first, second = re.findall(r"```\n(.*?)```", recording(EXCERPTS).read_text(), re.S)[:2]
    files = {"etc/cdi/a.yaml": first, "etc/cdi/b.yaml": second, **_devs(2)}
    found = by_subject(run(_host(tmp_path, files, {}), CDI))
    a, b = found["cdi:/etc/cdi/a.yaml"], found["cdi:/etc/cdi/b.yaml"]
    assert a.status is Status.WARN and "unusable: malformed: no kind" in a.summary
    assert b.status is Status.WARN and b.evidence["spec_driver"] == "460.91.03"
    assert "generated for driver 460.91.03 but driver 575.57.08" in b.summary
    assert "lists 0 GPU(s), the host has 2" in b.summary
    assert "/dev/nvidia-modeset" in b.summary  # named, absent from this host's dev/


def test_absent_specs(tmp_path: Path) -> None:
    [f] = run(_host(tmp_path / "a", {}, {}), CDI)
    assert f.status is Status.SKIP
    podman = {"podman --version": "podman version 5.4.2\n"}
    [f] = run(_host(tmp_path / "b", {}, podman), CDI)
    assert f.status is Status.WARN and "podman uses CDI" in f.summary
    mode = {"etc/nvidia-container-runtime/config.toml": TOOLKIT_TOML.format(mode="cdi")}
    [f] = run(_host(tmp_path / "c", mode, {}), CDI)
    assert f.status is Status.FAIL and "CDI mode" in f.summary


CRIO_NVIDIA = """[crio.runtime]
default_runtime = "nvidia"
[crio.runtime.runtimes.nvidia]
runtime_path = "/usr/bin/nvidia-container-runtime"
runtime_type = "oci"
"""


def test_crio(tmp_path: Path) -> None:
    ctk = {"nvidia-ctk --version": "NVIDIA Container Toolkit CLI version 1.17.8\n"}
    toolkit = {"etc/nvidia-container-runtime/config.toml": TOOLKIT_TOML.format(mode="auto")}
    files = {"etc/crio/crio.conf": "[crio]\n", "etc/crio/crio.conf.d/99-nvidia.toml": CRIO_NVIDIA}
    found = by_subject(run(_host(tmp_path / "a", {**files, **toolkit}, ctk), RUNTIME))
    assert found["runtime:crio"].status is Status.PASS
    assert found["runtime:crio"].evidence["default_runtime"] == "nvidia"
    plain = {"etc/crio/crio.conf": '[crio.runtime]\ndefault_runtime = "crun"\n'}
    found = by_subject(run(_host(tmp_path / "b", plain, ctk), RUNTIME))
    f = found["runtime:crio"]
    assert f.status is Status.WARN
    assert f.remedy and "nvidia-ctk runtime configure --runtime=crio" in f.remedy
    broken = {"etc/crio/crio.conf": "[crio\n"}
    found = by_subject(run(_host(tmp_path / "c", broken, {}), RUNTIME))
    assert found["runtime:crio"].status is Status.FAIL

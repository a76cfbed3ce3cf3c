"""Stack checks on bundles that hold one part of a host (issue 8): what the driver answered
is evidence it is loaded; what the bundle did not record is named, never judged."""

from __future__ import annotations

from pathlib import Path

from dolmen.checks.model import Status
from tests.checks.stack.hosts import gpus_on_bus, run
from tests.conftest import make_tree, recording

XML = "nvidia-smi-xml/k8s-test-infra__hardware__qx-h100.xml"
NVCC_OUT = (
    "nvcc: NVIDIA (R) Cuda compiler driver\nCopyright (c) 2005-2025 NVIDIA Corporation\n"
    "Built on Wed_Aug_20_01:58:59_PM_PDT_2025\nCuda compilation tools, release 13.0, V13.0.88\n"
    "Build cuda_13.0.r13.0/compiler.36424714_0\n"
)


def test_driver_loaded_from_the_inventory_alone(tmp_path: Path) -> None:
    root = make_tree(tmp_path, commands={"nvidia-smi -q -x": recording(XML).read_text()})
    [f] = run(root, "stack.driver.loaded")
    assert f.status is Status.PASS and "answered for 8 GPU(s) (nvidia-smi)" in f.summary
    [f] = run(root, "security.module_signing")
    assert f.status is not Status.WARN or "not loaded" not in f.summary


def test_driver_loaded_from_nvlink_status_alone(tmp_path: Path) -> None:
    """nvidia-smi nvlink -s listing GPUs is the driver answering, even with no link up."""
    out = recording("nvidia-smi-nvlink/gpud__nvidia-smi.nvlink.status.a100").read_text()
    [f] = run(make_tree(tmp_path, commands={"nvidia-smi nvlink -s": out}), "stack.driver.loaded")
    assert f.status is Status.PASS and "answered nvidia-smi nvlink -s for 8 GPU(s)" in f.summary
    none = "GPU 0: NVIDIA L40S (UUID: GPU-1)\nDevice does not have or support Nvlink\n"
    root = make_tree(tmp_path / "l40s", commands={"nvidia-smi nvlink -s": none})
    [f] = run(root, "stack.driver.loaded")
    assert f.status is Status.PASS


def test_gpus_on_the_bus_alone_are_each_judged_present(tmp_path: Path) -> None:
    """No driver list: gpu.present names each GPU the bus shows, by its bus id."""
    found = run(make_tree(tmp_path, files=gpus_on_bus(2)), "gpu.present")
    assert [f.status for f in found] == [Status.PASS] * 3
    assert found[0].subject == "host" and all(f.subject.startswith("gpu:") for f in found[1:])


def test_driver_loaded_unknown_without_proc_modules(tmp_path: Path) -> None:
    """GPUs on the bus, no proc/ and no inventory in the bundle: unknown, named."""
    [f] = run(make_tree(tmp_path, files=gpus_on_bus(2)), "stack.driver.loaded")
    assert f.status is Status.UNKNOWN
    assert "not in this bundle: proc/modules" in f.summary


def test_module_signing_does_not_say_not_loaded_without_proc_modules(tmp_path: Path) -> None:
    files = {**gpus_on_bus(1), "sys/module/module/parameters/sig_enforce": "Y\n"}
    root = make_tree(
        tmp_path, files=files, commands={"nvidia-smi -q -x": recording(XML).read_text()}
    )
    [f] = run(root, "security.module_signing")
    assert f.status is Status.PASS and "not loaded" not in f.summary


def test_nvcc_alone_names_what_it_was_not_compared_with(tmp_path: Path) -> None:
    [f] = run(make_tree(tmp_path, commands={"nvcc --version": NVCC_OUT}), "stack.nvcc")
    assert f.status is Status.SKIP and f.summary.startswith("nvcc 13.0.88: not in this bundle")
    assert "usr/local" in f.summary and "proc/driver/nvidia/version" in f.summary
    [f] = run(make_tree(tmp_path / "e"), "stack.nvcc")
    assert f.status is Status.SKIP and f.summary == "not in this bundle: nvcc --version"

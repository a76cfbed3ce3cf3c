"""stack.* on one pasted file: a bundle without etc/cdi, the headers or the linker cache says
nothing of a CDI spec or of cuDNN, NCCL and TensorRT (each check names what the bundle lacks
instead of "none installed"); what the file does show counts (an lspci -vvv's "Kernel driver
in use: nvidia" is the module, loaded)."""

from __future__ import annotations

from pathlib import Path

from dolmen.checks.model import Status
from tests.checks.helpers import run_check
from tests.conftest import make_tree, recording

H100_XML = "nvidia-smi-xml/k8s-test-infra__hardware__qx-h100.xml"


def pasted(tmp_path: Path) -> Path:
    xml = recording(H100_XML).read_text()
    partial = {"dolmen-snapshot.json": '{"partial": true}'}
    return make_tree(tmp_path / "t", files=partial, commands={"nvidia-smi -q -x": xml})


def test_cdi_specs_not_in_the_bundle(tmp_path: Path) -> None:
    [f] = run_check(pasted(tmp_path), "stack.container.cdi")
    assert f.status is Status.SKIP
    assert f.summary.startswith("NVIDIA CDI specs: not in this bundle: etc/cdi")


def test_libraries_not_in_the_bundle(tmp_path: Path) -> None:
    [f] = run_check(pasted(tmp_path), "stack.libraries.consistent")
    assert f.status is Status.SKIP
    assert f.summary.startswith("cuDNN, NCCL and TensorRT: not in this bundle: ")


def test_a_linker_cache_without_them_says_none(tmp_path: Path) -> None:
    """The real ldconfig -p of a 515 driver host: no libcudnn, libnccl or libnvinfer in it."""
    ldconfig = recording("cuda-env/nvidia-container-toolkit__rootfs-1__ldconfig-p.txt")
    root = make_tree(tmp_path / "t", commands={"ldconfig -p": ldconfig.read_text()})
    [f] = run_check(root, "stack.libraries.consistent")
    assert f.status is Status.SKIP and f.summary.startswith("no cuDNN, NCCL or TensorRT")


def test_lspci_shows_the_driver_bound(tmp_path: Path) -> None:
    """The real lspci -vvv of an 8x H100 node: each GPU's 'Kernel driver in use: nvidia'."""
    lspci = recording("lspci/gpud__lspci-vvv").read_text()
    [f] = run_check(
        make_tree(tmp_path / "t", commands={"lspci -vvv": lspci}), "stack.driver.loaded"
    )
    assert f.status is Status.PASS and len(f.evidence["bound"]) == 8
    unbound = lspci.replace("Kernel driver in use: nvidia", "Kernel driver in use: vfio-pci")
    [f] = run_check(
        make_tree(tmp_path / "u", commands={"lspci -vvv": unbound}), "stack.driver.loaded"
    )
    assert f.status is Status.UNKNOWN  # bound elsewhere (passthrough): proc/modules would tell


def test_boot_log_shows_the_driver_loaded_at_that_boot(tmp_path: Path) -> None:
    """A boot log alone: NVRM's "loading NVIDIA UNIX ... Kernel Module  550.90.07" shows the
    module loaded at that boot; the summary says when, and that now is not in the bundle."""
    log = recording("kernel-logs/gpud__dmesg.decode.iso.log.1").read_text()
    [f] = run_check(make_tree(tmp_path / "t", commands={"dmesg": log}), "stack.driver.loaded")
    assert f.status is Status.PASS, f.summary
    assert "550.90.07 was loaded at 2025-01-17T15:36:55" in f.summary
    assert "whether it is loaded now is not in this bundle" in f.summary


def test_driver_unseen_asks_for_the_source_not_an_install(tmp_path: Path) -> None:
    """The same log without its NVRM load line: neither proc/modules nor the driver's version
    file is there: unknown, and the fix is to bring them."""
    log = recording("kernel-logs/gpud__dmesg.decode.iso.log.1").read_text()
    log = "\n".join(x for x in log.splitlines() if "NVRM: loading" not in x)
    [f] = run_check(make_tree(tmp_path / "t", commands={"dmesg": log}), "stack.driver.loaded")
    assert f.status is Status.UNKNOWN and "not in this bundle" in f.summary
    assert f.remedy is not None and "Install" not in f.remedy and "proc/modules" in f.remedy

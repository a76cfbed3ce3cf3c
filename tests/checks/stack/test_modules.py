"""stack.modules on host trees.

Real inputs: the /sys/class/infiniband tree of an H100 node (8 ConnectX-7 ports and a
RoCE bond) and a kernel log with nvidia-peermem errors (gpud). Synthetic: proc/modules
and the GPUs' sysfs attributes.
"""

from __future__ import annotations

import shutil
from pathlib import Path

from dolmen.checks.model import Status
from tests.checks.stack.hosts import by_subject, gpus_on_bus, modules, run, unreadable
from tests.conftest import make_tree, recording

MODULES = "stack.modules"
IB_TREE = "sysfs/gpud__sys-class-infiniband-h100.0"
PEERMEM_LOG = "kernel-logs/gpud__dmesg.peermem.log.0"


def _host(root: Path, loaded: tuple[str, ...], *, ib: bool, dmesg: str = "") -> Path:
    make_tree(
        root,
        files={**gpus_on_bus(8), "proc/modules": modules(*loaded)},
        commands={"dmesg": dmesg},
    )
    if ib:
        shutil.copytree(recording(IB_TREE), root / "sys/class/infiniband", symlinks=True)
    return root


def test_modules_pass(tmp_path: Path) -> None:
    root = _host(tmp_path, ("nvidia_peermem", "nvidia_uvm", "nvidia", "mlx5_ib"), ib=True)
    found = by_subject(run(root, MODULES))
    assert set(found) == {"module:nvidia_uvm", "module:nvidia_peermem"}
    assert all(f.status is Status.PASS for f in found.values())


def test_modules_warn_uvm_and_peermem_missing(tmp_path: Path) -> None:
    root = _host(tmp_path, ("nvidia", "mlx5_ib"), ib=True)
    found = by_subject(run(root, MODULES))
    uvm, peermem = found["module:nvidia_uvm"], found["module:nvidia_peermem"]
    assert uvm.status is Status.WARN and uvm.remedy and "modprobe nvidia_uvm" in uvm.remedy
    assert peermem.status is Status.WARN and "GPUDirect RDMA" in peermem.summary
    assert "mlx5_0" in peermem.evidence["hcas"]
    assert peermem.remedy and "modprobe nvidia_peermem" in peermem.remedy


def test_modules_no_peermem_needed_without_hcas(tmp_path: Path) -> None:
    found = by_subject(run(_host(tmp_path, ("nvidia_uvm", "nvidia"), ib=False), MODULES))
    assert set(found) == {"module:nvidia_uvm"}


def test_peermem_errors_in_the_log_are_reported_once_by_gpu_peermem(tmp_path: Path) -> None:
    """stack.modules judges the module; its kernel-log errors are gpu.peermem's alone."""
    log = recording(PEERMEM_LOG).read_text()
    root = _host(tmp_path, ("nvidia_peermem", "nvidia_uvm", "nvidia"), ib=True, dmesg=log)
    assert set(by_subject(run(root, MODULES))) == {"module:nvidia_uvm", "module:nvidia_peermem"}
    f = by_subject(run(root, "gpu.peermem"))["log:nvidia-peermem"]
    assert f.status is not Status.PASS and "detected invalid context" in f.summary


def test_modules_skip_and_unknown(tmp_path: Path) -> None:
    [f] = run(_host(tmp_path / "a", ("mlx5_ib",), ib=True), MODULES)
    assert f.status is Status.SKIP and "stack.driver.loaded" in f.summary
    root = make_tree(
        tmp_path / "b",
        files={**gpus_on_bus(1), **unreadable({"proc/modules": "EACCES"}), "proc/modules": ""},
    )
    [f] = run(root, MODULES)
    assert f.status is Status.UNKNOWN and "insufficient permissions" in f.summary

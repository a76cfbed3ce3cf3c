"""Software-stack facts: driver version formats, modules, the linker cache (a real
``ldconfig -p`` of a 515.105.01 host), headers, toolkits, nvcc (real issue excerpts),
broken links, environment; tree hosts, malformed inputs and a live smoke test.

Synthetic inputs, where no licensed recording exists (PROVENANCE.md section 4 lists them as
gaps): /proc/driver/nvidia/version lines (the two formats quoted in source comments),
/proc/modules lines, cudnn_version.h / nccl.h / NvInferVersion.h define files (NVIDIA SLA:
not vendored), CUDA version.json / version.txt.
"""

from __future__ import annotations

import json
import os
import re
import shutil
from pathlib import Path

import pytest

from dolmen.facts import stack, to_jsonable
from dolmen.facts.stack.versions import (
    parse_cuda_h,
    parse_cuda_version_json,
    parse_cuda_version_txt,
    parse_defines,
    parse_ldconfig,
    parse_nvcc_version,
    parse_nvrm_version,
    parse_proc_modules,
    soname_version,
    version_from_defines,
)
from dolmen.host.live import LiveHost
from dolmen.host.tree import TreeHost
from tests.conftest import make_tree, recording

LDCONFIG = "cuda-env/nvidia-container-toolkit__rootfs-1__ldconfig-p.txt"
NVCC = "cuda-env/issues__nvcc-version-excerpts.md"

OPEN_580 = (
    "NVRM version: NVIDIA UNIX Open Kernel Module for x86_64  580.95.05  Release Build  "
    "(dvs-builder@U16-I3-B03-4-3)  Tue Sep 23 09:51:55 UTC 2025\n"
    "GCC version:  gcc version 13.3.0 (Ubuntu 13.3.0-6ubuntu2~24.04)\n"
)
PROPRIETARY_550 = (
    "NVRM version: NVIDIA UNIX x86_64 Kernel Module  550.135  Tue Nov 12 16:54:56 UTC 2024\n"
    "GCC version:  gcc version 12.2.0 (Debian 12.2.0-14)\n"
)
MODULES = (
    "nvidia_uvm 4956160 0 - Live 0x0000000000000000 (POE)\n"
    "nvidia_drm 135168 0 - Live 0x0000000000000000 (POE)\n"
    "nvidia_modeset 1638400 1 nvidia_drm, Live 0x0000000000000000 (POE)\n"
    "nvidia 104091648 2 nvidia_uvm,nvidia_modeset, Live 0x0000000000000000 (POE)\n"
    "ib_core 458752 8 rdma_ucm,ib_uverbs, Live 0x0000000000000000\n"
)
CUDNN_H = "#define CUDNN_MAJOR 9\n#define CUDNN_MINOR 1\n#define CUDNN_PATCHLEVEL 0\n"
NCCL_H = (
    '#define NCCL_MAJOR 2\n#define NCCL_MINOR 21\n#define NCCL_PATCH 5\n#define NCCL_SUFFIX ""\n'
)
TRT10_H = (
    "#define TRT_MAJOR_ENTERPRISE 10\n#define TRT_MINOR_ENTERPRISE 0\n"
    "#define TRT_PATCH_ENTERPRISE 1\n"
    "#define NV_TENSORRT_MAJOR TRT_MAJOR_ENTERPRISE //!< TensorRT major version.\n"
    "#define NV_TENSORRT_MINOR TRT_MINOR_ENTERPRISE //!< TensorRT minor version.\n"
    "#define NV_TENSORRT_PATCH TRT_PATCH_ENTERPRISE //!< TensorRT patch version.\n"
)
VERSION_JSON = json.dumps({"cuda": {"name": "CUDA SDK", "version": "12.4.1"}})


def _blocks(md: str) -> list[str]:
    return re.findall(r"```\n(.*?)```", md, re.S)


def _none_fields_have_reasons(facts: stack.StackFacts) -> None:
    for name in (
        "driver_version",
        "driver_flavour",
        "module_version",
        "modules",
        "libraries",
        "libcuda_version",
        "libnvidia_ml_version",
        "cudnn",
        "nccl",
        "tensorrt",
        "cuda_default",
        "nvcc_release",
        "nvcc_version",
    ):
        if getattr(facts, name) is None:
            assert facts.unread.get(name), f"{name} is None without a reason"


# --- parsers -----------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "version", "flavour"),
    [
        (OPEN_580, "580.95.05", "open"),
        (PROPRIETARY_550, "550.135", "proprietary"),
        (OPEN_580.replace("x86_64", "aarch64"), "580.95.05", "open"),
        (
            "NVRM version: NVIDIA UNIX x86_64 Kernel Module  384.111  Tue Dec 19 23:51:45 PST 2017",
            "384.111",
            "proprietary",
        ),
    ],
)
def test_nvrm_version(text: str, version: str, flavour: str) -> None:
    drv = parse_nvrm_version(text)
    assert drv is not None and (drv.version, drv.flavour) == (version, flavour)


@pytest.mark.parametrize(
    "text", ["", "NVRM version: NVIDIA UNIX", "GCC version: 12", "\x00\xff\xfe", OPEN_580[:40]]
)
def test_nvrm_version_malformed(text: str) -> None:
    assert parse_nvrm_version(text) is None


def test_proc_modules() -> None:
    mods = parse_proc_modules(MODULES + "garbage line\n\x00\n")
    assert set(mods) == {"nvidia_uvm", "nvidia_drm", "nvidia_modeset", "nvidia", "ib_core"}
    assert mods["nvidia"].taints == "POE" and mods["nvidia"].refcount == 2
    assert mods["nvidia"].used_by == ("nvidia_uvm", "nvidia_modeset")
    assert mods["ib_core"].taints == ""
    assert parse_proc_modules("") == {}


def test_ldconfig_real_output() -> None:
    text = recording(LDCONFIG).read_text()
    libs = parse_ldconfig(text)
    header = int(text.split()[0])  # "743 libs found in cache ..."
    assert len(libs) == header
    cuda = [lib for lib in libs if lib.name == "libcuda.so.1"]
    assert cuda and cuda[0].path == "/lib/x86_64-linux-gnu/libcuda.so.1"
    assert cuda[0].arch == "libc6,x86-64"


def test_ldconfig_malformed() -> None:
    assert parse_ldconfig("") == []
    assert parse_ldconfig("\x00\xff garbage\n\tlibx.so (libc6) =>\n") == []


@pytest.mark.parametrize(
    ("filename", "stem", "version"),
    [
        ("libcuda.so.580.95.05", "libcuda", "580.95.05"),
        ("libcudnn.so.9", "libcudnn", "9"),
        ("libnccl.so.2.21.5", "libnccl", "2.21.5"),
        ("libcuda.so", "libcuda", None),
        ("libcuda.so.1.junk", "libcuda", None),
        ("libcudart.so.12", "libcuda", None),
    ],
)
def test_soname_version(filename: str, stem: str, version: str | None) -> None:
    assert soname_version(filename, stem) == version


@pytest.mark.parametrize(
    ("text", "names", "version"),
    [
        (CUDNN_H, ("CUDNN_MAJOR", "CUDNN_MINOR", "CUDNN_PATCHLEVEL"), "9.1.0"),
        (NCCL_H, ("NCCL_MAJOR", "NCCL_MINOR", "NCCL_PATCH"), "2.21.5"),
        (TRT10_H, ("NV_TENSORRT_MAJOR", "NV_TENSORRT_MINOR", "NV_TENSORRT_PATCH"), "10.0.1"),
        (
            CUDNN_H.replace("#define CUDNN_PATCHLEVEL 0\n", ""),
            ("CUDNN_MAJOR", "CUDNN_MINOR", "CUDNN_PATCHLEVEL"),
            None,
        ),
        ("#define NCCL_MAJOR x\n", ("NCCL_MAJOR",), None),
        ("\x00\xff", ("NCCL_MAJOR",), None),
    ],
)
def test_header_versions(text: str, names: tuple[str, ...], version: str | None) -> None:
    assert version_from_defines(parse_defines(text), names) == version


def test_toolkit_version_files() -> None:
    assert parse_cuda_version_json(VERSION_JSON) == "12.4.1"
    assert parse_cuda_version_json("{not json") is None
    assert parse_cuda_version_json('{"cuda": "12.4"}') is None
    assert parse_cuda_version_json("[]") is None
    assert parse_cuda_version_txt("CUDA Version 10.2.89\n") == "10.2.89"
    assert parse_cuda_version_txt("") is None
    assert parse_cuda_h("#define CUDA_VERSION 12040\n") == "12.4"
    assert parse_cuda_h("#define CUDA_VERSION 13000 /* */\n") == "13.0"
    assert parse_cuda_h("#define CUDA_VERSION abc\n") is None


def test_nvcc_real_excerpts() -> None:
    blocks = _blocks(recording(NVCC).read_text())
    versions = [v for b in blocks if (v := parse_nvcc_version(b)) is not None]
    assert versions and (versions[0].release, versions[0].full) == ("12.4", "12.4.131")
    assert parse_nvcc_version("nvcc: NVIDIA (R) Cuda compiler driver\n") is None
    assert parse_nvcc_version("\x00") is None


# --- collect on trees ----------------------------------------------------------------------


def _link(root: Path, rel: str, target: str) -> None:
    p = root / rel
    p.parent.mkdir(parents=True, exist_ok=True)
    os.symlink(target, p)


def test_collect_full_tree(tmp_path: Path) -> None:
    ldconfig = recording(LDCONFIG).read_text()
    root = make_tree(
        tmp_path / "host",
        files={
            "proc/driver/nvidia/version": OPEN_580,
            "proc/modules": MODULES,
            "sys/module/nvidia/version": "580.95.05\n",
            "lib/x86_64-linux-gnu/libcuda.so.515.105.01": "",
            "usr/include/x86_64-linux-gnu/cudnn_version_v9.h": CUDNN_H,
            "usr/include/nccl.h": NCCL_H,
            "usr/include/x86_64-linux-gnu/NvInferVersion.h": TRT10_H,
            "usr/local/cuda-12.4/version.json": VERSION_JSON,
            "usr/local/cuda-11.8/version.txt": "CUDA Version 11.8.89\n",
            "usr/local/cuda-12.4/bin/nvcc": "",
            "usr/local/cuda-12.4/lib64/libcublas.so.12.4.5.8": "",
            "dolmen-snapshot.json": json.dumps(
                {
                    "environment": {
                        "CUDA_HOME": "/usr/local/cuda-12.4",
                        "LD_LIBRARY_PATH": "/usr/local/cuda/lib64::/opt/gone/lib:relative/lib",
                        "PATH": "/usr/local/cuda/bin",
                        "HOME": "/root",
                    }
                }
            ),
        },
        commands={
            "ldconfig -p": ldconfig,
            "nvcc --version": _blocks(recording(NVCC).read_text())[0],
        },
    )
    _link(root, "lib/x86_64-linux-gnu/libcuda.so.1", "libcuda.so.515.105.01")
    _link(root, "usr/include/cudnn_version.h", "x86_64-linux-gnu/cudnn_version_v9.h")
    _link(root, "usr/local/cuda", "cuda-12.4")
    _link(root, "usr/local/cuda-12.4/lib64/libcublas.so.12", "libcublas.so.12.4.5.8")
    _link(root, "usr/local/cuda-12.4/lib64/libcublasLt.so.12", "libcublasLt.so.12.4.5.8")
    _link(root, "usr/lib/x86_64-linux-gnu/libnvidia-ml.so.1", "/usr/lib/x86_64-linux-gnu/gone")
    _link(root, "usr/lib/x86_64-linux-gnu/libfoo.so.1", "gone")  # not a stack library

    facts = stack.collect(TreeHost(root))
    assert (facts.driver_version, facts.driver_flavour) == ("580.95.05", "open")
    assert facts.module_version == "580.95.05"
    assert facts.modules is not None and facts.modules["nvidia_uvm"]
    assert not facts.modules["nvidia_peermem"] and not facts.modules["gdrdrv"]
    assert facts.module_taints["nvidia"] == "POE"
    assert facts.userspace_versions == ("515.105.01",)  # the recorded host's driver
    assert facts.libcuda_version == "515.105.01"  # through the link in the tree
    assert facts.libnvidia_ml_version is None and "libnvidia_ml_version" in facts.unread
    assert facts.cudnn == stack.Component("9.1.0", "usr/include/cudnn_version.h")
    assert facts.nccl is not None and facts.nccl.version == "2.21.5"
    assert facts.tensorrt is not None and facts.tensorrt.version == "10.0.1"
    assert {(t.path, t.version) for t in facts.toolkits} == {
        ("usr/local/cuda-11.8", "11.8.89"),
        ("usr/local/cuda-12.4", "12.4.1"),
    }
    assert facts.cuda_default == "/usr/local/cuda-12.4"
    assert (facts.nvcc_release, facts.nvcc_version) == ("12.4", "12.4.131")
    broken = {b.path: b.target for b in facts.broken_links}
    assert broken == {
        "usr/local/cuda-12.4/lib64/libcublasLt.so.12": "libcublasLt.so.12.4.5.8",
        "usr/lib/x86_64-linux-gnu/libnvidia-ml.so.1": "/usr/lib/x86_64-linux-gnu/gone",
    }
    assert "HOME" not in facts.env and facts.env["CUDA_HOME"] == "/usr/local/cuda-12.4"
    missing = {(e.variable, e.entry, e.exists) for e in facts.env_missing}
    assert missing == {
        ("LD_LIBRARY_PATH", "/opt/gone/lib", False),
        ("LD_LIBRARY_PATH", "relative/lib", None),
    }
    _none_fields_have_reasons(facts)
    json.dumps(to_jsonable(facts))


def test_collect_proprietary_without_ldconfig(tmp_path: Path) -> None:
    root = make_tree(
        tmp_path,
        files={"proc/driver/nvidia/version": PROPRIETARY_550},
        commands={"ldconfig -p": ("", 1, "ldconfig: Can't open cache file\n")},
    )
    facts = stack.collect(TreeHost(root))
    assert (facts.driver_version, facts.driver_flavour) == ("550.135", "proprietary")
    assert facts.libraries is None and facts.unread["libraries"].startswith("command failed")
    assert facts.unread["libcuda_version"].startswith("unreadable")
    _none_fields_have_reasons(facts)


def test_collect_empty_tree(tmp_path: Path) -> None:
    """An empty tree recorded nothing: every source is "not in this bundle", never "missing"
    (which would read as "the driver is not loaded")."""
    facts = stack.collect(TreeHost(make_tree(tmp_path)))
    assert facts.driver_version is None
    assert facts.unread["driver_version"] == "not in this bundle: proc/driver/nvidia/version"
    assert facts.modules is None and facts.unread["modules"] == "not in this bundle: proc/modules"
    assert (
        facts.libraries is None and facts.unread["libraries"] == "not in this bundle: ldconfig -p"
    )
    assert facts.toolkits == () and facts.unread["toolkits"] == "not in this bundle: usr/local"
    assert (
        facts.broken_links == () and facts.unread["broken_links"] == "not in this bundle: usr/lib"
    )
    assert facts.unread["cudnn"] == "not in this bundle: ldconfig -p" and facts.env == {}
    _none_fields_have_reasons(facts)


def test_collect_host_without_a_driver(tmp_path: Path) -> None:
    """A tree that recorded proc/, sys/, usr/ and its commands, without the driver: missing."""
    for folder in ("proc", "sys", "usr/local", "usr/lib/x86_64-linux-gnu"):
        (tmp_path / folder).mkdir(parents=True)
    root = make_tree(tmp_path, files={"proc/modules": "ext4 1 0 - Live 0x0\n"})
    (root / "commands").mkdir()
    facts = stack.collect(TreeHost(root))
    assert facts.unread["driver_version"].startswith("missing: proc/driver/nvidia/version")
    assert facts.modules == {m: False for m in stack.NVIDIA_MODULES}
    assert facts.unread["module_version"].endswith("(nvidia not loaded)")
    assert facts.unread["libraries"].startswith("missing")
    assert "toolkits" not in facts.unread and "broken_links" not in facts.unread


@pytest.mark.parametrize("junk", ["", "\x00\xff\xfe" * 50, "NVRM version: NVIDIA UNIX"])
def test_collect_malformed_inputs(tmp_path: Path, junk: str) -> None:
    root = make_tree(
        tmp_path,
        files={"proc/driver/nvidia/version": junk, "proc/modules": junk or "x\n"},
        commands={"ldconfig -p": junk, "nvcc --version": junk},
    )
    facts = stack.collect(TreeHost(root))
    assert facts.driver_version is None and facts.unread["driver_version"].startswith("malformed")
    assert facts.libraries is None and facts.unread["libraries"].startswith("malformed")
    assert facts.nvcc_release is None and facts.unread["nvcc_version"].startswith("malformed")
    _none_fields_have_reasons(facts)


def test_live_smoke() -> None:
    facts = stack.collect(LiveHost())
    _none_fields_have_reasons(facts)
    if shutil.which("nvcc"):
        assert facts.nvcc_release is not None
    if Path("/proc/driver/nvidia/version").exists():
        assert facts.driver_version is not None
    json.dumps(to_jsonable(facts))

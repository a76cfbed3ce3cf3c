"""The snapshot's host side: faithful links, placeholders, no secrets."""

from __future__ import annotations

import os
from pathlib import Path

from dolmen.host.bundle import _materialize
from dolmen.host.redact import is_secret, safe_environment


def test_secret_paths_are_never_captured() -> None:
    for rel in [
        "etc/shadow",
        "etc/gshadow-",
        "etc/ssh/ssh_host_ed25519_key",
        "etc/ssl/private/server.pem",
        "proc/1/environ",
        "home/alice/.kube/config",
        "var/lib/dolmen/keys/audit.key",
        "etc/vault/token",
        "sys/firmware/efi/efivars/PK-8be4df61-93ca-11d2-aa0d-e0f75e0f5a6b",
    ]:
        assert is_secret(rel), rel
    for rel in [
        "etc/os-release",
        "proc/cpuinfo",
        "sys/class/infiniband/mlx5_0/ports/1/state",
        "sys/firmware/efi/efivars/SecureBoot-8be4df61-93ca-11d2-aa0d-e0f75e0f5a6b",
    ]:
        assert not is_secret(rel), rel


def test_environment_is_allow_listed() -> None:
    env = {
        "PATH": "/usr/bin",
        "CUDA_HOME": "/usr/local/cuda",
        "NCCL_IB_HCA": "mlx5",
        "AWS_SECRET_ACCESS_KEY": "x",
        "VAULT_TOKEN": "s.abc",
        "NVIDIA_API_KEY": "nvapi-x",
        "HOME": "/root",
    }
    assert safe_environment(env) == {
        "CUDA_HOME": "/usr/local/cuda",
        "NCCL_IB_HCA": "mlx5",
        "PATH": "/usr/bin",
    }


def test_materialize_recreates_links_relative(tmp_path: Path) -> None:
    live = tmp_path / "live"
    (live / "sys/devices/pci0000:00/0000:00:01.0/net/eth0").mkdir(parents=True)
    (live / "sys/devices/pci0000:00/0000:00:01.0/net/eth0/operstate").write_text("up\n")
    (live / "sys/class/net").mkdir(parents=True)
    os.symlink("../../devices/pci0000:00/0000:00:01.0/net/eth0", live / "sys/class/net/eth0")
    (live / "etc").mkdir()
    (live / "usr/share/zoneinfo").mkdir(parents=True)
    (live / "usr/share/zoneinfo/UTC").write_text("TZif")
    os.symlink("/usr/share/zoneinfo/UTC", live / "etc/localtime")  # absolute on the host
    tree = tmp_path / "tree"
    tree.mkdir()
    assert _materialize(live, "sys/class/net/eth0/operstate", tree) is None
    assert _materialize(live, "etc/localtime", tree) is None
    assert (tree / "sys/class/net/eth0").is_symlink()
    assert (tree / "sys/class/net/eth0/operstate").read_text() == "up\n"
    assert os.readlink(tree / "etc/localtime") == "../usr/share/zoneinfo/UTC"
    assert (tree / "etc/localtime").read_text() == "TZif"
    assert _materialize(live, "sys/absent/file", tree) is None
    assert not (tree / "sys/absent").exists()


def test_link_only_and_exists_only_paths_keep_no_bytes(tmp_path: Path) -> None:
    """A library link checked for breakage keeps its link; its target is not copied."""
    live = tmp_path / "live"
    lib = live / "usr/lib"
    lib.mkdir(parents=True)
    (lib / "libcuda.so.580.1").write_bytes(b"\x7fELF" + b"x" * 100_000)
    os.symlink("libcuda.so.580.1", lib / "libcuda.so.1")
    tree = tmp_path / "tree"
    tree.mkdir()
    assert _materialize(live, "usr/lib/libcuda.so.1", tree, "link") is None
    assert os.readlink(tree / "usr/lib/libcuda.so.1") == "libcuda.so.580.1"
    assert not (tree / "usr/lib/libcuda.so.580.1").exists()
    assert _materialize(live, "usr/lib/libcuda.so.1", tree, "exists") is None
    assert (tree / "usr/lib/libcuda.so.580.1").stat().st_size == 0  # placeholder only


def test_listed_folder_keeps_names_and_types(tmp_path: Path) -> None:
    live = tmp_path / "live"
    cpu = live / "sys/devices/system/cpu"
    for n in range(4):
        (cpu / f"cpu{n}").mkdir(parents=True)
    (cpu / "online").write_text("0-3\n")
    tree = tmp_path / "tree"
    tree.mkdir()
    assert _materialize(live, "sys/devices/system/cpu", tree, "list") is None
    assert sorted(p.name for p in (tree / "sys/devices/system/cpu").iterdir()) == [
        "cpu0",
        "cpu1",
        "cpu2",
        "cpu3",
        "online",
    ]

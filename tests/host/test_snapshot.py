"""Snapshots: faithful links, no secrets, atomic output, reopened as the same host."""

from __future__ import annotations

import json
import os
import tarfile
from pathlib import Path

from dolmen.host import open_host
from dolmen.host.snapshot import _materialize, capture, is_secret, safe_environment


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


def test_capture_live_host_round_trip(tmp_path: Path) -> None:
    out = tmp_path / "out" / "bundle.tar.gz"
    meta = capture(out, subsystems=["os", "memory"])
    assert out.is_file() and meta["path"] == str(out)
    assert [p.name for p in out.parent.iterdir()] == ["bundle.tar.gz"]  # no temp left
    assert out.stat().st_mode & 0o777 == 0o600
    with tarfile.open(out) as tar:
        names = tar.getnames()
    assert not any("shadow" in n or "environ" in n for n in names)
    with open_host(out) as host:
        doc = json.loads(host.read("dolmen-snapshot.json"))
        assert doc["format"] == "dolmen.snapshot/1"
        assert "uname%20-a" in doc["captured"]["commands"]
        assert host.run(["uname", "-a"]).ok
        # a command that is not installed here is listed with its reason
        for key in ("nvidia-smi%20-q%20-x", "ibstat"):
            assert key in doc["not_captured"]
            assert host.run(key.split("%20")).reason == doc["not_captured"][key]


def test_capture_as_tree_folder(tmp_path: Path) -> None:
    meta = capture(tmp_path, as_tree=True, subsystems=["os"])
    tree = Path(meta["path"])
    assert tree.parent == tmp_path and (tree / "dolmen-snapshot.json").is_file()
    assert not [p for p in tmp_path.iterdir() if p.name.startswith(".dolmen-snapshot")]

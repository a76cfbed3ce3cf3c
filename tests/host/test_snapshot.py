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


def test_proc_sys_files_are_captured(tmp_path: Path) -> None:
    """procfs refuses one huge read with ENOMEM; chunked reads capture sysctls."""
    meta = capture(tmp_path, as_tree=True, subsystems=["tuning"])
    tree = Path(meta["path"])
    assert (tree / "proc/sys/vm/swappiness").read_text().strip().isdigit()
    assert not any(k.startswith("proc/sys") for k in meta["not_captured"])


VOLATILE = ("uptime", "free", "available", "meminfo", "used", "inodes", "attempts")


def _diff(a: object, b: object, path: str = "") -> list[str]:
    if isinstance(a, dict) and isinstance(b, dict):
        return [d for k in set(a) | set(b) for d in _diff(a.get(k), b.get(k), f"{path}.{k}")]
    if isinstance(a, list) and isinstance(b, list) and len(a) == len(b):
        return [d for i, (x, y) in enumerate(zip(a, b)) for d in _diff(x, y, f"{path}[{i}]")]
    return [] if a == b or any(v in path for v in VOLATILE) else [f"{path}: {a!r} != {b!r}"]


def test_facts_of_a_snapshot_are_the_live_facts(tmp_path: Path) -> None:
    """The snapshot replays what the live host showed, refused reads included."""
    from dolmen.facts import FactStore, to_jsonable
    from dolmen.host.live import LiveHost

    names = ["os", "cpu", "numa", "pci", "network", "security", "tuning", "stack", "containers"]
    live = {k: to_jsonable(v) for k, v in FactStore(LiveHost()).collect(names).items()}
    meta = capture(tmp_path, as_tree=True, subsystems=names)
    with open_host(meta["path"]) as host:
        snap = {k: to_jsonable(v) for k, v in FactStore(host).collect(names).items()}
    assert _diff(live, snap) == []

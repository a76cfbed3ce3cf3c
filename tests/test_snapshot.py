"""Snapshots: the live facts captured, atomic output, reopened as the same host."""

from __future__ import annotations

import json
import tarfile
from pathlib import Path

from dolmen.host import open_host
from dolmen.snapshot import capture
from tests.podman import cdi_folder


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
    with cdi_folder():  # a podman test's private CDI spec must not come and go in between
        live = {k: to_jsonable(v) for k, v in FactStore(LiveHost()).collect(names).items()}
        meta = capture(tmp_path, as_tree=True, subsystems=names)
    with open_host(meta["path"]) as host:
        snap = {k: to_jsonable(v) for k, v in FactStore(host).collect(names).items()}
    assert _diff(live, snap) == []


def test_extra_folders_are_read_for_the_capture(tmp_path: Path) -> None:
    """What no check reads is captured all the same: hw_counters, every pstore record."""
    from dolmen.host.recording import RecordingHost
    from dolmen.snapshot import EXTRA_FOLDERS, _read_folders

    for dev, port in (("mlx5_0", "1"), ("mlx5_1", "1")):
        folder = tmp_path / f"sys/class/infiniband/{dev}/ports/{port}/hw_counters"
        folder.mkdir(parents=True)
        (folder / "out_of_buffer").write_text("7\n")
    (tmp_path / "sys/fs/pstore").mkdir(parents=True)
    (tmp_path / "sys/fs/pstore/console-ramoops-0").write_text("Kernel panic - not syncing\n")
    (tmp_path / "var/lib/systemd/pstore/1733000000").mkdir(parents=True)
    (tmp_path / "var/lib/systemd/pstore/1733000000/dmesg.txt").write_text("Oops#1 Part1\n")
    host = RecordingHost(tmp_path)
    for pattern in EXTRA_FOLDERS:
        _read_folders(host, pattern)
    read = sorted(p for p, how in host.paths.items() if how == "read")
    assert read == [
        *(
            f"sys/class/infiniband/{d}/ports/1/hw_counters/out_of_buffer"
            for d in ("mlx5_0", "mlx5_1")
        ),
        "sys/fs/pstore/console-ramoops-0",
        "var/lib/systemd/pstore/1733000000/dmesg.txt",
    ]
    _read_folders(RecordingHost(tmp_path / "none"), EXTRA_FOLDERS[0])  # no HCA: nothing

"""The host tree contract: files, command keys, .rc/.err, confinement inside the root."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from dolmen.errors import InputError
from dolmen.host import RunStatus, command_key, open_host
from dolmen.host.tree import TreeHost
from tests.conftest import make_tree


def test_command_key_is_quoted_argv() -> None:
    assert command_key(["nvidia-smi", "-q", "-x"]) == "nvidia-smi%20-q%20-x"
    assert command_key(["ibstat"]) == "ibstat"
    assert command_key(["a/b", "c d"]) == "a%2Fb%20c%20d"


def test_files_and_commands(tmp_path: Path) -> None:
    root = make_tree(
        tmp_path,
        files={"proc/cpuinfo": "processor : 0\n", "etc/hostname": "node7\n"},
        commands={
            "nvidia-smi -q -x": "<xml/>",
            "ibstat": ("", 255, "ibpanic: [12] main: stat of IB device 'mlx5_0' failed\n"),
        },
    )
    host = TreeHost(root)
    assert host.read("proc/cpuinfo").startswith("processor")
    assert host.read_value("/etc/hostname") == "node7"
    assert host.hostname == "node7"
    assert host.read_opt("proc/meminfo") is None
    ok = host.run(["nvidia-smi", "-q", "-x"])
    assert ok.status is RunStatus.OK and ok.stdout == "<xml/>" and ok.rc == 0
    bad = host.run(["ibstat"])
    assert bad.status is RunStatus.FAILED and bad.rc == 255 and "ibpanic" in bad.stderr
    assert "exit 255" in bad.describe()
    missing = host.run(["dcgmi", "diag", "-r", "1"])
    assert missing.status is RunStatus.MISSING and "not recorded" in missing.reason


def test_key_override_reads_logical_name(tmp_path: Path) -> None:
    host = TreeHost(make_tree(tmp_path, commands={"dmesg": "[    1.0] hello\n"}))
    r = host.run(["dmesg", "--time-format", "iso", "--decode"], key="dmesg")
    assert r.ok and "hello" in r.stdout


def test_not_captured_reason_from_snapshot_meta(tmp_path: Path) -> None:
    root = make_tree(
        tmp_path,
        files={
            "dolmen-snapshot.json": '{"hostname": "gpu01", "not_captured": '
            '{"nvidia-smi%20-q%20-x": "timed out after 10 s"}}'
        },
    )
    host = TreeHost(root)
    assert host.hostname == "gpu01"
    r = host.run(["nvidia-smi", "-q", "-x"])
    assert r.status is RunStatus.MISSING and r.reason == "timed out after 10 s"


def test_bad_rc_file_is_missing_not_crash(tmp_path: Path) -> None:
    root = make_tree(tmp_path, commands={"ibstat": "x"})
    (root / "commands" / "ibstat.rc").write_text("garbage")
    r = TreeHost(root).run(["ibstat"])
    assert r.status is RunStatus.MISSING and "not an exit code" in r.reason


def test_links_stay_inside_the_tree(tmp_path: Path) -> None:
    outside = tmp_path / "secret"
    outside.write_text("outside!")
    root = tmp_path / "tree"
    make_tree(root, files={"etc/real": "inside", "sys/devices/pci0/gpu/vendor": "0x10de\n"})
    os.symlink("/etc/real", root / "etc/abs")  # absolute: re-rooted
    os.symlink("../../../../secret", root / "etc/escape")  # .. stops at the root
    os.symlink("../../devices/pci0/gpu", root / "sys" / "gpu0")
    (root / "sys/class").mkdir(parents=True)
    os.symlink("../devices/pci0/gpu", root / "sys/class/g")
    host = TreeHost(root)
    assert host.read("etc/abs") == "inside"
    with pytest.raises(FileNotFoundError):
        host.read("etc/escape")  # resolves to <root>/secret, which does not exist
    assert host.read_value("sys/class/g/vendor") == "0x10de"
    assert host.readlink("etc/abs") == "/etc/real"
    assert str(host.path("etc/escape")).startswith(str(root))


def test_link_loop_is_an_oserror(tmp_path: Path) -> None:
    root = make_tree(tmp_path / "t", files={"x": "1"})
    os.symlink("/b", root / "a")
    os.symlink("/a", root / "b")
    host = TreeHost(root)
    assert host.read_opt("a") is None


def test_glob_and_listdir(tmp_path: Path) -> None:
    root = make_tree(
        tmp_path,
        files={
            "sys/class/infiniband/mlx5_0/ports/1/state": "4: ACTIVE",
            "sys/class/infiniband/mlx5_1/ports/1/state": "1: DOWN",
        },
    )
    host = TreeHost(root)
    assert host.glob("sys/class/infiniband/*/ports/*/state") == [
        "sys/class/infiniband/mlx5_0/ports/1/state",
        "sys/class/infiniband/mlx5_1/ports/1/state",
    ]
    assert host.listdir("sys/class/infiniband") == ["mlx5_0", "mlx5_1"]
    assert host.listdir("nope") == []


def test_open_host_errors(tmp_path: Path) -> None:
    with pytest.raises(InputError, match="no such host tree"):
        open_host(tmp_path / "absent")


def test_bad_snapshot_meta_is_input_error(tmp_path: Path) -> None:
    host = TreeHost(make_tree(tmp_path, files={"dolmen-snapshot.json": "{not json"}))
    with pytest.raises(InputError, match="not valid JSON"):
        _ = host.meta


def test_write_is_atomic_and_keeps_mode(tmp_path: Path) -> None:
    root = make_tree(tmp_path, files={"etc/sysctl.d/90-x.conf": "a=1\n"})
    (root / "etc/sysctl.d/90-x.conf").chmod(0o600)
    host = TreeHost(root)
    host.write("etc/sysctl.d/90-x.conf", "a=2\n")
    assert host.read("etc/sysctl.d/90-x.conf") == "a=2\n"
    assert host.mode("etc/sysctl.d/90-x.conf") == 0o600
    host.write("etc/new/file", b"x", mode=0o640)
    assert host.mode("etc/new/file") == 0o640
    assert not [p for p in (root / "etc/sysctl.d").iterdir() if "dolmen-tmp" in p.name]
    host.remove("etc/new/file")
    host.remove("etc/new/file")
    assert not host.exists("etc/new/file")


def test_write_stays_inside_the_tree(tmp_path: Path) -> None:
    root = make_tree(tmp_path / "t", files={"etc/x": "1"})
    os.symlink("/etc", root / "link")
    TreeHost(root).write("link/y", "2")
    assert (root / "etc/y").read_text() == "2"


def test_open_host_refuses_a_folder_that_is_no_host(tmp_path: Path) -> None:
    (tmp_path / "notes.txt").write_text("hello")
    with pytest.raises(InputError, match="not a host tree"):
        open_host(tmp_path)
    make_tree(tmp_path, commands={"ibstat": ""})
    assert open_host(tmp_path).run(["ibstat"]).ok

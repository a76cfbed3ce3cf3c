"""storage.*: the H100 scenario's mounts and df output, edited for faults; the real NVMe
controllers of node_exporter's and procfs's sysfs recordings."""

from __future__ import annotations

from pathlib import Path

import pytest

from dolmen.checks.context import Context
from dolmen.checks.model import Status
from dolmen.checks.runner import run_one
from dolmen.host.tree import TreeHost
from tests.checks.helpers import by_subject, run_check
from tests.conftest import make_tree, recording
from tests.facts.trees import extract_ttar
from tests.hosts import scenarios

DF = "commands/df%20-P%20-B1"
DFI = "commands/df%20-P%20-i"
# An Ubuntu GPU node's fstab: / and /boot/efi by UUID, the RAID with nofail, swap, a NFS
# share, an automounted dataset, and entries that never show in a mount table.
FSTAB = """# /etc/fstab: static file system information.
UUID=2d7a1f6e-0000-4000-8000-000000000001 /    ext4 errors=remount-ro 0 1
UUID=1A2B-3C4D  /boot/efi       vfat    umask=0077      0       1
/dev/md1 /raid/ ext4 defaults,nofail 0 2
/swap.img	none	swap	sw	0	0
10.0.0.5:/export/datasets /datasets nfs4 ro,hard,vers=4.1 0 0
10.0.0.5:/export/home /home nfs4 rw,hard,x-systemd.automount 0 0
/dev/sdz1 /mnt/usb vfat noauto,user 0 0
proc /proc proc defaults 0 0
"""


def _sub(root: Path, rel: str, old: str, new: str) -> None:
    path = root / rel
    text = path.read_text()
    assert old in text, (rel, old)
    path.write_text(text.replace(old, new))


@pytest.fixture
def node(tmp_path: Path) -> Path:
    return scenarios.build("h100-hgx-healthy", tmp_path / "node")


def test_free_space_healthy(node: Path) -> None:
    by = by_subject(run_check(node, "storage.free_space"))
    assert set(by) == {"mount:/", "mount:/boot/efi", "mount:/raid", "mount:/run"}
    assert all(f.status is Status.PASS for f in by.values())
    assert by["mount:/raid"].evidence["used_pct"] == 27.8


def test_free_space_full_and_nearly_full(node: Path) -> None:
    # /raid: 96 % of used + available; /: 91 %.
    _sub(node, DF, "8123456789012 21051234567890", "28800000000000 1200000000000")
    _sub(node, DF, "212345671680   1580034871296", "1710000000000 169000000000")
    by = by_subject(run_check(node, "storage.free_space"))
    assert by["mount:/raid"].status is Status.FAIL and "(limit 95 %)" in by["mount:/raid"].summary
    assert by["mount:/"].status is Status.WARN and by["mount:/"].evidence["used_pct"] == 91.0
    assert by["mount:/raid"].remedy and "du -xh" in by["mount:/raid"].remedy
    by = by_subject(run_check(node, "storage.free_space", warn_pct=80, fail_pct=90))
    assert by["mount:/"].status is Status.FAIL


def test_free_space_read_only_images_are_left_out(node: Path) -> None:
    snap = "/dev/loop3 /snap/core20/2318 squashfs ro,nodev,relatime 0 0\n"
    (node / "proc/mounts").write_text((node / "proc/mounts").read_text() + snap)
    _sub(node, DF, "tmpfs", "/dev/loop3  66060288 66060288 0 100% /snap/core20/2318\ntmpfs")
    assert "mount:/snap/core20/2318" not in by_subject(run_check(node, "storage.free_space"))


def test_free_space_unreadable(node: Path) -> None:
    (node / DF).unlink()
    by = by_subject(run_check(node, "storage.free_space"))
    assert all(f.status is Status.UNKNOWN for f in by.values())
    assert "space unreadable: missing" in by["mount:/"].summary
    (node / "proc/mounts").write_text("\x00\x01")
    (f,) = run_check(node, "storage.free_space")
    assert f.status is Status.UNKNOWN and "mount table unreadable: malformed" in f.summary


def test_inodes(node: Path) -> None:
    by = by_subject(run_check(node, "storage.inodes"))
    assert by["mount:/"].status is Status.PASS
    assert by["mount:/boot/efi"].status is Status.SKIP  # vfat: no inode table
    _sub(node, DFI, "117211136  812345  116398791", "117211136 116000000   1211136")
    f = by_subject(run_check(node, "storage.inodes"))["mount:/"]
    assert f.status is Status.FAIL and f.summary == "99.0 % of inodes used (limit 95 %)"


def test_read_only(node: Path) -> None:
    by = by_subject(run_check(node, "storage.read_only"))
    assert set(by) == {"mount:/", "mount:/raid"} and all(
        f.status is Status.PASS for f in by.values()
    )
    _sub(node, "proc/mounts", "/dev/md1 /raid ext4 rw,relatime", "/dev/md1 /raid ext4 ro,relatime")
    f = by_subject(run_check(node, "storage.read_only"))["mount:/raid"]
    assert f.status is Status.FAIL and "system or data path" in f.summary
    assert f.remedy and "fsck" in f.remedy
    by = by_subject(run_check(node, "storage.read_only", rw_paths=["/"]))
    assert "mount:/raid" not in by


def test_read_only_from_fstab(node: Path) -> None:
    mounts = node / "proc/mounts"
    extra = (
        "10.0.0.5:/export/datasets /datasets nfs4 ro,relatime,vers=4.1,hard 0 0\n"
        "/dev/md1 /raid ext4 ro,relatime 0 0\n"
    )
    mounts.write_text(mounts.read_text() + extra)
    make_tree(node, files={"etc/fstab": FSTAB})
    by = by_subject(run_check(node, "storage.read_only"))
    assert "mount:/datasets" not in by  # fstab wants it read-only
    assert by["mount:/raid"].status is Status.FAIL  # the later line is the one on top
    assert "fstab mounts it read-write" in by["mount:/raid"].summary


def test_fstab(node: Path) -> None:
    (f,) = run_check(node, "storage.fstab")
    assert f.status is Status.SKIP and f.summary == "no etc/fstab on this host"
    make_tree(node, files={"etc/fstab": FSTAB})
    by = by_subject(run_check(node, "storage.fstab"))
    assert set(by) == {"mount:/", "mount:/boot/efi", "mount:/raid", "mount:/datasets"}
    assert by["mount:/raid"].status is Status.PASS  # "/raid/" in fstab, "/raid" mounted
    assert by["mount:/datasets"].status is Status.WARN
    assert by["mount:/datasets"].summary == "declared in fstab, not mounted"
    make_tree(
        node, files={"etc/fstab": FSTAB + "/dev/sdy1 /scratch xfs defaults,nofail 0 2\nbad\n"}
    )
    by = by_subject(run_check(node, "storage.fstab"))
    assert "(nofail: boot went on without it)" in by["mount:/scratch"].summary
    assert by["host"].status is Status.WARN and "line 11 of etc/fstab" in by["host"].summary


def test_fstab_unreadable(node: Path) -> None:
    (node / "etc/fstab").mkdir()
    (f,) = run_check(node, "storage.fstab")
    assert f.status is Status.UNKNOWN and "etc/fstab unreadable" in f.summary


@pytest.mark.parametrize(
    ("archive", "strip"),
    [("sysfs/node_exporter__sys.ttar", ""), ("procfs/procfs__fixtures.ttar", "fixtures/")],
)
def test_nvme_recorded_controller(tmp_path: Path, archive: str, strip: str) -> None:
    root = extract_ttar(recording(archive), tmp_path, strip=strip, only=("sys/class/nvme",))
    (f,) = run_check(root, "storage.nvme")
    assert f.status is Status.PASS and f.subject == "nvme:nvme0"
    assert f.summary == "live (Samsung SSD 970 PRO 512GB)"
    by = by_subject(run_check(root, "storage.nvme", expected_count=8))
    assert (
        by["host"].status is Status.FAIL
        and by["host"].summary == "1 NVMe controller(s), expected 8"
    )


@pytest.mark.parametrize(("state", "status"), [("dead", Status.FAIL), ("resetting", Status.WARN)])
def test_nvme_states(tmp_path: Path, state: str, status: Status) -> None:
    archive = recording("sysfs/node_exporter__sys.ttar")
    root = extract_ttar(archive, tmp_path, only=("sys/class/nvme",))
    (root / "sys/class/nvme/nvme0/state").write_text(f"{state}\n")
    (f,) = run_check(root, "storage.nvme")
    assert f.status is status and state in f.summary
    assert f.remedy and "nvme smart-log" in f.remedy


def test_nvme_none_and_unreadable(tmp_path: Path) -> None:
    (f,) = run_check(make_tree(tmp_path / "a"), "storage.nvme")
    assert f.status is Status.SKIP
    root = make_tree(tmp_path / "b", files={"sys/class/nvme/nvme0/model": "X\n"})
    (f,) = run_check(root, "storage.nvme")
    assert f.status is Status.UNKNOWN and "missing" in f.summary


def test_nvme_not_in_bundle_counts_nothing(tmp_path: Path) -> None:
    """A tree without sys/ never listed the controllers: no count passes or fails on it, and
    the skip says the bundle lacks them, not that the host has none (issue 8)."""
    (f,) = run_check(make_tree(tmp_path / "a"), "storage.nvme")
    assert (
        f.status is Status.SKIP
        and f.summary == "NVMe controllers: not in this bundle: sys/class/nvme"
    )
    (f,) = run_check(make_tree(tmp_path / "b"), "storage.nvme", expected_count=8)
    assert f.status is Status.UNKNOWN and "not in this bundle" in f.summary
    sysfs = make_tree(tmp_path / "c", files={"sys/class/net/lo/mtu": "65536\n"})
    (f,) = run_check(sysfs, "storage.nvme", expected_count=8)
    assert f.status is Status.FAIL  # sysfs was captured: no controller is a host fact


def test_io_errors_pass_on_the_healthy_node(node: Path) -> None:
    (f,) = run_check(node, "storage.io_errors")
    assert f.status is Status.PASS and "no I/O error" in f.summary


IO_LOG = """\
kern  :info  : 2026-10-25T14:00:00,000000+00:00 EXT4-fs (md1): mounted filesystem with ordered data mode
kern  :err   : 2026-10-25T14:01:02,123456+00:00 critical medium error, dev nvme1n1, sector 1953525120 op 0x0:(READ) flags 0x80700 phys_seg 1 prio class 2
kern  :err   : 2026-10-25T14:01:02,223456+00:00 nvme0n1: I/O Cmd(0x2) @ LBA 0, 8 blocks, I/O Error (sct 0x2 / sc 0x81) DNR
kern  :err   : 2026-10-25T14:01:03,000000+00:00 I/O error, dev loop3, sector 0 op 0x0:(READ) flags 0x80700 phys_seg 1 prio class 0
kern  :err   : 2026-10-20T09:00:00,000000+00:00 blk_update_request: I/O error, dev sda, sector 2048 op 0x0:(READ) flags 0x0 phys_seg 1 prio class 0
"""


def test_io_errors_in_the_window_fail_per_disk(tmp_path: Path) -> None:
    """Synthetic lines in the wording of the kernel's blk_print_req_error and nvme_log_error
    (no recording here has block I/O errors); the snapshot time fixes "now"."""
    from dolmen.checks.model import REGISTRY
    from tests.conftest import make_tree

    root = make_tree(
        tmp_path,
        files={"dolmen-snapshot.json": '{"created": "2026-10-25T15:00:00Z"}'},
        commands={"dmesg": IO_LOG},
    )
    found = {f.subject: f for f in run_one(Context(TreeHost(root)), REGISTRY["storage.io_errors"])}
    assert found["disk:nvme1n1"].status.value == "fail"
    assert "critical medium error" in found["disk:nvme1n1"].summary
    assert found["disk:nvme0n1"].status.value == "fail"
    assert found["disk:loop3"].status.value == "warn"
    assert "disk:sda" not in found  # five days old: outside the 24 h window


def test_io_errors_clean_and_unreadable(tmp_path: Path) -> None:
    from dolmen.checks.model import REGISTRY
    from tests.conftest import make_tree

    clean = make_tree(tmp_path / "clean", commands={"dmesg": IO_LOG.splitlines()[0] + "\n"})
    [f] = run_one(Context(TreeHost(clean)), REGISTRY["storage.io_errors"])
    assert f.status.value == "pass"
    refused = make_tree(
        tmp_path / "refused",
        commands={"dmesg": ("", 1, "dmesg: read kernel buffer failed: Operation not permitted\n")},
    )
    [f] = run_one(Context(TreeHost(refused)), REGISTRY["storage.io_errors"])
    assert f.status.value == "unknown"

"""The posture collector on small hand-made sysfs trees: LVM on LUKS, an open LUKS1 mapping,
a hostile tree whose slaves link in a circle, a device-mapper device without its uuid."""

from __future__ import annotations

import os
from pathlib import Path

from dolmen.facts.crypt import collect
from dolmen.host.tree import TreeHost

UUID = "8b1f63c25d0e4a579e342f7c1a9d0b6e"


def dev(root: Path, name: str, number: str, **files: str) -> Path:
    """sys/devices/virtual/block/<name> with its dev number links and files."""
    folder = root / "sys/devices/virtual/block" / name
    folder.mkdir(parents=True)
    for rel, text in files.items():
        (folder / rel.replace("__", "/")).parent.mkdir(parents=True, exist_ok=True)
        (folder / rel.replace("__", "/")).write_text(text + "\n")
    for link in (root / "sys/class/block" / name, root / "sys/dev/block" / number):
        link.parent.mkdir(parents=True, exist_ok=True)
        os.symlink(os.path.relpath(folder, link.parent), link)
    return folder


def slave(upper: Path, lower: Path) -> None:
    for a, b, kind in ((upper, lower, "slaves"), (lower, upper, "holders")):
        (a / kind).mkdir(exist_ok=True)
        os.symlink(os.path.relpath(b, a / kind), a / kind / b.name)


def mountinfo(root: Path, *lines: str) -> None:
    (root / "proc/self").mkdir(parents=True)
    (root / "proc/self/mountinfo").write_text(
        "".join(f"{n} 1 {line}\n" for n, line in enumerate(lines, 20))
    )


def test_lvm_on_luks_and_luks1(tmp_path: Path) -> None:
    lv = dev(tmp_path, "dm-1", "253:1", dm__uuid="LVM-abc", dm__name="vg-root")
    crypt = dev(tmp_path, "dm-0", "253:0", dm__uuid=f"CRYPT-LUKS2-{UUID}-luks", dm__name="luks")
    disk = dev(tmp_path, "vda", "252:0")
    old = dev(tmp_path, "dm-2", "253:2", dm__uuid=f"CRYPT-LUKS1-{UUID}-old", dm__name="old")
    slave(lv, crypt)
    slave(crypt, disk)
    slave(old, disk)
    mountinfo(
        tmp_path,
        "253:1 / / rw - ext4 /dev/mapper/vg-root rw",
        "253:2 / /data rw - ext4 /dev/mapper/old rw",
    )
    facts = collect(TreeHost(tmp_path))
    root, data = facts.volumes
    assert [la.kind for la in root.layers] == ["lvm", "crypt", "disk"] and root.encrypted
    assert root.crypt is not None and root.crypt.luks_uuid == "8b1f63c2-5d0e-4a57-9e34-2f7c1a9d0b6e"
    assert data.encrypted and data.crypt is not None and data.crypt.crypt_type == "LUKS1"
    # the header of vda was looked for, and the tree has neither its bytes nor a luksDump
    assert facts.header("vda") is not None and facts.header("vda").header is None


def test_a_circle_of_slaves_ends(tmp_path: Path) -> None:
    a = dev(tmp_path, "dm-0", "253:0", dm__uuid="LVM-a", dm__name="a")
    b = dev(tmp_path, "dm-1", "253:1", dm__uuid="LVM-b", dm__name="b")
    slave(a, b)
    slave(b, a)
    mountinfo(tmp_path, "253:0 / /data rw - xfs /dev/mapper/a rw")
    (v,) = collect(TreeHost(tmp_path)).volumes
    assert [la.name for la in v.layers] == ["dm-0", "dm-1"] and v.encrypted is False


def test_a_mapping_without_its_uuid_is_unknown(tmp_path: Path) -> None:
    dev(tmp_path, "dm-0", "253:0")
    mountinfo(tmp_path, "253:0 / /data rw - xfs /dev/dm-0 rw")
    (v,) = collect(TreeHost(tmp_path)).volumes
    assert v.encrypted is None and "dm/uuid" in v.reason

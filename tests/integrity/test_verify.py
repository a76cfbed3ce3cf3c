"""Seal a root, mutate it, verify: every mutation named, in both modes, and nothing else."""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path

import pytest

from dolmen.integrity.hostroot import open_root
from dolmen.integrity.seal import seal
from dolmen.integrity.verify import read_manifest, verify
from dolmen.keys.trust import parse_trusted_keys
from tests.integrity.roots import LIB, MODULES, Site, make_site

Mutation = Callable[[Path], None]


def _byte(rel: str) -> Mutation:
    def edit(root: Path) -> None:
        p = root / rel
        data = bytearray(p.read_bytes())
        data[len(data) // 2] ^= 0x01
        st = p.stat()
        p.write_bytes(bytes(data))
        os.utime(p, ns=(st.st_atime_ns, st.st_mtime_ns))  # same size, same mtime: only ctime

    return edit


def _chmod(rel: str, mode: int) -> Mutation:
    return lambda root: os.chmod(root / rel, mode)


def _chown(rel: str) -> Mutation:
    return lambda root: os.chown(root / rel, 1234, 5678, follow_symlinks=False)


def _add(rel: str) -> Mutation:
    return lambda root: (root / rel).write_bytes(b"\x7fELF rootkit")


def _remove(rel: str) -> Mutation:
    return lambda root: (root / rel).unlink()


def _retarget(rel: str, target: str) -> Mutation:
    def edit(root: Path) -> None:
        (root / rel).unlink()
        os.symlink(target, root / rel)

    return edit


def _hardlink(rel: str, new: str) -> Mutation:
    return lambda root: os.link(root / rel, root / new)


NVIDIA = f"{MODULES}/kernel/drivers/video/nvidia.ko"
# mutation id -> (mutation, the (path, kind) changes it must produce, exactly)
TABLE: dict[str, tuple[Mutation, set[tuple[str, str]]]] = {
    "content byte (same size and mtime)": (
        _byte(NVIDIA),
        {(f"/{NVIDIA}", "content")},
    ),
    "content byte in a 3-chunk initrd": (
        _byte("boot/initrd.img-6.8.0-45-generic"),
        {("/boot/initrd.img-6.8.0-45-generic", "content")},
    ),
    "mode": (
        _chmod("etc/modprobe.d/nvidia.conf", 0o666),
        {("/etc/modprobe.d/nvidia.conf", "mode")},
    ),
    "setuid bit": (_chmod("usr/bin/nvidia-ctk", 0o4755), {("/usr/bin/nvidia-ctk", "mode")}),
    "folder mode": (_chmod("etc/modprobe.d", 0o777), {("/etc/modprobe.d", "mode")}),
    "owner": (_chown(f"{LIB}/libcuda.so.550.54.15"), {(f"/{LIB}/libcuda.so.550.54.15", "owner")}),
    "link owner": (_chown(f"{LIB}/libcuda.so.1"), {(f"/{LIB}/libcuda.so.1", "owner")}),
    "added module": (
        _add(f"{MODULES}/kernel/drivers/video/rootkit.ko"),
        {(f"/{MODULES}/kernel/drivers/video/rootkit.ko", "added")},
    ),
    "added by a glob": (_add(f"{LIB}/libnvidia-evil.so"), {(f"/{LIB}/libnvidia-evil.so", "added")}),
    "added modprobe.d": (
        _add("etc/modprobe.d/blacklist.conf"),
        {("/etc/modprobe.d/blacklist.conf", "added")},
    ),
    "removed": (_remove(f"{MODULES}/modules.dep"), {(f"/{MODULES}/modules.dep", "removed")}),
    "symlink retarget": (
        _retarget(f"{LIB}/libcuda.so.1", "/tmp/libcuda.so"),
        {(f"/{LIB}/libcuda.so.1", "target")},
    ),
    "hardlink": (
        _hardlink(f"{LIB}/libnccl.so.2.21.5", f"{LIB}/libnccl.so.2.99"),
        {(f"/{LIB}/libnccl.so.2.21.5", "hardlink"), (f"/{LIB}/libnccl.so.2.99", "added")},
    ),
    "file became a link": (
        _retarget("boot/grub/grub.cfg", "/tmp/evil.cfg"),
        {("/boot/grub/grub.cfg", "type")},
    ),
    "kernel command line": (
        lambda root: (root / "proc/cmdline").write_bytes(b"BOOT_IMAGE=/x init=/bin/sh\n"),
        {("/proc/cmdline", "content")},
    ),
    "unsealed file": (lambda root: (root / "etc/hostname").write_bytes(b"other\n"), set()),
    "touch": (lambda root: os.utime(root / NVIDIA), set()),
}


@pytest.fixture
def site(tmp_path: Path) -> Site:
    s = make_site(tmp_path)
    s.seal()
    return s


def _verify(site: Site, *, full: bool) -> set[tuple[str, str]]:
    trust = parse_trusted_keys(site.trust.read_text())
    result = verify(read_manifest(site.manifest, trust), full=full)
    assert not result.unread
    return {(c.path, c.kind) for c in result.changes}


@pytest.mark.parametrize("mutation", list(TABLE))
def test_each_mutation_is_named_and_nothing_else(site: Site, mutation: str) -> None:
    edit, expected = TABLE[mutation]
    edit(site.root)
    assert _verify(site, full=False) == expected  # incremental: stat first
    assert _verify(site, full=True) == expected


def test_all_mutations_at_once(site: Site) -> None:
    want: set[tuple[str, str]] = set()
    for name, (edit, expected) in TABLE.items():
        if name in ("file became a link", "symlink retarget"):
            continue  # both edit links touched by other rows
        edit(site.root)
        want |= expected
    assert _verify(site, full=False) == want == _verify(site, full=True)


def test_an_untouched_root_is_intact_and_incremental_reads_only_volatile(site: Site) -> None:
    trust = parse_trusted_keys(site.trust.read_text())
    manifest = read_manifest(site.manifest, trust)
    inc = verify(manifest)
    assert inc.intact and inc.hashed == 1  # /proc/cmdline only: procfs is always read
    assert inc.trusted == sum(e.type == "file" for e in manifest.entries.values()) - 1
    full = verify(manifest, full=True)
    assert full.intact and full.hashed == inc.trusted + 1 and full.trusted == 0


def test_the_manifest_records_what_the_sets_name(site: Site) -> None:
    trust = parse_trusted_keys(site.trust.read_text())
    m = read_manifest(site.manifest, trust)
    assert m.kernel == "6.8.0-45-generic" and m.root == str(site.root)
    assert "/etc/hostname" not in m.entries  # not part of any set
    link = m.entries[f"/{LIB}/libcuda.so.1"]
    assert (link.type, link.target, link.sha256) == ("symlink", "libcuda.so.550.54.15", None)
    ko = m.entries[f"/{NVIDIA}"]
    assert ko.type == "file" and ko.size == 5011 and ko.sha256 and ko.nlink == 1
    assert m.entries["/proc/cmdline"].size == len(
        b"BOOT_IMAGE=/vmlinuz-6.8.0-45-generic root=UUID=1 ro quiet\n"
    )
    assert {f"/{MODULES}", f"/{MODULES}/kernel", "/boot/efi/EFI"} <= set(m.entries)
    names = {s.name for s in m.sets}
    assert {"bootloader", "kernel", "cmdline", "modules", "driver", "nccl", "dolmen"} <= names
    dolmen_set = next(s for s in m.sets if s.name == "dolmen")
    assert not dolmen_set.paths and "not under the sealed root" in dolmen_set.note


def test_a_running_kernel_other_than_the_sealed_one_is_a_change(site: Site) -> None:
    (site.root / "proc/sys/kernel/osrelease").write_text("6.9.0-1-generic\n")
    assert ("/proc/sys/kernel/osrelease", "kernel") in _verify(site, full=False)


def test_seal_and_verify_with_one_worker_agree(site: Site) -> None:
    with open_root(site.root) as host:
        one = seal(host, site.signer(), workers=1)
    site.manifest.write_bytes(one.data)
    assert _verify(site, full=True) == set()

"""etc/ld.so.cache read without ldconfig: the real cache of a host with driver 515.105.01
gives exactly what ``ldconfig -p`` printed from it, and cut, junk or hostile files give
None (never a partial list read as the whole cache)."""

from __future__ import annotations

import struct

import pytest

from dolmen.facts.stack.ldcache import is_ld_so_cache, parse_ld_so_cache
from dolmen.facts.stack.versions import parse_ldconfig
from tests.conftest import recording

CACHE = "cuda-env/nvidia-container-toolkit__rootfs-1__ld.so.cache"
LDCONFIG = "cuda-env/nvidia-container-toolkit__rootfs-1__ldconfig-p.txt"  # ldconfig -p -C CACHE


def _real() -> bytes:
    return recording(CACHE).read_bytes()


def test_the_real_cache_reads_as_ldconfig_printed_it() -> None:
    entries = parse_ld_so_cache(_real())
    assert entries is not None and len(entries) == 743
    assert entries == parse_ldconfig(recording(LDCONFIG).read_text())
    names = {e.name for e in entries}
    assert {"libcuda.so.1", "libnvidia-ml.so.1"} <= names
    assert {e.arch for e in entries} == {"libc6,x86-64", "libc6,x32", "libc6", "ELF"}


def test_an_old_format_table_before_the_new_header_is_skipped() -> None:
    """glibc before 2.32 wrote the old table first, the new header after it (aligned to 8)."""
    new = _real()
    old = b"ld.so-1.7.0" + b"\0" + struct.pack("<I", 3) + b"\0" * 12 * 3
    pad = b"\0" * (-len(old) % 8)
    both = old + pad + new
    assert is_ld_so_cache(both)
    assert parse_ld_so_cache(both) == parse_ld_so_cache(new)


def test_a_big_endian_cache_reads_the_same() -> None:
    data = bytearray(_real())
    nlibs, strings = struct.unpack_from("<II", data, 20)
    struct.pack_into(">II", data, 20, nlibs, strings)
    data[28] = 3  # the writer's byte order: big
    for i in range(nlibs):
        at = 48 + i * 24
        flags, key, value, osv = struct.unpack_from("<iIII", data, at)
        struct.pack_into(">iIII", data, at, flags, key, value, osv)
    assert parse_ld_so_cache(bytes(data)) == parse_ld_so_cache(_real())


@pytest.mark.parametrize("cut", [0, 5, 20, 47, 48, 100, 743 * 24, 30000, -1])
def test_a_cut_cache_is_none(cut: int) -> None:
    data = _real()
    assert parse_ld_so_cache(data[:cut]) is None


@pytest.mark.parametrize(
    "data",
    [
        b"",
        b"not a cache at all\n",
        b"\x7fELF\x02\x01\x01" + b"\0" * 100,
        b"glibc-ld.so.cache1.1" + struct.pack("<II", 0xFFFFFFFF, 0) + b"\0" * 24,  # 4 G entries
        b"ld.so-1.7.0\0" + struct.pack("<I", 2) + b"\0" * 24,  # old table, no new header
    ],
)
def test_junk_and_hostile_headers_are_none(data: bytes) -> None:
    assert parse_ld_so_cache(data) is None


def test_offsets_outside_the_file_are_none() -> None:
    data = bytearray(_real())
    struct.pack_into("<I", data, 48 + 4, len(data) + 10)  # the first soname's offset
    assert parse_ld_so_cache(bytes(data)) is None

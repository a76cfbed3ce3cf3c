"""glibc's linker cache file, ``/etc/ld.so.cache``, read without ``ldconfig``.

A bundle (a sosreport, a copied root, a container image) often holds the cache file and
not ``ldconfig -p``'s output; the file says the same thing: every soname the dynamic
linker finds, its architecture and its path. ``libcuda.so.1`` there is evidence that an
NVIDIA driver's userspace is installed (issue 8).

The format is glibc's ``elf/cache.c`` (``cache_file_new``): the magic
``glibc-ld.so.cache`` and version ``1.1``, the number of entries and the size of the
string table, a byte of flags (bit 0 and 1: the writer's byte order), then 24-byte
entries (flags, offset of the soname, offset of the path, unused, hwcap), string offsets
counted from the start of that header. Caches of glibc before 2.32 put an old-format
table (``ld.so-1.7.0``, 12-byte entries) first and the new header after it, aligned to 8.
"""

from __future__ import annotations

import struct

from dolmen.facts.stack.model import CachedLibrary

OLD_MAGIC = b"ld.so-1.7.0"
NEW_MAGIC = b"glibc-ld.so.cache1.1"
_HEADER = 48  # magic and version (20), nlibs, len_strings (8), flags (4), extension (4), 12
_ENTRY = 24
_OLD_ENTRY = 12
MAX_ENTRIES = 1 << 20  # a real cache holds a few thousand

# ldconfig -p's words for the flags of an entry (elf/cache.c print_entry)
_TYPES = {0x00: "libc4", 0x01: "ELF", 0x02: "libc5", 0x03: "libc6"}
_ARCHES = {
    0x0000: "",
    0x0100: ",64bit",
    0x0300: ",x86-64",
    0x0400: ",64bit",
    0x0500: ",64bit",
    0x0600: ",N32",
    0x0700: ",64bit",
    0x0800: ",x32",
    0x0900: ",hard-float",
    0x0A00: ",AArch64",
    0x0B00: ",soft-float",
    0x0C00: ",nan2008",
    0x0D00: ",N32,nan2008",
    0x0E00: ",64bit,nan2008",
    0x0F00: ",IA-32",
    0x1000: ",double-float",
    0x1100: ",double-float",
}


def is_ld_so_cache(data: bytes) -> bool:
    """Whether ``data`` starts as a linker cache (either format)."""
    return data.startswith((NEW_MAGIC, OLD_MAGIC))


def parse_ld_so_cache(data: bytes) -> list[CachedLibrary] | None:
    """The entries of a linker cache in file order (``ldconfig -p``'s order), or None when
    ``data`` is not one: another file, a cache cut short, offsets outside the file."""
    start = _new_header(data)
    if start is None or len(data) < start + _HEADER:
        return None
    order = "<" if data[start + 28] & 0b11 in (0, 2) else ">"  # 2 little, 3 big, 0 unset
    nlibs, len_strings = struct.unpack_from(order + "II", data, start + 20)
    table = start + _HEADER
    if nlibs > MAX_ENTRIES or len(data) < table + nlibs * _ENTRY + len_strings:
        return None  # cut short: the entries and their strings are not all there
    out: list[CachedLibrary] = []
    for i in range(nlibs):
        flags, key, value = struct.unpack_from(order + "iII", data, table + i * _ENTRY)
        name, path = _string(data, start + key), _string(data, start + value)
        if name is None or path is None:
            return None
        out.append(CachedLibrary(name, _arch(flags), path))
    return out


def _new_header(data: bytes) -> int | None:
    """Where the new-format header starts: 0, or after the old-format table."""
    if data.startswith(NEW_MAGIC):
        return 0
    if not data.startswith(OLD_MAGIC) or len(data) < 16:
        return None
    (nlibs,) = struct.unpack_from("<I", data, 12)  # old caches were written little-endian
    if nlibs > MAX_ENTRIES:
        return None
    end = 16 + nlibs * _OLD_ENTRY
    start = (end + 7) & ~7  # ALIGN_CACHE
    return start if data[start : start + len(NEW_MAGIC)] == NEW_MAGIC else None


def _string(data: bytes, offset: int) -> str | None:
    """The NUL-terminated string at ``offset``, or None when it runs off the file."""
    end = data.find(b"\0", offset)
    if offset >= len(data) or end < 0:
        return None
    return data[offset:end].decode("utf-8", errors="replace")


def _arch(flags: int) -> str:
    kind = _TYPES.get(flags & 0xFF, "unknown")
    arch = _ARCHES.get(flags & 0xFF00, f",flags {flags & 0xFF00:#x}")
    return kind + arch

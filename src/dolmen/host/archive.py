"""A snapshot archive (``.tar.gz``) opened as a host tree in a private temporary folder.

A sosreport archive (``.tar.xz``, ``.tar.gz``) is extracted the same way, then mapped
onto the tree format by ``dolmen.host.paste.sos`` (a partial tree: see there).

Extraction uses tarfile's ``data`` filter: absolute names, ``..`` components,
links that leave the folder, devices and other special files are refused with
one clear error, so a hostile bundle writes nothing outside its folder.
"""

from __future__ import annotations

import shutil
import tarfile
import tempfile
import zlib
from pathlib import Path

from dolmen.errors import InputError
from dolmen.host.base import MAX_READ
from dolmen.host.tree import SNAPSHOT_META, TreeHost

# A support bundle is megabytes: `dolmen snapshot` keeps files up to 16 MiB, and a host
# tree's reads stop at host.base.MAX_READ (64 MiB), so a larger member could never be
# read anyway. Bounds are checked on the headers, before anything is extracted: a 38 KB
# .tar.gz can hold a 1 GB sparse file, and a member list alone can exhaust memory.
MAX_MEMBER_BYTES = MAX_READ
MAX_BYTES = 1 << 30
MAX_MEMBERS = 100_000
SOS_COMMANDS = "sos_commands"  # a sosreport's folder of command outputs


class ArchiveHost(TreeHost):
    """A ``dolmen snapshot`` archive; ``close()`` removes the extracted copy."""

    kind = "archive"

    def __init__(self, archive: Path) -> None:
        self.archive = archive
        self._tmp = Path(tempfile.mkdtemp(prefix="dolmen-snapshot-"))
        self.source: dict[str, object] | None = None
        try:
            root = _extract(archive, self._tmp)
            if (root / SOS_COMMANDS).is_dir() and not (root / SNAPSHOT_META).exists():
                from dolmen.host.paste.sos import map_sosreport

                self.source = map_sosreport(root, archive)
            super().__init__(root)
        except BaseException:
            shutil.rmtree(self._tmp, ignore_errors=True)
            raise

    @property
    def detected(self) -> str | None:
        """For a sosreport, the line validate prints (what was read; a partial bundle)."""
        if self.source is None:
            return None
        return f"read {self.source['detected']} from {self.archive}; a partial bundle"

    def describe(self) -> dict[str, object]:
        extra = {"source": self.source} if self.source is not None else {}
        return {**super().describe(), "archive": str(self.archive), **extra}

    def close(self) -> None:
        shutil.rmtree(self._tmp, ignore_errors=True)


def _extract(archive: Path, dest: Path) -> Path:
    hint = "make a fresh one with `dolmen snapshot -o FILE` on the host"
    try:
        with tarfile.open(archive, "r:*") as tar:
            members = _bounded_members(tar, archive, hint)
            for member in members:
                try:
                    tar.extract(member, dest, filter="data")
                except tarfile.FilterError as e:
                    raise InputError(
                        f"unsafe member {member.name!r} in snapshot ({e}); nothing was used",
                        path=str(archive),
                        hint="only open bundles made by `dolmen snapshot`",
                    ) from e
    except FileNotFoundError as e:
        raise InputError("no such snapshot file", path=str(archive), hint=hint) from e
    except (tarfile.TarError, EOFError, zlib.error, OSError) as e:
        # tarfile's ReadError lists every compression it tried, one per line: keep one line.
        why = "not a gzip or tar archive" if isinstance(e, tarfile.ReadError) else str(e)
        why = why.splitlines()[0] if why else e.__class__.__name__
        raise InputError(
            f"snapshot is not a readable .tar.gz ({why})", path=str(archive), hint=hint
        ) from e
    entries = [p for p in dest.iterdir()]
    if len(entries) == 1 and entries[0].is_dir() and not entries[0].is_symlink():
        top = entries[0]
        if (top / SNAPSHOT_META).exists() or (top / SOS_COMMANDS).is_dir():
            return top  # a snapshot's or a sosreport's one folder
    return dest


def _bounded_members(tar: tarfile.TarFile, archive: Path, hint: str) -> list[tarfile.TarInfo]:
    """Every member header, read before any is extracted; InputError past a bound.

    ``size`` of a sparse member is its apparent size (what extraction would write),
    so a sparse gigabyte is refused here whatever its compressed size.
    """
    members: list[tarfile.TarInfo] = []
    total = 0
    while (member := tar.next()) is not None:
        members.append(member)
        size = max(member.size, 0)
        total += size
        why = None
        if len(members) > MAX_MEMBERS:
            why = f"more than {MAX_MEMBERS} members"
        elif size > MAX_MEMBER_BYTES:
            why = f"member {member.name!r} is {size} bytes, over {MAX_MEMBER_BYTES >> 20} MiB"
        elif total > MAX_BYTES:
            why = f"more than {MAX_BYTES >> 30} GiB in all"
        if why is not None:
            raise InputError(
                f"snapshot is larger than any support bundle should be ({why}); refused",
                path=str(archive),
                hint=hint,
            )
    return members

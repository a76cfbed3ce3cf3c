"""``dolmen integrity verify``: the seal first, then every file against its entry.

Incremental by default: a regular file whose (dev, inode, size, mtime, ctime) matches
its entry keeps the recorded digest (scan.py says why that is safe); ``full`` reads
and hashes every file again. A file the verify cannot read is listed as unverified:
it is neither a change nor a pass.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from dolmen.errors import EnvironmentProblem, InputError
from dolmen.fsutil import NotRegularFile, TooLarge, read_regular
from dolmen.host import Host
from dolmen.integrity.compare import compare
from dolmen.integrity.hostroot import OSRELEASE, open_root, running_kernel
from dolmen.integrity.manifest import MAX_BYTES, Manifest, parse
from dolmen.integrity.model import Change, Unread
from dolmen.integrity.scan import scan
from dolmen.keys.trust import TrustStore


@dataclass(frozen=True)
class Verified:
    """What a verify found: the manifest, the changes, what it could not read."""

    manifest: Manifest
    root: str
    full: bool
    changes: tuple[Change, ...]
    unread: tuple[Unread, ...]
    files: int
    hashed: int
    trusted: int

    @property
    def intact(self) -> bool:
        """No change and nothing unverified."""
        return not self.changes and not self.unread


def read_manifest(path: Path, trust: TrustStore) -> Manifest:
    """The manifest at ``path`` with its seal checked (manifest.parse's refusals)."""
    try:
        data = read_regular(path, MAX_BYTES)
    except FileNotFoundError:
        raise InputError("no such manifest", path=str(path)) from None
    except IsADirectoryError:
        raise InputError("a folder, not a manifest", path=str(path)) from None
    except (NotRegularFile, TooLarge) as e:
        raise InputError(f"{e.strerror}, not a manifest", path=str(path)) from None
    except PermissionError:
        raise EnvironmentProblem(
            f"cannot read the manifest {path} (permission denied)",
            hint="run as a user who may read it (root, for a manifest under /etc/dolmen)",
        ) from None
    except OSError as e:
        raise InputError(f"cannot read the manifest: {e.strerror or e}", path=str(path)) from None
    return parse(data, trust, str(path))


def verify(
    manifest: Manifest,
    *,
    root: str | None = None,
    host: Host | None = None,
    full: bool = False,
    workers: int | None = None,
) -> Verified:
    """Compare the files of ``host``, or under ``root`` (default: the root it was sealed
    from)."""
    if host is None:
        with open_root(root or manifest.root) as opened:
            return verify(manifest, host=opened, full=full, workers=workers)
    found = scan(host, manifest.sets, known=None if full else manifest.entries, workers=workers)
    # A file that could not be read, or lies in a folder that could not be listed, is
    # unverified, not removed.
    hidden = tuple(u.path for u in found.unread)
    below = tuple(h.rstrip("/") + "/" for h in hidden)
    old = {
        p: e
        for p, e in manifest.entries.items()
        if not (p in hidden and p not in found.entries) and not (below and p.startswith(below))
    }
    changes = compare(old, found.entries)
    kernel = running_kernel(host)
    if kernel and kernel != manifest.kernel:
        changes.insert(0, Change("/" + OSRELEASE, "kernel", manifest.kernel, kernel))
    return Verified(
        manifest,
        str(host.root),
        full,
        tuple(changes),
        tuple(found.unread),
        len(found.entries),
        found.hashed,
        found.trusted,
    )

"""``dolmen integrity seal``: describe the boot chain and the AI stack, sign, write.

The manifest is refused, not written with holes, when any file cannot be read: a
file left out at seal time would never be verified.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path

import dolmen
from dolmen.compat import UTC
from dolmen.errors import EnvironmentProblem, UsageError
from dolmen.host import Host
from dolmen.integrity.hostroot import OSRELEASE, running_kernel
from dolmen.integrity.manifest import render
from dolmen.integrity.scan import scan
from dolmen.integrity.sets import FileSet, default_sets, expand
from dolmen.keys import Signer


@dataclass(frozen=True)
class Sealed:
    """A manifest's bytes and what went into it."""

    data: bytes
    files: int
    hashed_bytes: int
    sets: tuple[FileSet, ...]


def package_folder(host: Host) -> str | None:
    """The running dolmen package as a host path without the leading slash, None when it
    lies outside the host's root."""
    pkg = Path(os.path.realpath(Path(dolmen.__file__).parent))
    root = Path(os.path.realpath(host.root))
    try:
        rel = pkg.relative_to(root)
    except ValueError:
        return None
    return str(rel) if str(rel) != "." else None


def seal(
    host: Host,
    signer: Signer,
    *,
    kernel: str | None = None,
    sets: tuple[FileSet, ...] | None = None,
    workers: int | None = None,
) -> Sealed:
    """Scan every set on ``host`` and return the signed manifest."""
    release = kernel or running_kernel(host)
    if not release:
        raise UsageError(
            f"cannot tell the kernel release: {host.root}/{OSRELEASE} is unreadable",
            hint="pass --kernel RELEASE (the `uname -r` of the system under that root)",
        )
    chosen = expand(sets or default_sets(), kernel=release, dolmen=package_folder(host))
    found = scan(host, chosen, workers=workers)
    if found.unread:
        first = found.unread[0]
        raise EnvironmentProblem(
            f"cannot read {len(found.unread)} file(s) to seal (first: {first.path}: "
            f"{first.reason}); no manifest written",
            hint="run as root (the EFI partition and some modules are root-only), or fix "
            "the file named",
        )
    data = render(
        signer,
        created=datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ"),
        host=host.hostname,
        root=str(host.root),
        kernel=release,
        sets=chosen,
        entries=found.entries,
    )
    return Sealed(data, len(found.entries), found.hashed_bytes, chosen)

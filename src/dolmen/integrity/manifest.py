"""The signed manifest: its text form, its signature, and the refusals of a bad one.

    {"type": "dolmen-integrity-manifest/1", "algorithm": "ed25519", "key_id": "...",
     "epoch": 1, "signature": "<base64>"}                          <- line 1: the seal
    {"created": "...", "host": "...", "root": "/", "kernel": "...", "sets": [...],
     "entries": 21834, "columns": ["path", "type", "mode", ...]}   <- line 2: the header
    ["/boot/vmlinuz-6.8.0-45-generic", "file", 420, 0, 0, ...]     <- one line a file

A file's line holds the fields of ``model.Entry`` in the order the header's ``columns``
names (path, type, mode, uid, gid, size, sha256, target, dev, ino, nlink, mtime_ns,
ctime_ns; the mode as a number, 420 = 0644; ``null`` where a type has no such value):
lists, not objects, because a manifest of 20,000 files is parsed by every verify and
keys would double its size.

The signature covers the type, the key id, the epoch and every byte after the first
line, exactly as stored: nothing is re-serialised before it is checked, so no two
spellings of one manifest can exist, and a truncated, reordered or edited manifest
fails as a whole. The header counts the entries, so even a signer's bug that cut the
file short is caught. ``parse`` is pure; reading the file is ``fsutil.read_regular``.
"""

from __future__ import annotations

import base64
import binascii
import json
from collections.abc import Iterable, Mapping
from dataclasses import dataclass

from dolmen.errors import DolmenError, ExitCode, InputError
from dolmen.integrity.model import COLUMNS, Entry, entries_from_rows, paused_gc
from dolmen.integrity.sets import FileSet
from dolmen.keys import ALGORITHMS, Signer, verify_signature
from dolmen.keys.trust import TrustStore

TYPE = "dolmen-integrity-manifest/1"
MAX_BYTES = 1 << 30  # 21,000 files are 6 MB; a million, 300 MB


class ManifestRefused(DolmenError):
    """A manifest whose seal does not hold: unsigned, signed by a key the trust store does
    not hold (or for another epoch), or with a signature that does not verify (edited,
    truncated). Exit 1, as for a tampered audit log: nothing it says can be believed."""

    exit_code = ExitCode.UNHEALTHY


@dataclass(frozen=True)
class Manifest:
    """A manifest whose signature verified: who sealed it, what, and every entry."""

    key_id: str
    epoch: int
    created: str
    host: str
    root: str
    kernel: str
    sets: tuple[FileSet, ...]
    entries: Mapping[str, Entry]


def message(key_id: str, epoch: int, body: bytes) -> bytes:
    """The bytes the signature covers."""
    return f"{TYPE}\n{key_id}\n{epoch}\n".encode() + body


def render(
    signer: Signer,
    *,
    created: str,
    host: str,
    root: str,
    kernel: str,
    sets: Iterable[FileSet],
    entries: Mapping[str, Entry],
) -> bytes:
    """The signed manifest's bytes."""
    header = {
        "created": created,
        "host": host,
        "root": root,
        "kernel": kernel,
        "sets": [s.to_json() for s in sets],
        "entries": len(entries),
        "columns": list(COLUMNS),
    }
    dumps = json.JSONEncoder(ensure_ascii=True, separators=(",", ":")).encode
    lines = [dumps(header), *(dumps(list(entries[p])) for p in sorted(entries))]
    body = ("\n".join(lines) + "\n").encode("ascii")
    key_id, epoch = signer.public_key.key_id, signer.epoch
    seal = {
        "type": TYPE,
        "algorithm": signer.public_key.algorithm,
        "key_id": key_id,
        "epoch": epoch,
        "signature": base64.b64encode(signer.sign(message(key_id, epoch, body))).decode(),
    }
    return (json.dumps(seal, separators=(",", ":")) + "\n").encode("ascii") + body


def parse(data: bytes, trust: TrustStore, path: str = "<manifest>") -> Manifest:
    """A manifest whose seal verifies against ``trust``. InputError (exit 2) for what is
    not a dolmen manifest at all; ManifestRefused (exit 1) for a seal that does not hold."""
    first, nl, body = data.partition(b"\n")
    try:
        seal = json.loads(first)
    except (ValueError, UnicodeDecodeError):
        seal = None
    if not nl or not isinstance(seal, dict) or seal.get("type") != TYPE:
        raise InputError(
            "not a dolmen integrity manifest (its first line is not the seal)",
            path=path,
            hint="name a file written by `dolmen integrity seal -o FILE`",
        )
    key_id, epoch, signature = seal.get("key_id"), seal.get("epoch"), seal.get("signature")
    if not signature:
        raise ManifestRefused(f"{path}: the manifest is not signed", hint=_RESEAL)
    if (
        not isinstance(key_id, str)
        or type(epoch) is not int
        or seal.get("algorithm") not in ALGORITHMS
        or not isinstance(signature, str)
    ):
        raise ManifestRefused(f"{path}: the seal's key id, epoch or algorithm is malformed")
    trusted = trust.get(key_id)
    if trusted is None:
        raise ManifestRefused(
            f"{path}: signed by {key_id}, which the trust store does not hold",
            hint="pin the sealing key's trust line (dolmen audit key prints it) in the "
            "trusted keys, or pass --trusted-keys FILE",
        )
    try:
        raw = base64.b64decode(signature, validate=True)
    except (binascii.Error, ValueError):
        raise ManifestRefused(f"{path}: the signature is not base64", hint=_RESEAL) from None
    if not verify_signature(trusted.key, message(key_id, epoch, body), raw):
        raise ManifestRefused(
            f"{path}: the signature by {key_id} does not verify: the manifest was changed "
            "or cut short after it was sealed",
            hint=_RESEAL,
        )
    if epoch != trusted.epoch:
        raise ManifestRefused(
            f"{path}: sealed in epoch {epoch}, but {key_id} is trusted for epoch "
            f"{trusted.epoch} only",
            hint=_RESEAL,
        )
    with paused_gc():
        return _body(body, key_id, epoch, path)


_RESEAL = "seal the host again from a known-good state: dolmen integrity seal -o FILE"


def _body(body: bytes, key_id: str, epoch: int, path: str) -> Manifest:
    # One C call for the whole body: a line at a time through json.loads costs a third of
    # an incremental verify.
    lines = body.decode("ascii", errors="replace").rstrip("\n").split("\n")
    try:
        header, *rows = json.loads("[" + ",".join(lines) + "]")
        count = header["entries"]
        if header.get("columns") != list(COLUMNS):
            raise ValueError(f"the columns are {header.get('columns')}, not {list(COLUMNS)}")
        entries = entries_from_rows(rows)
        sets = tuple(FileSet.from_json(s) for s in header["sets"])
        fields = [str(header[k]) for k in ("created", "host", "root", "kernel")]
    except (ValueError, KeyError, TypeError) as e:
        raise InputError(f"a signed manifest with a malformed body: {e}", path=path) from None
    if count != len(rows):
        raise InputError(
            f"the header counts {count} entries, the body holds {len(rows)}", path=path
        )
    created, host, root, kernel = fields
    return Manifest(key_id, epoch, created, host, root, kernel, sets, entries)

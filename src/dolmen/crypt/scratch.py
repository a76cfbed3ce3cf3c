"""A job's encrypted scratch: its checkpoint folder under fscrypt v2, shredded when it ends.

``open_scratch`` (the supervisor, at start) takes a fresh data key from the key provider
(context ``job:<id>``), derives the 64-byte fscrypt master key from it (HKDF-SHA512:
AES-256-XTS needs 64 bytes, providers hand out 32), adds it to the filesystem's keyring and
sets the folder's policy. The wrapped key is kept in the state folder (0600) so a supervisor
that restarts the job reads its checkpoints back: a key release, audited. ``close_scratch``
(at the end, whatever the outcome) removes the key from the keyring and deletes the wrapped
key: with neither, the checkpoints are ciphertext nobody can turn back (crypto-shredding).
A file still open when the job ends keeps its key until it is closed ("busy", audited).
"""

from __future__ import annotations

import contextlib
import json
import os
from dataclasses import dataclass
from pathlib import Path

from cryptography.hazmat.primitives import hashes
from cryptography.hazmat.primitives.kdf.hkdf import HKDF

from dolmen.audit import record_event
from dolmen.errors import EnvironmentProblem, UsageError
from dolmen.fsutil import atomic_write, read_regular
from dolmen.host import fscrypt
from dolmen.keys import KeyProblem, KeyProvider, WrappedKey
from dolmen.paths import state_dir

ENCRYPTED = "encrypted"
_HINT = "put checkpoint_dir on ext4 made with `mkfs.ext4 -O encrypt` (or `tune2fs -O encrypt`)"


@dataclass(frozen=True)
class Scratch:
    """An open encrypted scratch folder: whose, where, which key."""

    job: str
    folder: Path
    identifier: bytes
    record: Path  # the wrapped key's file in the state folder


def record_path(job: str, root: Path | None = None) -> Path:
    """Where the wrapped key of job ``job``'s scratch is kept while the job runs."""
    return (root or state_dir()) / "crypt" / "scratch" / f"job-{job}.json"


def master_key(data_key: bytes, job: str) -> bytes:
    """The 64-byte fscrypt master key of a job, from the provider's data key."""
    info = f"dolmen fscrypt scratch job:{job}".encode()
    return HKDF(hashes.SHA512(), fscrypt.KEY_SIZE, salt=None, info=info).derive(data_key)


def open_scratch(folder: str | Path, job: str, provider: KeyProvider) -> Scratch:
    """Encrypt ``folder`` for job ``job`` (new), or add its key back (a resumed job)."""
    path, record = Path(folder), record_path(job)
    context = f"job:{job}"
    if record.exists():
        wrapped = WrappedKey.from_json(json.loads(read_regular(record, 1 << 16)))
        raw = provider.unwrap(wrapped, purpose=f"scratch {context}")
        identifier = _add(path, master_key(raw, job))
        if _policy(path) != identifier:
            raise EnvironmentProblem(f"{path}: not encrypted with job {job}'s key", hint=_HINT)
        _audit("crypt.scratch_open", job, path, identifier, resumed=True)
        return Scratch(job, path, identifier, record)
    try:
        path.mkdir(mode=0o700)  # its parent must exist: no folders created silently
    except FileExistsError:
        if not path.is_dir() or any(path.iterdir()):
            raise UsageError(
                f"{path}: an encrypted scratch starts empty, and this is not an empty folder",
                hint="name a new folder as checkpoint_dir",
            ) from None
    except OSError as e:
        raise EnvironmentProblem(f"{path}: cannot create it ({e.strerror})") from e
    raw, wrapped = provider.new_data_key(context=context)
    key = master_key(raw, job)
    target = f"job:{job}"
    record_event("crypt.scratch_open", target, outcome="unknown", details={"folder": str(path)})
    added: list[bytes] = []
    try:
        identifier = _add(path, key)
        added.append(identifier)
        try:
            fscrypt.set_policy(path, identifier)
        except OSError as e:
            raise EnvironmentProblem(f"{path}: cannot encrypt it ({e.strerror})", hint=_HINT) from e
    except EnvironmentProblem as e:  # leave nothing: no key in the keyring, no folder
        for ident in added:
            fscrypt.remove_key(path.parent, ident)
        path.rmdir()
        details = {"folder": str(path), "error": str(e)}
        record_event("crypt.scratch_open", target, outcome="failure", details=details)
        raise
    record.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
    atomic_write(record, json.dumps(wrapped.to_json()).encode(), mode=0o600)
    _audit("crypt.scratch_open", job, path, identifier, provider=wrapped.provider)
    return Scratch(job, path, identifier, record)


def close_scratch(scratch: Scratch) -> fscrypt.Removal:
    """Remove the key and the wrapped key: the scratch's files are unreadable from now on."""
    # Through the parent: an fd on the encrypted folder itself would keep it in use ("busy").
    removal = fscrypt.remove_key(scratch.folder.parent, scratch.identifier)
    with contextlib.suppress(FileNotFoundError):
        os.unlink(scratch.record)
    _audit(
        "crypt.scratch_shred",
        scratch.job,
        scratch.folder,
        scratch.identifier,
        outcome="unknown" if removal.busy else "success",
        files_busy=removal.busy,
    )
    return removal


def _add(path: Path, key: bytes) -> bytes:
    try:
        return fscrypt.add_key(path, key)
    except OSError as e:
        raise EnvironmentProblem(
            f"{path}: cannot add an fscrypt key ({e.strerror})", hint=_HINT
        ) from e


def _policy(path: Path) -> bytes | None:
    try:
        return fscrypt.policy_identifier(path)
    except OSError as e:
        raise KeyProblem(f"{path}: cannot read its fscrypt policy ({e.strerror})") from e


def _audit(
    action: str, job: str, folder: Path, identifier: bytes, outcome: str = "success", **more: object
) -> None:
    details = {"folder": str(folder), "key_identifier": identifier.hex(), **more}
    record_event(action, f"job:{job}", outcome=outcome, details=details)


def open_job_scratch(mode: str | None, folder: str | None, job: str) -> Scratch | None:
    """The jobs layer's hook at a job's start: None unless ``scratch = "encrypted"``; the
    provider is the site's (``[keys]`` of dolmen.toml), its key releases audited."""
    if mode is None:
        return None
    if mode != ENCRYPTED or not folder:
        raise UsageError(f'scratch = "{ENCRYPTED}" needs a checkpoint_dir', hint="set both")
    from dolmen.config import load_config
    from dolmen.crypt.keys import provider_for

    return open_scratch(folder, job, provider_for(load_config(), None))


def close_job_scratch(scratch: Scratch | None) -> None:
    """The jobs layer's hook at a job's end, whatever the outcome."""
    if scratch is not None:
        close_scratch(scratch)

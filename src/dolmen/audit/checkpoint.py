"""Signed checkpoints: a key provider's signature over (sequence, head hash) of the log.

A checkpoint is itself an event of the chain (action ``audit.checkpoint``), so it is
exported to SIEMs with the rest (they act as witnesses) and deleting it breaks the
chain. Its ``dolmen.checkpoint`` member holds what was signed and the signature.
The signed message is a C2SP signed-note style text body:

    dolmen-audit-checkpoint/v1
    <origin: host.name of the checkpoint event>
    <sequence of the last event covered>
    <hash of that event, 64 hex>
    <key id>
    <epoch>

Key id and epoch are signed too, so a signature cannot be relabelled to another epoch.
The signer is the site's key provider (``[keys] provider``): the file key of ``[audit]
key`` by default, or the signing key of Vault/OpenBao transit or of a PKCS#11 token.
"""

from __future__ import annotations

import base64
import binascii
import sys
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from dolmen.audit.event import CHECKPOINT_ACTION, Actor, AuditEvent
from dolmen.audit.settings import AuditSettings
from dolmen.keys import ALGORITHMS, KeyProblem, PublicKey, Signer, verify_signature
from dolmen.keys.file import FileKeyProvider
from dolmen.keys.providers import open_provider
from dolmen.keys.trust import TrustStore, add_trusted_key, load_trusted_keys

MESSAGE_HEADER = "dolmen-audit-checkpoint/v1"
CHECKPOINT_TARGET = "audit-log"


def checkpoint_message(origin: str, sequence: int, head: str, key_id: str, epoch: int) -> bytes:
    """The exact bytes a checkpoint signs."""
    return f"{MESSAGE_HEADER}\n{origin}\n{sequence}\n{head}\n{key_id}\n{epoch}\n".encode()


def checkpoint_event(
    signer: Signer,
    sequence: int,
    head: str,
    *,
    host: str,
    actor: Actor,
    timestamp: str,
    pid: int | None,
) -> AuditEvent:
    """The (unsealed) checkpoint event over the event ``sequence`` whose hash is ``head``."""
    key = signer.public_key
    message = checkpoint_message(host, sequence, head, key.key_id, signer.epoch)
    signature = base64.b64encode(signer.sign(message)).decode("ascii")
    body = {
        "sequence": sequence,
        "head": head,
        "key_id": key.key_id,
        "algorithm": key.algorithm,
        "epoch": signer.epoch,
        "signature": signature,
    }
    return AuditEvent(
        action=CHECKPOINT_ACTION,
        target=CHECKPOINT_TARGET,
        outcome="success",
        actor=actor,
        host=host,
        timestamp=timestamp,
        pid=pid,
        checkpoint=body,
    )


@dataclass(frozen=True)
class CheckpointProblem:
    """Why a checkpoint does not vouch for the log: ``kind`` is one of
    missing-signature, bad-checkpoint, untrusted-key, bad-signature, key-epoch."""

    kind: str
    message: str


def check_checkpoint(
    event: AuditEvent,
    prev_sequence: int,
    prev_hash: str,
    trust: TrustStore,
    last_epoch: int,
) -> CheckpointProblem | None:
    """Check a checkpoint event against the chain before it, the trust store and the
    epochs seen earlier in the log; None when it vouches for the log up to itself."""
    body: Mapping[str, Any] = event.checkpoint or {}
    signature = body.get("signature")
    if not isinstance(signature, str) or not signature:
        return CheckpointProblem("missing-signature", "the checkpoint carries no signature")
    seq, head, key_id = body.get("sequence"), body.get("head"), body.get("key_id")
    epoch, algorithm = body.get("epoch"), body.get("algorithm")
    if seq != prev_sequence or head != prev_hash:
        return CheckpointProblem(
            "bad-checkpoint",
            f"the checkpoint covers event {seq} with head {str(head)[:12]}..., but the event "
            f"before it is {prev_sequence} with hash {prev_hash[:12]}...",
        )
    if not isinstance(key_id, str) or not isinstance(epoch, int) or algorithm not in ALGORITHMS:
        return CheckpointProblem("bad-checkpoint", "the checkpoint's key id or epoch is malformed")
    trusted = trust.get(key_id)
    if trusted is None:
        return CheckpointProblem("untrusted-key", f"signed by {key_id}, which is not trusted")
    try:
        raw_sig = base64.b64decode(signature, validate=True)
    except (binascii.Error, ValueError):
        return CheckpointProblem("bad-signature", "the signature is not base64")
    message = checkpoint_message(event.host, seq, head, key_id, epoch)
    if not verify_signature(trusted.key, message, raw_sig):
        return CheckpointProblem("bad-signature", f"the signature by {key_id} does not verify")
    if epoch != trusted.epoch:
        return CheckpointProblem(
            "key-epoch",
            f"signed in epoch {epoch}, but {key_id} is trusted for epoch {trusted.epoch}",
        )
    if epoch < last_epoch:
        return CheckpointProblem(
            "key-epoch",
            f"signed in epoch {epoch} after a checkpoint of epoch {last_epoch}: "
            "an old key signed after its successor took over",
        )
    return None


def open_signer(settings: AuditSettings, *, create: bool = True) -> Signer:
    """The log's signing key; on first use, create it and, when no trust file exists yet,
    trust it there (trust on first use: pin that file elsewhere, see docs/audit.md).
    With ``[keys] provider`` vault or pkcs11, the provider's signing key (made there on
    first use)."""
    if settings.keys.provider != "file":
        signer = open_provider(settings.keys).signer()
        if create:
            trust_first_key(settings, signer.public_key, signer.epoch)
        return signer
    if settings.key.exists() or not create:
        return FileKeyProvider(settings.key)
    trusted = load_trusted_keys(settings.trusted_keys)
    if trusted:
        # A new key here would sign checkpoints the trust file does not know: the next
        # verify would say TAMPERED about a log nobody touched.
        raise KeyProblem(
            f"the audit signing key {settings.key} is missing, but {settings.trusted_keys} "
            f"trusts {len(trusted)} key(s) for this log; not creating a new one",
            hint=(
                f"restore {settings.key} from a backup; to start a new key on purpose, move "
                f"{settings.trusted_keys} aside first (and pin the new trust line it gets)"
            ),
        )
    provider = FileKeyProvider.generate(settings.key)
    trust_first_key(settings, provider.public_key, provider.epoch)
    return provider


def trust_first_key(settings: AuditSettings, key: PublicKey, epoch: int) -> None:
    """Write the trust file with ``key`` when it does not exist yet (a warning if it cannot)."""
    try:
        if load_trusted_keys(settings.trusted_keys) is None:
            add_trusted_key(settings.trusted_keys, key, epoch)
    except OSError as e:
        print(
            f"dolmen: warning: cannot write the trusted keys {settings.trusted_keys}: {e}",
            file=sys.stderr,
        )

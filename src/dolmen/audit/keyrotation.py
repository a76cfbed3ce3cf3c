"""Rotating the audit key: the old key signs a last checkpoint, then is destroyed.

1. a checkpoint signed by the current key (epoch N) covers everything so far;
2. a new key in epoch N+1 replaces it; the old private key is overwritten, so a
   thief who copies it later cannot sign anything the verifier would place after
   step 1 (it checks that epochs never go back along the log);
3. the new public key is appended to the local trust file (pin it off-host too);
4. ``audit.key_rotate`` records the change, and the new key signs a checkpoint.

With ``[keys] provider`` vault or pkcs11, step 2 is the provider's ``rotate_signer``:
a new transit key version with the older ones trimmed, or a new key pair in the
token with the older private objects deleted.
"""

from __future__ import annotations

from dolmen.audit.checkpoint import open_signer
from dolmen.audit.record import checkpoint, record_event
from dolmen.audit.settings import AuditSettings
from dolmen.keys import Signer
from dolmen.keys.file import FileKeyProvider
from dolmen.keys.providers import open_provider
from dolmen.keys.trust import add_trusted_key, load_trusted_keys


def rotate_key(settings: AuditSettings) -> Signer:
    """Rotate the audit key as described above; returns the new key."""
    old = open_signer(settings)
    checkpoint(settings)
    if isinstance(old, FileKeyProvider):
        new: Signer = old.rotate()
    else:
        new = open_provider(settings.keys).rotate_signer()
    trust = load_trusted_keys(settings.trusted_keys) or {}
    if new.public_key.key_id not in trust:
        add_trusted_key(settings.trusted_keys, new.public_key, new.epoch)
    record_event(
        "audit.key_rotate",
        new.public_key.key_id,
        details={
            "old_key_id": old.public_key.key_id,
            "old_epoch": old.epoch,
            "new_key_id": new.public_key.key_id,
            "new_epoch": new.epoch,
        },
    )
    checkpoint(settings)
    return new

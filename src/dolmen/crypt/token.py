"""The ``dolmen`` LUKS2 token: a data key wrapped by a key provider, bound to its keyslot.

The token holds only the wrapped key (``dolmen.keys.WrappedKey``: provider, KEK name and
version, the context, the ciphertext); the key itself exists only while the provider
unwraps it to open the device. The context is the device's LUKS UUID, so a token copied to
another device does not unwrap there (Vault transit derives a key per context; the file
and PKCS#11 providers bind it as associated data). Pure: JSON in, JSON out.
"""

from __future__ import annotations

import json
from typing import Any

from dolmen.errors import InputError
from dolmen.facts.crypt.luks2 import DOLMEN_TOKEN, LuksHeader, Token
from dolmen.keys import KeyProblem, WrappedKey

FORMAT = "dolmen-luks-token/1"


def make_token(wrapped: WrappedKey, slot: int) -> bytes:
    """The token JSON for ``cryptsetup token import``, bound to keyslot ``slot``."""
    body: dict[str, Any] = {
        "type": DOLMEN_TOKEN,
        "keyslots": [str(slot)],
        "dolmen_format": FORMAT,
        "dolmen_wrapped": wrapped.to_json(),
    }
    return json.dumps(body, sort_keys=True).encode()


def parse_token(text: str, *, device: str) -> tuple[int, WrappedKey]:
    """``(keyslot, wrapped key)`` of an exported dolmen token; InputError when malformed."""
    try:
        body = json.loads(text)
    except ValueError:
        raise InputError("the dolmen token is not JSON", path=device) from None
    if not isinstance(body, dict) or body.get("type") != DOLMEN_TOKEN:
        raise InputError("the token is not a dolmen token", path=device)
    if body.get("dolmen_format") != FORMAT:
        raise InputError(
            f"dolmen token format {body.get('dolmen_format')!r}, expected {FORMAT}", path=device
        )
    slots = body.get("keyslots")
    if not isinstance(slots, list) or len(slots) != 1 or not str(slots[0]).isdigit():
        raise InputError("the dolmen token is bound to no single keyslot", path=device)
    try:
        wrapped = WrappedKey.from_json(body.get("dolmen_wrapped"))
    except KeyProblem as e:
        raise InputError(f"the dolmen token's wrapped key: {e}", path=device) from None
    return int(slots[0]), wrapped


def dolmen_tokens(header: LuksHeader) -> tuple[Token, ...]:
    """The dolmen tokens of a header (one, after an enrolment)."""
    return tuple(t for t in header.tokens if t.type == DOLMEN_TOKEN)


MAX_KEYSLOTS = 32  # LUKS2 (cryptsetup's LUKS2_KEYSLOTS_MAX)
MAX_TOKENS = 32  # LUKS2_TOKENS_MAX


def free_keyslot(header: LuksHeader) -> int | None:
    """The lowest unused keyslot number, or None when all 32 are used."""
    used = {s.slot for s in header.keyslots}
    return next((n for n in range(MAX_KEYSLOTS) if n not in used), None)

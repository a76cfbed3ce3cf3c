"""The quote as it travels from the attested node to the verifier: one JSON document.

``attest quote`` writes it, ``attest verify`` reads it (schema
``dolmen.integrity.attest.quote/1``): the nonce asked, the TPMS_ATTEST and the
TPMT_SIGNATURE in hex as the TPM made them, and the PCR values the node read, which the
verifier checks against the signed digest (they are a claim, not evidence).
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from dolmen.errors import InputError
from dolmen.frozen import frozen
from dolmen.integrity.attest import tcg

SCHEMA = "dolmen.integrity.attest.quote/1"


@frozen
class QuoteBundle:
    """A quote and what travels with it (see the module docstring)."""

    nonce: bytes
    attest: bytes
    signature: bytes
    pcrs: Mapping[str, Mapping[int, bytes]]
    tcti: str | None = None

    def to_json(self) -> dict[str, Any]:
        """The document ``attest quote`` prints and writes."""
        return {
            "schema": SCHEMA,
            "nonce": self.nonce.hex(),
            "attest": self.attest.hex(),
            "signature": self.signature.hex(),
            "pcrs": {
                b: {str(i): v.hex() for i, v in sorted(p.items())} for b, p in self.pcrs.items()
            },
            "tcti": self.tcti,
        }


def parse_bundle(text: str, where: str) -> QuoteBundle:
    """A quote document; ``InputError`` names what is wrong with it."""
    try:
        doc = json.loads(text)
    except ValueError as e:
        raise InputError(f"not JSON: {e}", path=where) from None
    if not isinstance(doc, dict) or doc.get("schema") != SCHEMA:
        raise InputError(f"not a quote document (schema is not {SCHEMA})", path=where)

    def hexed(key: str) -> bytes:
        value = doc.get(key)
        try:
            return bytes.fromhex(value) if isinstance(value, str) else _bad(key)
        except ValueError:
            return _bad(key)

    def _bad(key: str) -> bytes:
        raise InputError(f"{key!r} is not hex", path=where)

    pcrs: dict[str, dict[int, bytes]] = {}
    table = doc.get("pcrs")
    if not isinstance(table, dict):
        raise InputError("'pcrs' is not a table of banks", path=where)
    for bank, values in table.items():
        if bank not in tcg.BY_NAME or not isinstance(values, dict):
            raise InputError(f"pcrs bank {bank!r} is not a known bank", path=where)
        for index, value in values.items():
            try:
                raw = bytes.fromhex(value) if isinstance(value, str) else b""
            except ValueError:
                raw = b""
            if not str(index).isdigit() or int(index) > 23 or len(raw) != tcg.BY_NAME[bank].size:
                raise InputError(f"pcrs {bank}:{index} is not a {bank} PCR value", path=where)
            pcrs.setdefault(bank, {})[int(index)] = raw
    tcti = doc.get("tcti")
    return QuoteBundle(
        hexed("nonce"),
        hexed("attest"),
        hexed("signature"),
        pcrs,
        tcti if isinstance(tcti, str) else None,
    )

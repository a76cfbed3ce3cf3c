"""The golden policy: what each quoted PCR must hold, as TOML a site reviews and signs off.

```toml
bank = "sha256"                 # the default bank of the keys below
[pcrs]
0 = "replay-must-match"         # the quoted value must be the event log's replay
7 = ["3d45...", "a1b2..."]      # the quoted value must be one of these (hex)
"sha1:10" = "replay-must-match" # another bank: "<bank>:<pcr>"
```

``replay-must-match`` proves the log is the record of what ran, and judges nothing it
measured; a pinned list judges the values themselves (Secure Boot keys in PCR 7, the
firmware in PCR 0). Every rule is explicit: there is no default that accepts, and a
policy with no PCR is refused (Keylime's accept-all default is the trap this avoids).
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path

from dolmen.compat import tomllib
from dolmen.errors import InputError
from dolmen.frozen import frozen
from dolmen.integrity.attest import tcg

REPLAY = "replay-must-match"


@frozen
class Rule:
    """One PCR's rule: ``allowed`` values (None: the replay must match)."""

    bank: str
    pcr: int
    allowed: tuple[bytes, ...] | None

    @property
    def key(self) -> str:
        """``sha256:7``: the rule's name in outputs."""
        return f"{self.bank}:{self.pcr}"


@frozen
class Policy:
    """The rules, ordered by bank then PCR (the order a quote selects them in)."""

    rules: tuple[Rule, ...]

    def selection(self) -> tuple[tuple[str, tuple[int, ...]], ...]:
        """The PCRs to quote, bank by bank."""
        banks: dict[str, list[int]] = {}
        for rule in self.rules:
            banks.setdefault(rule.bank, []).append(rule.pcr)
        return tuple((bank, tuple(sorted(pcrs))) for bank, pcrs in banks.items())


def parse_policy(doc: Mapping[str, object], where: str) -> Policy:
    """A policy from its TOML mapping; ``InputError`` names the first bad entry."""
    default = doc.get("bank", "sha256")
    if not isinstance(default, str) or default not in tcg.BY_NAME:
        raise InputError(f"bank {default!r} is not one of {', '.join(tcg.BY_NAME)}", path=where)
    table = doc.get("pcrs")
    if not isinstance(table, dict) or not table:
        raise InputError(
            "no [pcrs] table: a policy names every PCR it judges (no default accepts)",
            path=where,
            hint=f'write e.g. [pcrs] 0 = "{REPLAY}" (docs/attestation.md)',
        )
    unknown = sorted(set(doc) - {"bank", "pcrs"})
    if unknown:
        raise InputError(f"unknown keys {unknown}; valid: bank, pcrs", path=where)
    rules = {}
    for key, value in table.items():
        bank, _, index = str(key).rpartition(":")
        bank = bank or default
        if bank not in tcg.BY_NAME or not index.isdigit() or int(index) > 23:
            raise InputError(f"pcrs key {key!r} is not '<pcr>' or '<bank>:<pcr>'", path=where)
        rule = Rule(bank, int(index), _allowed(value, bank, str(key), where))
        if rule.key in rules:
            raise InputError(f"{rule.key} is given twice", path=where)
        rules[rule.key] = rule
    ordered = sorted(rules.values(), key=lambda r: (list(tcg.BY_NAME).index(r.bank), r.pcr))
    return Policy(tuple(ordered))


def _allowed(value: object, bank: str, key: str, where: str) -> tuple[bytes, ...] | None:
    if value == REPLAY:
        return None
    size = tcg.BY_NAME[bank].size
    if isinstance(value, list) and value:
        out = []
        for item in value:
            try:
                raw = bytes.fromhex(item) if isinstance(item, str) else b""
            except ValueError:
                raw = b""
            if len(raw) != size:
                raise InputError(
                    f"pcrs {key!r}: {str(item)[:80]!r} is not a {size}-byte {bank} value in hex",
                    path=where,
                )
            out.append(raw)
        return tuple(out)
    raise InputError(
        f'pcrs {key!r} must be "{REPLAY}" or a non-empty list of hex values', path=where
    )


def load_policy(path: Path, text: str) -> Policy:
    """A policy file's text, parsed (``path`` names it in errors)."""
    try:
        doc = tomllib.loads(text)
    except tomllib.TOMLDecodeError as e:
        raise InputError(f"not TOML: {e}", path=str(path)) from None
    return parse_policy(doc, str(path))


def render_policy(policy: Policy) -> str:
    """A policy as TOML (what ``attest policy`` writes), one PCR a line."""
    lines = ["# dolmen attestation policy (docs/attestation.md)", "[pcrs]"]
    for rule in policy.rules:
        if rule.allowed is None:
            lines.append(f'"{rule.key}" = "{REPLAY}"')
        else:
            values = ", ".join(f'"{v.hex()}"' for v in rule.allowed)
            lines.append(f'"{rule.key}" = [{values}]')
    return "\n".join(lines) + "\n"

"""The attestation verdict: a quote, its nonce, the AK, the replay and the policy, judged.

Trusted only when everything holds: the TPMS_ATTEST is a quote, the AK signed it, it
answers the nonce the verifier chose for this round (an old quote replayed by a
compromised node carries an old nonce), the PCR values that came with it are the ones
the TPM signed, every PCR the policy names was quoted, and each one meets its rule. A PCR
whose rule is the replay and whose replay is unverifiable fails; so does any rule
violation in the event log or the IMA list (a tampered log). Pure.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from dolmen.frozen import frozen
from dolmen.integrity.attest import quote as q
from dolmen.integrity.attest.bundle import QuoteBundle
from dolmen.integrity.attest.policy import Policy, Rule
from dolmen.integrity.attest.replay import Replay

SCHEMA = "dolmen.integrity.attest.verify/1"


@frozen
class PcrVerdict:
    """One rule's outcome: ``match``, ``allowed`` (good), ``mismatch``, ``not-allowed``,
    ``unverifiable``, ``not-quoted`` (bad), with the quoted and replayed values."""

    rule: Rule
    status: str
    quoted: bytes | None
    replayed: bytes | None
    reason: str | None = None

    @property
    def good(self) -> bool:
        """Whether this PCR meets its rule."""
        return self.status in ("match", "allowed")


@frozen
class Verdict:
    """The whole answer; ``trusted`` exactly when ``problems`` is empty."""

    problems: tuple[str, ...]
    pcrs: tuple[PcrVerdict, ...]
    attest: q.Attest | None
    notes: tuple[str, ...] = ()

    @property
    def trusted(self) -> bool:
        """Whether the node proved the state the policy asks for."""
        return not self.problems

    def to_json(self) -> dict[str, Any]:
        """The ``attest verify --json`` document."""
        a = self.attest
        return {
            "schema": SCHEMA,
            "trusted": self.trusted,
            "problems": list(self.problems),
            "notes": list(self.notes),
            "quote": None
            if a is None
            else {
                "nonce": a.nonce.hex(),
                "clock": a.clock,
                "reset_count": a.reset_count,
                "restart_count": a.restart_count,
                "selection": {bank: list(pcrs) for bank, pcrs in a.selection},
            },
            "pcrs": [
                {
                    "pcr": v.rule.key,
                    "rule": "replay-must-match" if v.rule.allowed is None else "allowed",
                    "status": v.status,
                    "quoted": _hex(v.quoted),
                    "replayed": _hex(v.replayed),
                    "reason": v.reason,
                }
                for v in self.pcrs
            ],
        }


def verify(
    bundle: QuoteBundle, ak_pem: bytes, nonce: bytes, policy: Policy, replayed: Replay | None
) -> Verdict:
    """Judge one quote (see the module docstring)."""
    problems: list[str] = []
    try:
        attest = q.parse_attest(bundle.attest)
        sig = q.parse_signature(bundle.signature)
        if not q.verify_signature(ak_pem, bundle.attest, sig):
            problems.append(
                "the quote's signature does not verify with this AK: another AK signed it "
                "(a wrong --ak-pub), or the quote was altered"
            )
    except q.QuoteError as e:
        return Verdict((f"not a checkable quote: {e}",), (), None)
    if attest.nonce != nonce:
        problems.append(
            f"the quote answers nonce {attest.nonce.hex()[:32]}, not this round's "
            f"{nonce.hex()[:32]}: a stale or replayed quote"
        )
    shown = {b: dict(v) for b, v in bundle.pcrs.items()}
    expected = q.pcr_digest(sig.hash_name, attest.selection, shown)
    if expected is None:
        problems.append("the quote document lacks a value for a PCR the TPM quoted")
    elif expected != attest.pcr_digest:
        problems.append(
            "the PCR values in the quote document are not the ones the TPM signed "
            "(their digest differs from the signed pcrDigest)"
        )
    quoted = {(b, i) for b, pcrs in attest.selection for i in pcrs}
    values = shown if expected == attest.pcr_digest else {}
    if replayed is not None:
        problems.extend(replayed.problems)
    verdicts = tuple(_judge(rule, quoted, values, replayed) for rule in policy.rules)
    problems.extend(f"{v.rule.key}: {v.reason}" for v in verdicts if not v.good)
    judged = {(r.bank, r.pcr) for r in policy.rules}
    extra = sorted(f"{b}:{i}" for b, i in quoted - judged)
    notes = (f"quoted but not in the policy, so not judged: {', '.join(extra)}",) if extra else ()
    return Verdict(tuple(problems), verdicts, attest, notes)


def _judge(
    rule: Rule,
    quoted: set[tuple[str, int]],
    values: Mapping[str, Mapping[int, bytes]],
    replayed: Replay | None,
) -> PcrVerdict:
    value = values.get(rule.bank, {}).get(rule.pcr)
    replay = replayed.pcr(rule.bank, rule.pcr) if replayed is not None else None
    mine = replay.value if replay is not None else None
    if (rule.bank, rule.pcr) not in quoted:
        return PcrVerdict(rule, "not-quoted", None, mine, "the quote does not cover this PCR")
    if value is None:
        return PcrVerdict(rule, "unverifiable", None, mine, "its quoted value is not proven")
    if rule.allowed is not None:
        if value in rule.allowed:
            return PcrVerdict(rule, "allowed", value, mine)
        return PcrVerdict(rule, "not-allowed", value, mine, "a value the policy does not allow")
    if replay is None:
        return PcrVerdict(rule, "unverifiable", value, None, "no event log to replay was given")
    if mine is None:
        return PcrVerdict(rule, "unverifiable", value, None, replay.reason or "not replayable")
    if mine != value:
        return PcrVerdict(
            rule, "mismatch", value, mine, "the event log's replay differs from the TPM's value"
        )
    return PcrVerdict(rule, "match", value, mine)


def _hex(value: bytes | None) -> str | None:
    return None if value is None else value.hex()

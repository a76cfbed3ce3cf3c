"""One audit event: its ECS field names, its canonical encoding and its hash (docs/audit.md).

A line of the log is the canonical encoding of one event, newline-terminated:

    {"dolmen":{"prev_hash":P,"target":T,"details":{...},"checkpoint":{...}},
     "@timestamp":TS,"ecs":{"version":V},"host":{"name":H},"process":{"pid":N},
     "user":{"name":U,"id":I,"effective":{"name":EU,"id":EI}},
     "event":{"kind":"event","dataset":"dolmen.audit","action":A,"outcome":O,
              "sequence":S,"hash":X}}

(one line, no spaces). Members come in exactly this order; absent values are
left out; ``details`` and ``checkpoint`` are sorted by key. Strings are JSON with
non-ASCII escaped, so a line is pure ASCII. ``event.hash`` is the SHA-256 (hex)
of the bytes of the line before ``,"hash":"``: the event without its own hash.
The fixed frame (``prev_hash`` first, ``hash`` last) lets the verifier find both
by position, without parsing JSON (verify.py).
"""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

_encode_ascii: Callable[[str], str] = json.encoder.encode_basestring_ascii

ECS_VERSION = "8.11.0"
DATASET = "dolmen.audit"
GENESIS = "0" * 64  # prev_hash of the first event of a log
OUTCOMES = ("success", "failure", "unknown")  # ECS event.outcome allowed values
CHECKPOINT_ACTION = "audit.checkpoint"

HEAD = b'{"dolmen":{"prev_hash":"'  # every line starts with this, then 64 hex
HASH_MARK = b',"hash":"'
TAIL_LEN = len(HASH_MARK) + 64 + len(b'"}}')  # bytes after the hashed prefix, before "\n"
PREV_AT = slice(len(HEAD), len(HEAD) + 64)
HASH_AT = slice(-TAIL_LEN + len(HASH_MARK), -3)  # in a line without its newline

_ACTION = re.compile(r"^[a-z][a-z0-9_]*(\.[a-z][a-z0-9_]*)+$")
_HEX64 = re.compile(r"^[0-9a-f]{64}$")


@dataclass(frozen=True)
class Actor:
    """Who acted: the real user (behind sudo) or a service principal, and the effective user."""

    name: str | None
    id: str | None = None
    effective_name: str | None = None
    effective_id: str | None = None


@dataclass(frozen=True)
class AuditEvent:
    """One event of the log. ``sequence`` and ``hash`` are None when it was not written
    (fail-open: the log was unavailable and the site allows changes anyway)."""

    action: str
    target: str
    outcome: str
    actor: Actor
    host: str
    timestamp: str
    details: Mapping[str, Any] = field(default_factory=dict)
    pid: int | None = None
    sequence: int | None = None
    prev_hash: str | None = None
    hash: str | None = None
    checkpoint: Mapping[str, Any] | None = None

    @property
    def written(self) -> bool:
        """Whether the event is in the log (False only under fail-open)."""
        return self.sequence is not None

    def to_ecs(self) -> dict[str, Any]:
        """The event as a JSON-ready dict with ECS field names (same content as the line)."""
        result: dict[str, Any] = json.loads(encode(self, self.prev_hash or GENESIS, self.sequence))
        return result


def validate_request(action: str, target: str, outcome: str) -> None:
    """Refuse what a caller got wrong (a bug in the caller, hence ValueError)."""
    if not _ACTION.match(action):
        raise ValueError(f"audit action {action!r} must be dotted lowercase, e.g. 'tune.apply'")
    if outcome not in OUTCOMES:
        raise ValueError(f"audit outcome {outcome!r} must be one of {', '.join(OUTCOMES)}")
    if not isinstance(target, str):
        raise ValueError("audit target must be a string")


def _s(value: str) -> str:
    # the C encoder json.dumps(ensure_ascii=True) uses for a str, without its overhead
    if not isinstance(value, str):
        raise ValueError(f"expected text, got {type(value).__name__}")
    return _encode_ascii(value)


def canonical_json(value: Any) -> str:
    """Free-form values (details, checkpoint): sorted keys, no spaces, ASCII, no NaN.

    Values JSON cannot hold (paths, enums, datetimes) are stored as their str(), and
    keys that are not strings (``{3: ...}``) as their str() too.
    """
    try:
        return _dumps(value)
    except TypeError:
        pass  # keys of mixed types cannot be sorted: make them text, then try again
    except ValueError as e:
        raise ValueError(f"audit details cannot be encoded: {e}") from e
    try:
        return _dumps(_str_keys(value))
    except (TypeError, ValueError) as e:
        raise ValueError(f"audit details cannot be encoded: {e}") from e


def _dumps(value: Any) -> str:
    return json.dumps(
        value,
        sort_keys=True,
        separators=(",", ":"),
        ensure_ascii=True,
        allow_nan=False,
        default=str,
    )


def _str_keys(value: Any) -> Any:
    if isinstance(value, Mapping):
        out = {str(k): _str_keys(v) for k, v in value.items()}
        if len(out) != len(value):
            raise ValueError("two keys have the same text")
        return out
    if isinstance(value, list | tuple):
        return [_str_keys(v) for v in value]
    return value


def prefix(event: AuditEvent, prev_hash: str, sequence: int) -> bytes:
    """The hashed part of the line: the canonical encoding up to ``event.sequence``."""
    dol = [f'"prev_hash":{_s(prev_hash)}', f'"target":{_s(event.target)}']
    if event.details:
        dol.append(f'"details":{canonical_json(event.details)}')
    if event.checkpoint is not None:
        dol.append(f'"checkpoint":{canonical_json(event.checkpoint)}')
    parts = [
        '{"dolmen":{' + ",".join(dol) + "}",
        f'"@timestamp":{_s(event.timestamp)}',
        f'"ecs":{{"version":{_s(ECS_VERSION)}}}',
        f'"host":{{"name":{_s(event.host)}}}',
    ]
    if event.pid is not None:
        parts.append(f'"process":{{"pid":{int(event.pid)}}}')
    user = _user(event.actor)
    if user:
        parts.append(f'"user":{{{user}}}')
    parts.append(
        '"event":{"kind":"event",'
        f'"dataset":{_s(DATASET)},"action":{_s(event.action)},'
        f'"outcome":{_s(event.outcome)},"sequence":{int(sequence)}'
    )
    return ",".join(parts).encode("ascii")


def _user(actor: Actor) -> str:
    fields = []
    if actor.name is not None:
        fields.append(f'"name":{_s(actor.name)}')
    if actor.id is not None:
        fields.append(f'"id":{_s(actor.id)}')
    eff = []
    if actor.effective_name is not None:
        eff.append(f'"name":{_s(actor.effective_name)}')
    if actor.effective_id is not None:
        eff.append(f'"id":{_s(actor.effective_id)}')
    if eff:
        fields.append('"effective":{' + ",".join(eff) + "}")
    return ",".join(fields)


def encode(event: AuditEvent, prev_hash: str, sequence: int | None) -> bytes:
    """The full canonical line (without its newline) and, implicitly, its hash."""
    pre = prefix(event, prev_hash, sequence or 0)
    digest = hashlib.sha256(pre).hexdigest()
    return pre + HASH_MARK + digest.encode("ascii") + b'"}}'


def seal(event: AuditEvent, prev_hash: str, sequence: int) -> tuple[AuditEvent, bytes]:
    """Give ``event`` its place in the chain: returns the sealed event and its line + newline."""
    pre = prefix(event, prev_hash, sequence)
    digest = hashlib.sha256(pre).hexdigest()
    line = pre + HASH_MARK + digest.encode("ascii") + b'"}}\n'
    sealed = AuditEvent(
        action=event.action,
        target=event.target,
        outcome=event.outcome,
        actor=event.actor,
        host=event.host,
        timestamp=event.timestamp,
        details=event.details,
        pid=event.pid,
        sequence=sequence,
        prev_hash=prev_hash,
        hash=digest,
        checkpoint=event.checkpoint,
    )
    return sealed, line


class LineError(ValueError):
    """A line that is not a canonical, self-consistent event; ``kind`` says how."""

    def __init__(self, kind: str, message: str) -> None:
        super().__init__(message)
        self.kind = kind


def parse_line(line: bytes) -> AuditEvent:
    """Parse one line (with or without its newline) and check its own hash and canonical form.

    Raises LineError with kind ``malformed`` (not an event), ``noncanonical`` (an event,
    but not in the one encoding dolmen writes) or ``hash`` (content does not match hash).
    """
    raw = line[:-1] if line.endswith(b"\n") else line
    try:
        obj = json.loads(raw)
    except (ValueError, UnicodeDecodeError) as e:
        raise LineError("malformed", f"not JSON: {e}") from e
    try:
        event = _from_obj(obj)
    except (KeyError, TypeError, ValueError, AttributeError) as e:
        raise LineError("malformed", f"not an audit event: {e}") from e
    assert event.prev_hash is not None and event.sequence is not None
    expected = encode(event, event.prev_hash, event.sequence)
    claimed = raw[HASH_AT] if len(raw) >= TAIL_LEN else b""
    if expected[:-TAIL_LEN] != raw[:-TAIL_LEN] or raw[-TAIL_LEN:][: len(HASH_MARK)] != HASH_MARK:
        raise LineError("noncanonical", "not in dolmen's canonical encoding")
    if expected[HASH_AT] != claimed:
        raise LineError("hash", "event.hash does not match the event's content")
    return event


def _from_obj(obj: Any) -> AuditEvent:
    dol, ev = obj["dolmen"], obj["event"]
    user = obj.get("user", {})
    eff = user.get("effective", {})
    prev, digest, seq = dol["prev_hash"], ev["hash"], ev["sequence"]
    if not (isinstance(prev, str) and _HEX64.match(prev)):
        raise ValueError("dolmen.prev_hash is not 64 hex digits")
    if not (isinstance(digest, str) and _HEX64.match(digest)):
        raise ValueError("event.hash is not 64 hex digits")
    if not isinstance(seq, int) or isinstance(seq, bool) or seq < 1:
        raise ValueError("event.sequence is not a positive integer")
    pid = obj.get("process", {}).get("pid")
    return AuditEvent(
        action=str(ev["action"]),
        target=str(dol["target"]),
        outcome=str(ev["outcome"]),
        actor=Actor(
            name=_opt(user.get("name")),
            id=_opt(user.get("id")),
            effective_name=_opt(eff.get("name")),
            effective_id=_opt(eff.get("id")),
        ),
        host=str(obj["host"]["name"]),
        timestamp=str(obj["@timestamp"]),
        details=dol.get("details", {}),
        pid=pid if isinstance(pid, int) else None,
        sequence=seq,
        prev_hash=prev,
        hash=digest,
        checkpoint=dol.get("checkpoint"),
    )


def _opt(value: Any) -> str | None:
    return None if value is None else str(value)

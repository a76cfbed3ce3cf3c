"""What an attacker with write access to the log folder can do: rewrite lines and re-seal
the chain after them, with or without a key of their own. Used by the tamper tests."""

from __future__ import annotations

import base64
import dataclasses
from pathlib import Path

from dolmen.audit import EventRequest, record_events
from dolmen.audit.checkpoint import checkpoint_message
from dolmen.audit.event import AuditEvent, parse_line, seal
from dolmen.audit.segments import HeadRecord, encode_head, head_path
from dolmen.audit.settings import AuditSettings
from dolmen.keys import Signer


def make_log(settings: AuditSettings, batches: list[int]) -> list[bytes]:
    """A real log written by the code, one record_events call per batch; its lines."""
    n = 0
    for size in batches:
        record_events(
            [
                EventRequest(
                    "tune.apply" if (n + i) % 3 else "jobs.submit",
                    f"target:{n + i}",
                    details={"i": n + i, "note": 'é ü "quoted" \\ back'},
                )
                for i in range(size)
            ],
            settings=settings,
        )
        n += size
    return settings.path.read_bytes().splitlines(keepends=True)


def reseal(lines: list[bytes], start: int, log: Path | None = None) -> list[bytes]:
    """Recompute hashes and links from ``start`` on (an attacker covering their tracks);
    with ``log``, also rewrite its head record to match."""
    out = list(lines[:start])
    prev = parse_line(out[-1]).hash if out else "0" * 64
    seq = parse_line(out[-1]).sequence if out else 0
    assert prev is not None and seq is not None
    for raw in lines[start:]:
        event = parse_line(raw)
        seq += 1
        sealed, line = seal(event, prev, seq)
        assert sealed.hash is not None
        prev = sealed.hash
        out.append(line)
    if log is not None:
        head_path(log).write_bytes(encode_head(HeadRecord(seq, prev)))
    return out


def resign(
    event: AuditEvent, signer: Signer, *, epoch: int | None = None, head: str | None = None
) -> AuditEvent:
    """The checkpoint ``event`` signed again by ``signer`` (labelled ``epoch``, over ``head``)."""
    assert event.checkpoint is not None
    body = dict(event.checkpoint)
    if head is not None:
        body["head"] = head
    key = signer.public_key
    ep = signer.epoch if epoch is None else epoch
    message = checkpoint_message(event.host, body["sequence"], body["head"], key.key_id, ep)
    body.update(
        key_id=key.key_id,
        epoch=ep,
        signature=base64.b64encode(signer.sign(message)).decode(),
    )
    return dataclasses.replace(event, checkpoint=body)

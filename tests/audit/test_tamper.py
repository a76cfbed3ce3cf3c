"""Tamper fuzzing: thousands of seeded mutations of a real log, each detected and located;
the untouched log is never reported. Plus the forgeries a careful attacker would try."""

from __future__ import annotations

import base64
import random
import shutil
from pathlib import Path

import pytest

from dolmen.audit.event import parse_line
from dolmen.audit.settings import AuditSettings
from dolmen.audit.verify import VerifyReport, verify_log
from dolmen.keys.file import FileKeyProvider
from dolmen.keys.trust import add_trusted_key, load_trusted_keys
from tests.audit.conftest import write_config
from tests.audit.forge import make_log, reseal, resign

MUTATIONS = 3000


@pytest.fixture
def real_log(audit_env: AuditSettings) -> tuple[AuditSettings, list[bytes]]:
    settings = write_config(audit_env, "checkpoint_every = 7\n")
    lines = make_log(settings, [1, 5, 9, 2, 13, 1, 4])
    assert sum(b'"action":"audit.checkpoint"' in x for x in lines) >= 4
    return settings, lines


def _verify(settings: AuditSettings, **kw: object) -> VerifyReport:
    trust = load_trusted_keys(settings.trusted_keys)
    return verify_log(settings.path, trust, checkpoint_every=7, **kw)  # type: ignore[arg-type]


def _mutate(rng: random.Random, lines: list[bytes]) -> tuple[str, bytes, int, set[str]]:
    """One random mutation: (name, new file bytes, expected 1-based line, accepted kinds)."""
    n = len(lines)
    i = rng.randrange(n)
    what = rng.choice(["flip", "delete", "duplicate", "swap", "insert", "copy", "truncate"])
    out = list(lines)
    if what == "flip":
        line = bytearray(out[i])
        pos = rng.randrange(len(line))
        line[pos] ^= 1 << rng.randrange(8)
        out[i] = bytes(line)
        last_newline = i == n - 1 and pos == len(line) - 1
        return what, b"".join(out), i + 1, {"truncated"} if last_newline else {"modified"}
    if what == "delete":
        del out[i]
        if i == n - 1:
            return what, b"".join(out), n - 1, {"truncated"}
        return what, b"".join(out), i + 1, {"deleted"}
    if what == "duplicate":
        out.insert(i + 1, out[i])
        return what, b"".join(out), i + 2, {"inserted"}
    if what == "swap":
        i = min(i, n - 2)
        out[i], out[i + 1] = out[i + 1], out[i]
        return what, b"".join(out), i + 1, {"reordered"}
    if what == "insert":
        junk = bytes(rng.randrange(32, 127) for _ in range(rng.randrange(1, 300))) + b"\n"
        out.insert(i, junk)
        return what, b"".join(out), i + 1, {"inserted"}
    if what == "copy":  # an older event copied further down
        j = rng.randrange(n)
        if j >= i:
            i, j = j, i
        out.insert(i + 1, lines[j])
        return what, b"".join(out), i + 2, {"inserted"}
    cut = rng.randrange(len(lines[-1]))  # truncate inside the last event
    data = b"".join(lines)
    return what, data[: len(data) - len(lines[-1]) + cut], n - (cut == 0), {"truncated"}


def test_untouched_log_is_intact(real_log: tuple[AuditSettings, list[bytes]]) -> None:
    settings, lines = real_log
    report = _verify(settings)
    assert report.ok, report.problem
    assert report.events == len(lines) and report.last_sequence == len(lines)
    assert report.checkpoints >= 4
    assert _verify(settings, from_checkpoint=True).ok


def test_thousands_of_random_mutations_are_detected_and_located(
    real_log: tuple[AuditSettings, list[bytes]],
) -> None:
    settings, lines = real_log
    rng = random.Random(20261130)
    pristine = settings.path.read_bytes()
    seen: dict[str, int] = {}
    for round_ in range(MUTATIONS):
        what, data, line, kinds = _mutate(rng, lines)
        if data == pristine:
            continue  # a swap of two equal lines, say: nothing changed
        settings.path.write_bytes(data)
        report = _verify(settings)
        assert report.problem is not None, f"round {round_}: {what} at line {line} not detected"
        assert report.problem.kind in kinds, (round_, what, line, report.problem)
        assert report.problem.line == line, (round_, what, line, report.problem)
        seen[what] = seen.get(what, 0) + 1
    settings.path.write_bytes(pristine)
    assert _verify(settings).ok
    assert set(seen) == {"flip", "delete", "duplicate", "swap", "insert", "copy", "truncate"}


def test_truncation_at_every_offset_of_the_last_event(
    real_log: tuple[AuditSettings, list[bytes]],
) -> None:
    settings, lines = real_log
    data = b"".join(lines)
    start = len(data) - len(lines[-1])
    for offset in range(start, len(data)):
        settings.path.write_bytes(data[:offset])
        problem = _verify(settings).problem
        assert problem is not None and problem.kind == "truncated", offset
        assert problem.line == (len(lines) if offset > start else len(lines) - 1)


def _checkpoint_index(lines: list[bytes]) -> int:
    return next(i for i, x in enumerate(lines) if b'"action":"audit.checkpoint"' in x)


def test_forged_signature_with_a_resealed_chain(
    real_log: tuple[AuditSettings, list[bytes]],
) -> None:
    settings, lines = real_log
    c = _checkpoint_index(lines)
    event = parse_line(lines[c])
    assert event.checkpoint is not None
    body = dict(event.checkpoint)
    body["signature"] = base64.b64encode(bytes(64)).decode()
    forged = list(lines)
    forged[c] = _line_of(event, body)
    settings.path.write_bytes(b"".join(reseal(forged, c, settings.path)))
    problem = _verify(settings).problem
    assert problem is not None and (problem.kind, problem.line) == ("bad-signature", c + 1)


def test_missing_signature(real_log: tuple[AuditSettings, list[bytes]]) -> None:
    settings, lines = real_log
    c = _checkpoint_index(lines)
    event = parse_line(lines[c])
    body = {k: v for k, v in (event.checkpoint or {}).items() if k != "signature"}
    forged = list(lines)
    forged[c] = _line_of(event, body)
    settings.path.write_bytes(b"".join(reseal(forged, c, settings.path)))
    problem = _verify(settings).problem
    assert problem is not None and (problem.kind, problem.line) == ("missing-signature", c + 1)


def test_checkpoint_signed_by_an_untrusted_key(
    real_log: tuple[AuditSettings, list[bytes]], tmp_path: Path
) -> None:
    settings, lines = real_log
    mallory = FileKeyProvider.generate(tmp_path / "mallory.key")
    c = _checkpoint_index(lines)
    forged = list(lines)
    forged[c] = _sealed_line(resign(parse_line(lines[c]), mallory))
    settings.path.write_bytes(b"".join(reseal(forged, c, settings.path)))
    problem = _verify(settings).problem
    assert problem is not None and (problem.kind, problem.line) == ("untrusted-key", c + 1)
    assert mallory.public_key.key_id in problem.message


def test_the_whole_log_rewritten_without_checkpoints(
    real_log: tuple[AuditSettings, list[bytes]],
) -> None:
    settings, lines = real_log
    kept = [x for x in lines if b'"action":"audit.checkpoint"' not in x]
    settings.path.write_bytes(b"".join(reseal(kept, 0, settings.path)))
    problem = _verify(settings).problem
    assert problem is not None and problem.kind == "missing-signature"


def test_an_old_key_epoch_after_a_newer_one_is_refused(
    real_log: tuple[AuditSettings, list[bytes]], tmp_path: Path
) -> None:
    """The stolen pre-rotation key signs a checkpoint after the rotation (FSS CVE-2023-31439)."""
    settings, lines = real_log
    old = FileKeyProvider(settings.key)
    shutil.copy(settings.key, tmp_path / "stolen.key")
    new = old.rotate()
    add_trusted_key(settings.trusted_keys, new.public_key, new.epoch)
    cps = [i for i, x in enumerate(lines) if b'"action":"audit.checkpoint"' in x]
    first, second = cps[0], cps[1]
    forged = list(lines)
    forged[first] = _sealed_line(resign(parse_line(lines[first]), new))
    forged = reseal(forged, first)
    stolen = FileKeyProvider(tmp_path / "stolen.key")
    head = parse_line(forged[second - 1]).hash
    forged[second] = _sealed_line(resign(parse_line(forged[second]), stolen, head=head))
    settings.path.write_bytes(b"".join(reseal(forged, second, settings.path)))
    problem = _verify(settings).problem
    assert problem is not None and (problem.kind, problem.line) == ("key-epoch", second + 1)


def test_an_epoch_relabel_is_refused(
    real_log: tuple[AuditSettings, list[bytes]],
) -> None:
    settings, lines = real_log
    signer = FileKeyProvider(settings.key)
    c = _checkpoint_index(lines)
    forged = list(lines)
    forged[c] = _sealed_line(resign(parse_line(lines[c]), signer, epoch=5))
    settings.path.write_bytes(b"".join(reseal(forged, c, settings.path)))
    problem = _verify(settings).problem
    assert problem is not None and (problem.kind, problem.line) == ("key-epoch", c + 1)


def _line_of(event: object, body: dict[str, object]) -> bytes:
    import dataclasses

    return _sealed_line(dataclasses.replace(event, checkpoint=body))  # type: ignore[type-var]


def _sealed_line(event: object) -> bytes:
    from dolmen.audit.event import AuditEvent, seal

    assert isinstance(event, AuditEvent)
    assert event.prev_hash is not None and event.sequence is not None
    return seal(event, event.prev_hash, event.sequence)[1]

"""The verifier's fast path in worker processes (fastpath.py) against the serial pass: the
same answer, and the same first broken link at the same line, for every mutation kind, at
every boundary between the workers' spans and between the runs a span is checked in."""

from __future__ import annotations

import base64
import dataclasses
import itertools
import multiprocessing
import os
import random
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from dolmen.audit import record_event
from dolmen.audit.event import GENESIS, HASH_AT, PREV_AT, AuditEvent, parse_line, seal
from dolmen.audit.fastpath import (
    MIN_BYTES_ENV,
    RUN_BYTES,
    SPANS_PER_WORKER,
    FastCheck,
    check_file,
    cut,
    lines_intact,
    usable_workers,
)
from dolmen.audit.segments import segments
from dolmen.audit.settings import AuditSettings
from dolmen.audit.verify import VerifyReport, verify_log
from dolmen.errors import InputError
from dolmen.keys.file import FileKeyProvider
from dolmen.keys.trust import add_trusted_key, load_trusted_keys
from tests.audit.conftest import write_config
from tests.audit.forge import make_log, reseal, resign
from tests.audit.test_tamper import _mutate

MUTATIONS = 200
SERIAL = 1 << 62  # a parallel_min_bytes no file reaches
WORKERS = {2, 3, 4}
KINDS = {"flip", "delete", "duplicate", "swap", "insert", "copy", "truncate"}

fork = pytest.mark.skipif(
    "fork" not in multiprocessing.get_all_start_methods(), reason="no fork: always serial"
)
cores = pytest.mark.skipif(
    usable_workers() < 2, reason="one core: verify_log checks in this process"
)


@pytest.fixture
def small_log(audit_env: AuditSettings) -> tuple[AuditSettings, list[bytes]]:
    settings = write_config(audit_env, "checkpoint_every = 7\n")
    return settings, make_log(settings, [1, 5, 9, 2, 13, 1, 4, 8, 3, 11])


def _both(settings: AuditSettings, every: int = 7) -> tuple[VerifyReport, VerifyReport]:
    """(serial report, parallel report) of the same log."""
    trust = load_trusted_keys(settings.trusted_keys)
    serial = verify_log(settings.path, trust, checkpoint_every=every, parallel_min_bytes=SERIAL)
    parallel = verify_log(settings.path, trust, checkpoint_every=every, parallel_min_bytes=0)
    assert serial.parallel_files == 0
    return serial, parallel


def _same(serial: VerifyReport, parallel: VerifyReport) -> None:
    fields = dataclasses.asdict(serial) | {"parallel_files": None}
    assert dataclasses.asdict(parallel) | {"parallel_files": None} == fields


@fork
@cores
def test_an_intact_log_is_checked_by_workers_with_the_same_report(
    small_log: tuple[AuditSettings, list[bytes]],
) -> None:
    settings, lines = small_log
    serial, parallel = _both(settings)
    assert serial.ok and serial.events == len(lines) and serial.checkpoints >= 6
    assert parallel.parallel_files == 1
    _same(serial, parallel)


@fork
@cores
def test_random_mutations_same_break_at_the_same_line(
    small_log: tuple[AuditSettings, list[bytes]],
) -> None:
    settings, lines = small_log
    pristine = settings.path.read_bytes()
    rng = random.Random(20261201)
    seen: set[str] = set()
    for round_ in range(MUTATIONS):
        what, data, line, kinds = _mutate(rng, lines)
        if data == pristine:
            continue
        settings.path.write_bytes(data)
        serial, parallel = _both(settings)
        assert serial.problem is not None, (round_, what)
        assert (serial.problem.kind in kinds, serial.problem.line) == (True, line), (round_, what)
        _same(serial, parallel)
        seen.add(what)
    assert seen == KINDS


@fork
@cores
def test_a_line_rewritten_with_a_fresh_hash_at_every_position(
    small_log: tuple[AuditSettings, list[bytes]],
) -> None:
    """Only the next line's prev_hash betrays it: at a span boundary, the parent's link check."""
    settings, lines = small_log
    prev = GENESIS
    for i, raw in enumerate(lines):
        event = dataclasses.replace(parse_line(raw), target="forged")
        forged = list(lines)
        forged[i] = seal(event, prev, i + 1)[1]
        prev = parse_line(raw).hash or ""
        settings.path.write_bytes(b"".join(forged))
        serial, parallel = _both(settings)
        assert serial.problem is not None and serial.problem.kind == "modified", i
        assert serial.problem.line == i + 1, i
        _same(serial, parallel)


@fork
@cores
def test_forged_checkpoints_same_answer(
    small_log: tuple[AuditSettings, list[bytes]], tmp_path: Path
) -> None:
    """Checkpoints are checked while the workers hash (verify.py): a bad signature, a key
    nobody trusts and an epoch relabel are reported alike, at the same line."""
    settings, lines = small_log
    cps = [i for i, x in enumerate(lines) if b'"action":"audit.checkpoint"' in x]
    mallory = FileKeyProvider.generate(tmp_path / "mallory.key")
    own = FileKeyProvider(settings.key)
    for c, signer, epoch, kind in (
        (cps[1], mallory, None, "untrusted-key"),
        (cps[2], own, 5, "key-epoch"),
        (cps[0], own, None, "bad-signature"),
    ):
        event = resign(parse_line(lines[c]), signer, epoch=epoch)
        if kind == "bad-signature":
            body = dict(event.checkpoint or {}, signature=base64.b64encode(bytes(64)).decode())
            event = dataclasses.replace(event, checkpoint=body)
        forged = list(lines)
        forged[c] = _sealed(event)
        settings.path.write_bytes(b"".join(reseal(forged, c, settings.path)))
        serial, parallel = _both(settings)
        assert serial.problem is not None
        assert (serial.problem.kind, serial.problem.line) == (kind, c + 1)
        _same(serial, parallel)


@fork
@cores
def test_without_trusted_keys_a_checkpoint_is_an_input_error_unless_a_break_comes_first(
    small_log: tuple[AuditSettings, list[bytes]],
) -> None:
    settings, lines = small_log
    for min_bytes in (SERIAL, 0):
        with pytest.raises(InputError, match="no trusted keys"):
            verify_log(settings.path, None, parallel_min_bytes=min_bytes)
    first_cp = next(i for i, x in enumerate(lines) if b'"action":"audit.checkpoint"' in x)
    assert first_cp >= 1
    settings.path.write_bytes(b"".join(lines[: first_cp - 1] + lines[first_cp:]))
    serial = verify_log(settings.path, None, parallel_min_bytes=SERIAL)
    parallel = verify_log(settings.path, None, parallel_min_bytes=0)
    assert serial.problem is not None and serial.problem.kind in {"deleted", "truncated"}
    _same(serial, parallel)


@fork
@cores
def test_rotated_segments_are_each_checked_by_workers(audit_env: AuditSettings) -> None:
    settings = write_config(audit_env, "rotate_bytes = 3000\ncheckpoint_every = 5\n")
    for i in range(40):
        record_event("jobs.submit", f"job:{i}")
    files = segments(settings.path)
    assert len(files) >= 5
    serial, parallel = _both(settings, every=5)
    assert serial.ok and parallel.parallel_files == len(files)
    _same(serial, parallel)
    middle = files[len(files) // 2]
    lines = middle.read_bytes().splitlines(keepends=True)
    lines[1], lines[2] = lines[2], lines[1]
    middle.write_bytes(b"".join(lines))
    serial, parallel = _both(settings, every=5)
    assert serial.problem is not None and serial.problem.kind == "reordered"
    assert (serial.problem.file, serial.problem.line) == (middle, 2)
    _same(serial, parallel)


@fork
@cores
def test_key_epochs_carry_across_segments(audit_env: AuditSettings, tmp_path: Path) -> None:
    """A checkpoint of the new key in one segment, then one of the stolen old key in the
    next (FSS CVE-2023-31439, across files): key-epoch, serial and with workers."""
    settings = write_config(audit_env, "rotate_bytes = 3000\ncheckpoint_every = 5\n")
    for i in range(30):
        record_event("jobs.submit", f"job:{i}")
    files = segments(settings.path)
    per_file = [f.read_bytes().splitlines(keepends=True) for f in files]
    lines = [x for f in per_file for x in f]
    owner = [k for k, f in enumerate(per_file) for _ in f]
    cps = [i for i, x in enumerate(lines) if b'"action":"audit.checkpoint"' in x]
    first, second = cps[0], cps[1]
    assert owner[first] < owner[second]
    old = FileKeyProvider(settings.key)
    shutil.copy(settings.key, tmp_path / "stolen.key")
    new = old.rotate()
    add_trusted_key(settings.trusted_keys, new.public_key, new.epoch)
    stolen = FileKeyProvider(tmp_path / "stolen.key")
    forged = list(lines)
    forged[first] = _sealed(resign(parse_line(lines[first]), new))
    forged = reseal(forged, first)
    head = parse_line(forged[second - 1]).hash
    forged[second] = _sealed(resign(parse_line(forged[second]), stolen, head=head))
    forged = reseal(forged, second, settings.path)
    for k, f in enumerate(files):
        f.write_bytes(b"".join(x for x, o in zip(forged, owner, strict=True) if o == k))
    serial, parallel = _both(settings, every=5)
    assert serial.problem is not None and serial.problem.kind == "key-epoch"
    assert serial.problem.file == files[owner[second]]
    _same(serial, parallel)


def _sealed(event: AuditEvent) -> bytes:
    return seal(event, event.prev_hash or "", event.sequence or 0)[1]


@fork
@cores
def test_the_threshold_comes_from_the_environment_for_tests(
    small_log: tuple[AuditSettings, list[bytes]], monkeypatch: pytest.MonkeyPatch
) -> None:
    settings, _ = small_log
    trust = load_trusted_keys(settings.trusted_keys)
    monkeypatch.delenv(MIN_BYTES_ENV, raising=False)
    assert verify_log(settings.path, trust).parallel_files == 0  # small: below the default
    monkeypatch.setenv(MIN_BYTES_ENV, "0")
    assert verify_log(settings.path, trust).parallel_files == 1
    monkeypatch.setenv(MIN_BYTES_ENV, str(SERIAL))
    assert verify_log(settings.path, trust).parallel_files == 0


@pytest.fixture(scope="module")
def big_chain(tmp_path_factory: pytest.TempPathFactory) -> bytes:
    """A chain of 4,000 real-shaped events (about 2 MB: several runs of RUN_BYTES per span)."""
    with pytest.MonkeyPatch.context() as mp:
        base = tmp_path_factory.mktemp("chain")
        mp.setenv("DOLMEN_STATE_DIR", str(base / "state"))
        mp.setenv("DOLMEN_CONFIG_DIR", str(base / "etc"))
        record_event("tune.apply", "x")
        template = parse_line((base / "state" / "audit" / "audit.log").read_bytes())
    out, prev = [], GENESIS
    for i in range(4000):
        event = dataclasses.replace(
            template, target=f"sysctl:{i}", details={"i": i, "pad": "p" * 400}
        )
        sealed, line = seal(event, prev, i + 1)
        prev = sealed.hash or ""
        out.append(line)
    data = b"".join(out)
    assert len(data) > 8 * RUN_BYTES
    return data


def _oracle(data: bytes) -> bool:
    """The serial pass as it was before runs and workers: one ``lines_intact`` over the file."""
    lines = data.split(b"\n")
    return lines.pop() == b"" and lines_intact(lines, GENESIS.encode())


def _boundaries(data: bytes) -> dict[int, set[int]]:
    """Every offset where a run or a span starts, with the worker counts it is a boundary
    for (0: the serial pass)."""
    found: dict[int, set[int]] = {}
    for s, _ in cut(data, 0, len(data), RUN_BYTES):
        found.setdefault(s, set()).add(0)
    for n in (2, 3, 4):
        size = -(-len(data) // (n * SPANS_PER_WORKER))
        for s, e in cut(data, 0, len(data), size):
            for r, _ in cut(data, s, e, RUN_BYTES):
                found.setdefault(r, set()).add(n)
    found.pop(0)
    return found


def _answers(data: bytes, workers: set[int] = WORKERS) -> list[FastCheck]:
    """The serial answer, then those of ``workers`` processes."""
    serial = check_file(data, GENESIS, min_bytes=SERIAL)
    return [serial] + [check_file(data, GENESIS, min_bytes=0, workers=n) for n in sorted(workers)]


@fork
def test_intact_chain_same_count_and_head_with_any_number_of_workers(big_chain: bytes) -> None:
    serial, *parallel = _answers(big_chain)
    assert serial == FastCheck(
        True, 4000, big_chain[-1 + HASH_AT.start : -1 + HASH_AT.stop].decode()
    )
    assert [dataclasses.replace(p, workers=0) for p in parallel] == [serial] * 3
    assert [p.workers for p in parallel] == [2, 3, 4]


@fork
def test_every_boundary_broken_three_ways_is_found_by_every_path(big_chain: bytes) -> None:
    """At each start of a run or span: the line before rewritten with a fresh hash (only the
    link betrays it), a byte of the line before changed (its own hash betrays it, in the
    worker of the span before), and a byte of the link itself changed."""
    lines = big_chain.splitlines(keepends=True)
    starts = {sum(map(len, lines[:i])): i for i in range(len(lines))}
    boundaries = _boundaries(big_chain)
    assert len(boundaries) > 20
    for b, workers in boundaries.items():
        i = starts[b]  # the first line after the boundary
        before = parse_line(lines[i - 1])
        forged = dataclasses.replace(before, target="forged")
        body = bytearray(lines[i - 1])
        body[200] ^= 1
        link = bytearray(lines[i])
        link[PREV_AT.start + 5] ^= 4
        for at, line in (
            (i - 1, seal(forged, before.prev_hash or "", i)[1]),
            (i - 1, bytes(body)),
            (i, bytes(link)),
        ):
            data = b"".join([*lines[:at], line, *lines[at + 1 :]])
            assert not _oracle(data), (b, at)
            assert not any(a.intact for a in _answers(data, workers - {0})), (b, at)


def test_cut_tiles_whole_lines(big_chain: bytes) -> None:
    for size in (1, 500, RUN_BYTES, len(big_chain) // 7, len(big_chain) * 2):
        runs = list(cut(big_chain, 0, len(big_chain), size))
        assert runs[0][0] == 0 and runs[-1][1] == len(big_chain)
        assert all(e1 == s2 for (_, e1), (s2, _) in itertools.pairwise(runs))
        assert all(big_chain[e - 1 : e] == b"\n" for _, e in runs)
        assert all(e - s >= size for s, e in runs[:-1])


def test_one_worker_or_a_small_file_is_checked_in_this_process(big_chain: bytes) -> None:
    assert check_file(big_chain, GENESIS, min_bytes=0, workers=1).workers == 0
    assert check_file(big_chain, GENESIS, min_bytes=len(big_chain) + 1, workers=4).workers == 0
    assert check_file(b"", GENESIS, min_bytes=0, workers=4) == FastCheck(True, 0, GENESIS)
    torn = big_chain[:-1]
    assert check_file(torn, GENESIS, min_bytes=0, workers=4) == FastCheck(False)
    assert check_file(big_chain, "1" * 64, min_bytes=0, workers=4) == FastCheck(False)


HOLD = """
import sys, time
from pathlib import Path
from dolmen.audit.fastpath import FileCheck
check = FileCheck(Path(sys.argv[1]).read_bytes(), "0" * 64, min_bytes=0, workers=2)
assert check.in_workers
print("ready", flush=True)
time.sleep(60)
"""


@fork
def test_workers_exit_when_the_verifier_is_killed(big_chain: bytes, tmp_path: Path) -> None:
    """A verifier killed by SIGKILL (or SIGTERM) cannot stop its workers: they must see it
    go and exit on their own, not wait for work forever holding the file."""
    (tmp_path / "chain").write_bytes(big_chain)
    (tmp_path / "hold.py").write_text(HOLD)
    argv = [sys.executable, str(tmp_path / "hold.py"), str(tmp_path / "chain")]
    proc = subprocess.Popen(argv, stdout=subprocess.PIPE, text=True)
    children: list[int] = []
    try:
        assert proc.stdout is not None and proc.stdout.readline().strip() == "ready"
        found = Path(f"/proc/{proc.pid}/task/{proc.pid}/children").read_text().split()
        children = [int(c) for c in found]
        assert len(children) == 2 and all(map(_running, children))
        proc.kill()
        proc.wait()
        deadline = time.monotonic() + 10
        while any(map(_running, children)) and time.monotonic() < deadline:
            time.sleep(0.05)
        assert not any(map(_running, children))
    finally:
        proc.kill()
        proc.wait()
        for pid in filter(_running, children):  # a failed test leaves no orphans behind
            os.kill(pid, signal.SIGKILL)


def _running(pid: int) -> bool:
    """Whether ``pid`` is alive and not a zombie waiting to be reaped."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return False
    return stat.rsplit(")", 1)[1].split()[0] != "Z"

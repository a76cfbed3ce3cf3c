"""``dolmen audit verify``: walk the whole chain, every segment, every checkpoint.

What is checked, in log order (journald FSS's CVE-2023-31439 lesson: entries are
not checked one by one but as one ordered whole):

- each event's hash over its own bytes, and its prev_hash against the event before,
  across rotated segments; sequences start at 1 (or at a trusted checkpoint);
- each checkpoint's signature against the trust store (Rekor's lesson: a checkpoint
  signed by a key nobody pinned proves nothing), its (sequence, head) against the
  chain, and its key epoch: the one pinned for that key, never lower than an
  earlier checkpoint's;
- the end: no torn line, no fewer events than the head record says were committed,
  and no more than ``checkpoint_every`` (+1) events after the last checkpoint.

The fast path (fastpath.py) checks a whole file with a handful of C-level passes:
hashes over the fixed-frame prefix of every line (event.py), the fixed bytes of
every line's tail, and the prev_hash links as one byte comparison; a large file is
split into runs of lines that worker processes check on the machine's other cores.
Only a file that fails it is parsed line by line (classify.py) to name the first
broken link.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

from dolmen.audit.checkpoint import check_checkpoint
from dolmen.audit.classify import Break, find_break
from dolmen.audit.event import CHECKPOINT_ACTION, GENESIS, AuditEvent, LineError, parse_line
from dolmen.audit.fastpath import FileCheck
from dolmen.audit.segments import read_head, segments
from dolmen.errors import InputError
from dolmen.keys.trust import TrustStore

CP_MARK = b'"dataset":"dolmen.audit","action":"' + CHECKPOINT_ACTION.encode() + b'"'


@dataclass
class VerifyReport:
    """The outcome of a verification: ``problem`` is None when the log is intact."""

    files: list[Path] = field(default_factory=list)
    events: int = 0
    first_sequence: int | None = None
    last_sequence: int = 0
    last_hash: str = GENESIS
    checkpoints: int = 0
    last_checkpoint: int | None = None  # the sequence the last good checkpoint covers
    problem: Break | None = None
    last_line: int = 0  # line number of the last event in the last file
    notes: list[str] = field(default_factory=list)
    parallel_files: int = 0  # files whose chain worker processes checked (fastpath.py)

    @property
    def ok(self) -> bool:
        """Whether the log is intact."""
        return self.problem is None


def verify_log(
    log: Path,
    trust: TrustStore | None,
    *,
    from_checkpoint: bool = False,
    checkpoint_every: int = 0,
    trust_source: str = "the trusted keys",
    parallel_min_bytes: int | None = None,
) -> VerifyReport:
    """Verify the log at ``log`` (all its segments). ``trust`` None means no trust store:
    any checkpoint met then raises InputError (cannot decide without trusted keys).

    Files of ``parallel_min_bytes`` or more have their chain checked by worker processes
    when the machine has several cores (default: fastpath.PARALLEL_MIN_BYTES; tests and
    benchmarks pass 0 to force it, or a size above any file to keep it serial); the
    result is the same either way."""
    files = segments(log)
    report = VerifyReport(files=files)
    if not files:
        raise InputError("no audit log here", path=str(log), hint="check [audit] path")
    state = _State(expected=1, last_hash=GENESIS, epoch=0)
    start_file, start_line = 0, 0
    if from_checkpoint:
        found = _latest_checkpoint(files)
        if found is None:
            report.notes.append("no checkpoint found: verified from the first event")
        else:
            fi, li, cp = found
            data = _read(files[fi])
            offset = _offset_of_line(data, li)
            problem = _check_cp(cp, files[fi], data, offset, 0, trust, 0, trust_source)
            if problem is not None:
                report.problem = problem
                return report
            assert cp.sequence is not None and cp.hash is not None
            state = _State(cp.sequence + 1, cp.hash, int((cp.checkpoint or {})["epoch"]))
            report.checkpoints, report.last_checkpoint = 1, cp.sequence - 1
            start_file, start_line = fi, li + 1
            report.notes.append(f"started from the checkpoint at event {cp.sequence}")
    head = read_head(log)
    for fi in range(start_file, len(files)):
        path = files[fi]
        data = _read(path)
        skip = start_line if fi == start_file else 0
        if skip:
            data = data[_offset_of_line(data, skip) :]
        committed = head.sequence if head is not None and fi == len(files) - 1 else None
        problem = _verify_file(
            path, data, skip, state, report, trust, trust_source, committed, parallel_min_bytes
        )
        if problem is not None:
            report.problem = problem
            return report
    report.last_sequence, report.last_hash = state.expected - 1, state.last_hash
    report.problem = _check_end(log, files[-1], report, checkpoint_every)
    return report


@dataclass
class _State:
    expected: int
    last_hash: str
    epoch: int


def _verify_file(
    path: Path,
    data: bytes,
    skip: int,
    state: _State,
    report: VerifyReport,
    trust: TrustStore | None,
    trust_source: str,
    committed: int | None,
    parallel_min_bytes: int | None,
) -> Break | None:
    ahead: _Checkpoints | InputError | None = None
    with FileCheck(data, state.last_hash, min_bytes=parallel_min_bytes) as check:
        if check.in_workers:
            # While worker processes hash the chain, check the checkpoints as if it were
            # intact: the answer is used only if it is (a break limits them to before it).
            ahead = _try_checkpoints(data, path, skip, None, trust, state.epoch, trust_source)
        fast = check.result()
    chain_break: Break | None = None
    if fast.intact:
        good, expected, last_hash = fast.lines, state.expected + fast.lines, fast.last_hash
        report.parallel_files += 1 if fast.workers else 0
    else:
        ahead = None
        lines = data.split(b"\n")
        tail = lines.pop()
        chain_break, expected, last_hash = find_break(
            lines,
            tail,
            file=path,
            first_line=skip + 1,
            expected=state.expected,
            last_hash=state.last_hash,
            committed=committed,
        )
        good = (chain_break.line - skip - 1) if chain_break else len(lines)
    if good and report.first_sequence is None:
        report.first_sequence = state.expected
    if ahead is None:
        limit = good if chain_break is not None else None
        ahead = _try_checkpoints(data, path, skip, limit, trust, state.epoch, trust_source)
    if isinstance(ahead, InputError):
        raise ahead
    if ahead.count:
        state.epoch = ahead.epoch
        report.checkpoints += ahead.count
        report.last_checkpoint = ahead.last_covered
    if ahead.problem is not None:
        return ahead.problem
    report.events += good
    if chain_break is not None:
        return chain_break
    report.last_line = skip + good
    state.expected, state.last_hash = expected, last_hash
    return None


@dataclass(frozen=True)
class _Checkpoints:
    """What the checkpoints of one file showed: the first problem (if any), and how many
    were good before it, the epoch and the sequence the last good one covers."""

    problem: Break | None
    count: int
    epoch: int
    last_covered: int | None


def _try_checkpoints(
    data: bytes,
    path: Path,
    skip: int,
    limit: int | None,
    trust: TrustStore | None,
    epoch: int,
    trust_source: str,
) -> _Checkpoints | InputError:
    """The checkpoints among the first ``limit`` lines (all when None), checked in order
    from ``epoch``; the InputError of a checkpoint met without trusted keys is returned,
    to be raised only if this answer is used."""
    count = 0
    last_covered: int | None = None
    for offset, line in _checkpoint_lines(data, limit):
        try:
            event = parse_line(line)
        except LineError as e:
            line_no = skip + _line_index(data, offset) + 1
            bad = Break("modified", path, line_no, None, f"checkpoint line: {e}")
            return _Checkpoints(bad, count, epoch, last_covered)
        try:
            problem = _check_cp(event, path, data, offset, skip, trust, epoch, trust_source)
        except InputError as e:
            return e
        if problem is not None:
            return _Checkpoints(problem, count, epoch, last_covered)
        epoch = int((event.checkpoint or {})["epoch"])
        count += 1
        last_covered = (event.sequence or 1) - 1
    return _Checkpoints(None, count, epoch, last_covered)


def _checkpoint_lines(data: bytes, limit: int | None = None) -> Iterator[tuple[int, bytes]]:
    """(line index, line) of each checkpoint event (among the first ``limit`` lines).

    Line numbers are counted only when asked for (``limit`` given) or needed for a report;
    otherwise the index is -1 and ``_line_index`` finds it."""
    end_limit = len(data) if limit is None else _offset_of_line(data, limit)
    pos = data.find(CP_MARK)
    while 0 <= pos < end_limit:
        start = data.rfind(b"\n", 0, pos) + 1
        end = data.find(b"\n", pos)
        end = end if end >= 0 else len(data)
        yield start, data[start:end]
        pos = data.find(CP_MARK, end)


def _line_index(data: bytes, offset: int) -> int:
    return data.count(b"\n", 0, offset)


def _check_cp(
    event: AuditEvent,
    path: Path,
    data: bytes,
    offset: int,
    skip: int,
    trust: TrustStore | None,
    last_epoch: int,
    trust_source: str,
) -> Break | None:
    assert event.sequence is not None and event.prev_hash is not None
    if trust is None:
        raise InputError(
            f"no trusted keys: cannot check the checkpoint at event {event.sequence}",
            path=trust_source,
            hint="pass --trusted-keys FILE (a copy kept off this host), or set [audit] "
            "trusted_keys; `dolmen audit key` prints this host's trust line",
        )
    problem = check_checkpoint(event, event.sequence - 1, event.prev_hash, trust, last_epoch)
    if problem is None:
        return None
    line = skip + _line_index(data, offset) + 1
    return Break(problem.kind, path, line, event.sequence, problem.message)


def _check_end(
    log: Path, last_file: Path, report: VerifyReport, checkpoint_every: int
) -> Break | None:
    head = read_head(log)
    line = report.last_line
    if head is not None and head.sequence > report.last_sequence:
        return Break(
            "truncated",
            last_file,
            line,
            report.last_sequence,
            f"the log ends at event {report.last_sequence}, but event {head.sequence} "
            "was committed (head record): events were cut off the end",
        )
    if head is not None and head.sequence == report.last_sequence and head.hash != report.last_hash:
        return Break(
            "modified",
            last_file,
            line,
            report.last_sequence,
            "the last event differs from the one the writer committed (head record)",
        )
    covered = report.last_checkpoint or 0
    unsigned = report.last_sequence - covered
    if checkpoint_every and unsigned > checkpoint_every + 1:
        return Break(
            "missing-signature",
            last_file,
            line,
            covered + 1,
            f"events {covered + 1} to {report.last_sequence} are covered by no checkpoint, "
            f"though one is made every {checkpoint_every} events",
        )
    if unsigned:
        report.notes.append(
            f"{unsigned} event(s) after the last checkpoint are protected by the hash chain "
            "only (run `dolmen audit checkpoint` to sign them)"
        )
    return None


def _latest_checkpoint(files: list[Path]) -> tuple[int, int, AuditEvent] | None:
    for fi in range(len(files) - 1, -1, -1):
        data = _read(files[fi])
        found = list(_checkpoint_lines(data))
        for offset, line in reversed(found):
            try:
                return fi, _line_index(data, offset), parse_line(line)
            except LineError:
                continue
    return None


def _offset_of_line(data: bytes, n: int) -> int:
    rest = data.split(b"\n", n)
    return len(data) - len(rest[-1]) if len(rest) > n else len(data)


def _read(path: Path) -> bytes:
    try:
        return path.read_bytes()
    except OSError as e:
        raise InputError(f"cannot read the audit log: {e.strerror}", path=str(path)) from e

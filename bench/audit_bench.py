"""Audit log figures, each against the limit measured in the same run (not a test).

    .venv/bin/python bench/audit_bench.py [--dir DIR] [--events N]

- durable appends, one fsync per event (record_event), as a ratio to the raw
  fdatasync rate of the same file system (a 550-byte append + fdatasync loop);
- group commit (record_events, one lock and one fsync per batch), events/s;
- verification (verify_log, chain + checkpoint signatures) as a ratio to bare
  SHA-256 over the same bytes: one stream over the whole file, and one hash per
  event (the least any per-event hash chain must do). Both read the file first.

DIR defaults to a fresh folder under /var/tmp (a disk, not a tmpfs); pass --dir
to measure another file system.
"""

from __future__ import annotations

import argparse
import hashlib
import operator
import os
import shutil
import tempfile
import time
from pathlib import Path

from dolmen.audit import EventRequest, record_event, record_events
from dolmen.audit.segments import segments
from dolmen.audit.settings import AuditSettings
from dolmen.audit.verify import verify_log
from dolmen.keys.trust import load_trusted_keys

DETAILS = {"profile": "hpc-throughput", "setting": "vm.swappiness", "from": 60, "to": 10}


def raw_fsync_seconds(path: Path, n: int) -> float:
    """Seconds for ``n`` 550-byte appends, each followed by fdatasync(), to ``path``."""
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o600)
    record = b"x" * 549 + b"\n"
    try:
        t0 = time.perf_counter()
        for _ in range(n):
            os.write(fd, record)
            os.fdatasync(fd)
        return time.perf_counter() - t0
    finally:
        os.close(fd)


def settings_in(folder: Path, name: str) -> AuditSettings:
    """Settings for a fresh log in ``folder`` (checkpoints every 1000 events, the default)."""
    base = folder / name
    os.environ["DOLMEN_STATE_DIR"] = str(base / "state")
    os.environ["DOLMEN_CONFIG_DIR"] = str(base / "etc")
    return AuditSettings(
        path=base / "state" / "audit" / "audit.log",
        key=base / "state" / "audit" / "keys" / "audit.key",
        trusted_keys=base / "etc" / "audit-trusted-keys",
    )


def per_event(folder: Path, n: int, rounds: int = 6) -> tuple[float, float]:
    """(raw fdatasync/s, record_event/s), measured in alternating rounds so both see the
    same disk (a shared disk's fsync rate drifts by several times within a minute)."""
    settings_in(folder, "per-event")
    probe = folder / "fsync-probe"
    record_event("tune.apply", "warm-up", details=DETAILS)
    raw_fsync_seconds(probe, 10)
    raw = ours = 0.0
    per_round = max(n // rounds, 1)
    for r in range(rounds):
        raw += raw_fsync_seconds(probe, per_round)
        t0 = time.perf_counter()
        for i in range(per_round):
            record_event("tune.apply", f"sysctl:{r}:{i}", details=DETAILS)
        ours += time.perf_counter() - t0
    total = per_round * rounds
    return total / raw, total / ours


def group_commit(folder: Path, batches: int, size: int) -> float:
    settings = settings_in(folder, "group")
    record_events([EventRequest("tune.apply", "warm-up")], settings=settings)
    reqs = [EventRequest("jobs.gpu_allocate", f"gpu:{i % 8}", details=DETAILS) for i in range(size)]
    t0 = time.perf_counter()
    for _ in range(batches):
        record_events(reqs, settings=settings)
    return batches * size / (time.perf_counter() - t0)


def verification(folder: Path, events: int) -> tuple[float, float, float, int]:
    """(verify s, single-stream SHA-256 s, per-event SHA-256 s, bytes), best of 3 each.
    The baselines read and hash every segment of the log, as verify does."""
    settings = settings_in(folder, "verify")
    reqs = [EventRequest("tune.apply", f"sysctl:{i}", details=DETAILS) for i in range(1000)]
    for _ in range(events // 1000):
        record_events(reqs, settings=settings)
    trust = load_trusted_keys(settings.trusted_keys)
    files = segments(settings.path)
    size = sum(f.stat().st_size for f in files)

    def verify() -> None:
        report = verify_log(settings.path, trust, checkpoint_every=1000)
        assert report.ok and report.checkpoints >= events // 1001, report.problem
        assert report.last_sequence >= events

    def stream() -> None:
        h = hashlib.sha256()
        for f in files:
            h.update(f.read_bytes())
        h.digest()

    digest = operator.methodcaller("digest")

    def per_line() -> None:
        for f in files:
            lines = f.read_bytes().split(b"\n")
            b"".join(map(digest, map(hashlib.sha256, lines)))

    return best(verify), best(stream), best(per_line), size


def best(fn: object, runs: int = 3) -> float:
    assert callable(fn)
    times = []
    for _ in range(runs):
        t0 = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t0)
    return min(times)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--dir", type=Path, default=None, help="Folder on the disk to measure.")
    ap.add_argument("--events", type=int, default=200_000, help="Events in the verified log.")
    ap.add_argument("--fsyncs", type=int, default=600, help="Appends for the fsync figures.")
    args = ap.parse_args()
    folder = Path(tempfile.mkdtemp(prefix="dolmen-audit-bench-", dir=args.dir or "/var/tmp"))
    try:
        fsync_rate, durable = per_event(folder, args.fsyncs)
        grouped = group_commit(folder, 20, 1000)
        v, s1, s2, size = verification(folder, args.events)
    finally:
        shutil.rmtree(folder, ignore_errors=True)
    mb = size / 1e6
    print(f"raw fdatasync rate          {fsync_rate:10.0f} /s   (550-byte appends in {folder})")
    print(
        f"durable appends, fsync each {durable:10.0f} ev/s  "
        f"= {durable / fsync_rate:.2f}x the raw fsync rate"
    )
    print(
        f"group commit (1000/batch)   {grouped:10.0f} ev/s  "
        f"= {grouped / fsync_rate:.0f}x the raw fsync rate  (target >= 20000 ev/s)"
    )
    print(
        f"verify {args.events} events   {mb / v:10.0f} MB/s  ({mb:.0f} MB in {v:.2f} s, "
        f"{args.events / v:,.0f} ev/s)"
    )
    print(f"  vs SHA-256, one stream    {mb / s1:10.0f} MB/s  ratio {s1 / v:.2f}  (target >= 0.5)")
    print(f"  vs SHA-256, one per event {mb / s2:10.0f} MB/s  ratio {s2 / v:.2f}")
    print(f"  (one SHA-256 per event alone runs at {s1 / s2:.2f}x one stream: the ceiling)")


if __name__ == "__main__":
    main()

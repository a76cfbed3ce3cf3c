"""Properties of issue 9 (tune): random signals at random times during apply and rollback, and
random damage to journals.

1. SIGKILL, SIGINT or SIGTERM at a random moment of an apply (a forked child applying
   in-process; the parent signals it after a random delay drawn over an apply's length),
   of a rollback, and of an apply that is then completed and rolled back: afterwards the
   whole-tree fingerprint (types, modes, bytes: ``trees.snapshot``) equals the pristine
   one, so no folder, file or temporary is left; a completed apply equals a clean one.
   SIGINT/SIGTERM must leave no interrupted journal: the apply rolled back on the spot,
   or the signal came too late and the profile is active.
2. A flipped byte, a deleted line, a duplicated line or a torn last line at a random place
   of real journals: the journal is refused, or it reads exactly as before (a flip that
   changes nothing, such as a space for a tab), or, for a deleted or torn LAST line only,
   as the journal the crash just before that line would have left.

Each test prints its trial counts (``-s``); ``DOLMEN_FAULT_TRIALS`` scales them.
"""

from __future__ import annotations

import contextlib
import os
import random
import signal
import time
from collections import Counter
from collections.abc import Callable
from functools import partial
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from dolmen.errors import InputError
from dolmen.host.tree import TreeHost
from dolmen.tune.engine import apply_plan, complete, rollback
from dolmen.tune.journal import journals, open_journal, tune_dir
from dolmen.tune.journal_lines import decode
from dolmen.tune.journal_view import JournalView, State
from dolmen.tune.planner import plan_profile
from dolmen.tune.profile import load_profile
from tests import forking
from tests.tune.test_crash import CRASHY
from tests.tune.trees import copy_tree, snapshot

SCALE = float(os.environ.get("DOLMEN_FAULT_TRIALS", "1"))
SIGNALS = (signal.SIGKILL, signal.SIGINT, signal.SIGTERM)


@pytest.fixture
def config(dolmen_dirs: Path) -> Path:
    (dolmen_dirs / "profiles" / "crashy.toml").write_text(CRASHY)
    return dolmen_dirs


def _signalled(work: Callable[[], object], sig: int, delay: float) -> None:
    """Run ``work`` in a forked child and send it ``sig`` after ``delay`` seconds."""
    pid = forking.fork(work)
    time.sleep(delay)
    with contextlib.suppress(ProcessLookupError):
        os.kill(pid, sig)
    forking.reap(pid)


def _duration(pristine: Path, base: Path) -> float:
    tree = copy_tree(pristine, base / "timing")
    host = TreeHost(tree)
    t0 = time.monotonic()
    apply_plan(host, plan_profile(host, load_profile("crashy")), tune_dir(host))
    t = time.monotonic() - t0
    rollback(host, open_journal(tune_dir(host)), tune_dir(host), reason="t")  # type: ignore[arg-type]
    return t


def test_random_signals_during_apply_rollback_and_complete(
    config: Path, pristine_host: Path, tmp_path: Path
) -> None:
    rng = random.Random(9)
    before = snapshot(pristine_host)
    span = _duration(pristine_host, tmp_path) * 1.2
    clean_tree = copy_tree(pristine_host, tmp_path / "clean")
    clean_host = TreeHost(clean_tree)
    apply_plan(clean_host, plan_profile(clean_host, load_profile("crashy")), tune_dir(clean_host))
    applied = snapshot(clean_tree)
    seen: Counter[str] = Counter()
    problems: list[str] = []
    n = int(30 * SCALE)
    for trial in range(3 * n):
        phase = ("apply", "rollback", "complete")[trial % 3]
        sig = SIGNALS[(trial // 3) % len(SIGNALS)] if phase != "complete" else signal.SIGKILL
        tree = copy_tree(pristine_host, tmp_path / f"t{trial}")
        host = TreeHost(tree)
        folder = tune_dir(host)
        plan = plan_profile(host, load_profile("crashy"))
        delay = rng.uniform(0, span)
        tag = f"{phase} {signal.Signals(sig).name} at {delay * 1000:.1f} ms"
        try:
            if phase == "rollback":
                apply_plan(host, plan, folder)
                view = open_journal(folder)
                assert view is not None
                _signalled(partial(rollback, host, view, folder, reason="t"), sig, delay)
            else:
                _signalled(partial(apply_plan, host, plan, folder), sig, delay)
            view = open_journal(folder)
            state = view.state.value if view is not None else "none"
            seen[f"{phase} {signal.Signals(sig).name} -> {state}"] += 1
            if sig != signal.SIGKILL and state in ("applying", "rolling-back"):
                problems.append(f"{tag}: left an interrupted journal instead of rolling back")
            if phase == "complete" and view is not None and view.state is State.APPLYING:
                assert complete(host, view, folder).ok
                if snapshot(tree) != applied:
                    problems.append(f"{tag}: completed tree differs from a clean apply")
                view = open_journal(folder)
            if view is not None:
                res = rollback(host, view, folder, reason="test")
                if not res.complete:
                    problems.append(f"{tag}: rollback incomplete: {res.not_back}")
            if snapshot(tree) != before:
                extra = sorted(set(snapshot(tree)) ^ set(before))[:3]
                problems.append(f"{tag}: tree differs after rollback {extra}")
        except (InputError, AssertionError) as e:
            problems.append(f"{tag}: {e}")
    print(f"\nrandom signals: {3 * n} trials, {3 * n - len(problems)} survived; {dict(seen)}")
    assert not problems, "\n".join(problems[:10])


# --- journal damage ----------------------------------------------------------------------------
def _journals(pristine: Path, base: Path) -> list[Path]:
    """Real journals: committed; killed-free rolled back; a failed apply rolled back."""
    out = []
    for k in range(2):
        tree = copy_tree(pristine, base / f"j{k}")
        host = TreeHost(tree)
        folder = tune_dir(host)
        apply_plan(host, plan_profile(host, load_profile("crashy")), folder)
        if k == 1:
            rollback(host, open_journal(folder), folder, reason="t")  # type: ignore[arg-type]
        out.extend(journals(folder))
    return out


def test_random_journal_damage_is_refused_never_skipped(
    config: Path, pristine_host: Path, tmp_path: Path
) -> None:
    sources = _journals(pristine_host, tmp_path)
    originals = [decode(p).records for p in sources]
    work = tmp_path / "damaged.jsonl"
    seen: Counter[str] = Counter()
    survivors: list[str] = []

    @settings(
        max_examples=int(300 * SCALE),
        deadline=None,
        suppress_health_check=[HealthCheck.too_slow],
        database=None,
    )
    @given(
        which=st.integers(0, len(sources) - 1),
        kind=st.sampled_from(["flip", "delete", "duplicate", "torn"]),
        where=st.floats(0, 1, exclude_max=True),
        other=st.floats(0, 1, exclude_max=True),
        xor=st.integers(1, 255),
    )
    def trial(which: int, kind: str, where: float, other: float, xor: int) -> None:
        data = sources[which].read_bytes()
        rows = data.splitlines(keepends=True)
        want = originals[which]
        last = len(rows) - 1
        if kind == "flip":
            pos = int(where * len(data))
            data = data[:pos] + bytes([data[pos] ^ xor]) + data[pos + 1 :]
            fine = [want]
        elif kind == "delete":
            i = int(where * len(rows))
            data = b"".join(rows[:i] + rows[i + 1 :])
            fine = [want[:-1]] if i == last else []  # as if killed before writing it
        elif kind == "duplicate":
            i, j = int(where * len(rows)), int(other * (len(rows) + 1))
            data = b"".join([*rows[:j], rows[i], *rows[j:]])
            fine = []
        else:
            cut = 1 + int(where * (len(rows[last]) - 2))  # inside the last line
            data = b"".join(rows[:last]) + rows[last][:cut]
            fine = [want[:-1]]
        work.write_bytes(data)
        try:
            got = decode(work).records
            JournalView.from_records(work, got)
        except InputError:
            seen[f"{kind} refused"] += 1
            if kind == "torn":
                survivors.append(f"torn last line refused ({where})")
            return
        if got in fine:
            seen[f"{kind} read as {'the same' if got == want else 'the prefix'}"] += 1
        else:
            survivors.append(f"{kind} at {where:.3f} (xor {xor}) read differently")

    trial()
    total = sum(seen.values()) + len(survivors)
    print(f"\njournal damage: {total} trials, {len(survivors)} misread; {dict(seen)}")
    assert not survivors, "\n".join(survivors[:10])

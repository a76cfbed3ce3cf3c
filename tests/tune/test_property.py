"""Property: for any valid profile and any kill point, the next run restores the byte-exact
tree (rollback) or reaches exactly what an uninterrupted apply gives (complete).

Each example forks a real child that applies in-process and is SIGKILLed by the test-only
hook at the drawn point (``DOLMEN_TUNE_CRASH_AT``); forking keeps a hundred kills fast.
"""

from __future__ import annotations

import itertools
import os
import signal
from collections.abc import Callable
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from dolmen.host.tree import TreeHost
from dolmen.tune.crash import ENV
from dolmen.tune.engine import apply_plan, complete, rollback
from dolmen.tune.journal import State, open_journal, tune_dir
from dolmen.tune.planner import plan_profile
from dolmen.tune.profile import load_profile
from tests import forking
from tests.tune.trees import copy_tree, snapshot

WHY = 'why = "property test"'
ENTRIES = {
    "sysctl": [
        st.integers(0, 200).map(lambda v: f'"vm.swappiness" = {v}'),
        st.integers(0, 100).map(lambda v: f'"vm.dirty_ratio" = {v}'),
        st.integers(65530, 1 << 20).map(lambda v: f'"vm.max_map_count" = {v}'),
        st.sampled_from([0, 1]).map(
            lambda v: f'"kernel.numa_balancing" = {{ value = {v}, {WHY} }}'
        ),
        st.tuples(st.integers(4096, 8192), st.integers(16384, 1 << 20)).map(
            lambda t: f'"net.ipv4.tcp_rmem" = "{t[0]} {t[1]} {t[1] * 4}"'
        ),
    ],
    "sysfs": [
        st.sampled_from(["always", "madvise", "never"]).map(
            lambda v: f'"kernel/mm/transparent_hugepage/enabled" = "{v}"'
        ),
        st.sampled_from(["always", "defer", "madvise", "never"]).map(
            lambda v: f'"kernel/mm/transparent_hugepage/defrag" = "{v}"'
        ),
    ],
    "cpu": [st.sampled_from(["performance", "powersave"]).map(lambda v: f'governor = "{v}"')],
    "hugepages": [st.integers(0, 64).map(lambda v: f'"2048kB" = {{ per_node = {v} }}')],
    "limits": [
        st.sampled_from(['memlock = "unlimited"', 'memlock = "64MiB"']),
        st.integers(1024, 1 << 20).map(lambda v: f"nofile = {v}"),
    ],
    "cmdline": [
        st.sampled_from(['iommu = "pt"', 'iommu = "on"']),
        st.sampled_from(["init_on_alloc = 0", "nosmt = true"]),
    ],
}
_names = itertools.count()


@st.composite
def profiles(draw: st.DrawFn) -> str:
    """The text of a random valid profile (1 to 6 entries, persisted or not)."""
    sections = draw(st.lists(st.sampled_from(sorted(ENTRIES)), min_size=1, max_size=4, unique=True))
    persist = "true" if draw(st.booleans()) else "false"
    body = [f"[profile]\npersist = {persist}\n"]
    for section in sections:
        options = ENTRIES[section]
        picked = draw(st.lists(st.sampled_from(range(len(options))), min_size=1, unique=True))
        body.append(f"[{section}]\n" + "".join(draw(options[i]) + "\n" for i in picked))
    return "".join(body)


def _in_child(point: str, work: Callable[[], object]) -> bool:
    """Run ``work`` in a forked child with the kill point set; True when it was SIGKILLed."""

    def child() -> None:
        os.environ[ENV] = point
        work()

    status = forking.reap(forking.fork(child))
    return os.WIFSIGNALED(status) and os.WTERMSIG(status) == signal.SIGKILL


@settings(
    max_examples=30,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(
    text=profiles(),
    where=st.floats(0, 1),
    choice=st.sampled_from(["rollback", "complete"]),
    again=st.none() | st.integers(0, 30),
)
def test_any_profile_any_kill_point(
    text: str,
    where: float,
    choice: str,
    again: int | None,
    pristine_host: Path,
    dolmen_dirs: Path,
    tmp_path_factory: pytest.TempPathFactory,
) -> None:
    name = f"prop{next(_names)}"
    (dolmen_dirs / "profiles" / f"{name}.toml").write_text(text)
    profile = load_profile(name)
    base = tmp_path_factory.mktemp(name)
    tree = copy_tree(pristine_host, base / "tree")
    host = TreeHost(tree)
    before = snapshot(tree)
    plan = plan_profile(host, profile)
    points = 2 * len(plan.steps) + 2
    point = min(int(where * points), points - 1)
    assert _in_child(str(point), lambda: apply_plan(host, plan, tune_dir(host)))
    view = open_journal(tune_dir(host))
    assert view is not None and view.state is State.APPLYING
    if choice == "rollback":
        if again is not None:  # the recovery itself is killed too, then run once more
            _in_child(f"rollback:{again}", lambda: rollback(host, view, tune_dir(host), reason="t"))
            view = open_journal(tune_dir(host))
        if view is not None:
            assert rollback(host, view, tune_dir(host), reason="test").complete
        assert snapshot(tree) == before
    else:
        clean = copy_tree(pristine_host, base / "clean")
        clean_host = TreeHost(clean)
        assert apply_plan(clean_host, plan_profile(clean_host, profile), tune_dir(clean_host)).ok
        assert complete(host, view, tune_dir(host)).ok
        assert snapshot(tree) == snapshot(clean)
    assert open_journal(tune_dir(host)) is None or choice == "complete"

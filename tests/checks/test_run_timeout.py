"""``--timeout`` as the runner applies it (checks/deadline.py): no check starts after the
deadline, the check it interrupted and what that check waited on are named by
``run.timeout``, and the verdict is undecided in the reason line schedulers read."""

from __future__ import annotations

import sys
import time
from collections.abc import Callable, Iterable
from pathlib import Path

import pytest

from dolmen.checks.context import Context
from dolmen.checks.deadline import RUN_TIMEOUT, CheckTimeout, time_limit
from dolmen.checks.model import CheckSpec, Level, Outcome, Status, passed, unknown
from dolmen.checks.runner import run_checks
from dolmen.checks.verdict import Health, Verdict
from dolmen.host.deadline import Deadline
from dolmen.host.live import LiveHost
from dolmen.host.tree import TreeHost
from dolmen.report.reason import one_line_reason
from tests.conftest import make_tree


def spec(check_id: str, fn: Callable[[Context], Iterable[Outcome]]) -> CheckSpec:
    return CheckSpec(
        id=check_id,
        title=check_id,
        level=Level.QUICK,
        needs=(),
        when=(),
        remedy="its own remedy",
        limits={},
        source="test",
        gating=True,
        fn=fn,
    )


def sleeps(seconds: float) -> Callable[[Context], Iterable[Outcome]]:
    def fn(ctx: Context) -> list[Outcome]:
        time.sleep(seconds)
        return [passed("host", "fine")]

    return fn


def verdict(findings: list) -> Verdict:  # type: ignore[type-arg]
    return Verdict(host="n1", level="quick", findings=tuple(findings), started="", duration_s=0)


def test_a_run_without_a_timeout_has_no_run_timeout(tmp_path: Path) -> None:
    host = TreeHost(make_tree(tmp_path / "t", files={"etc/hostname": "n1\n"}))
    found = run_checks(Context(host), [spec("a.one", sleeps(0))])
    assert [f.check for f in found] == ["a.one"]


def test_checks_after_the_deadline_are_not_run_and_named(tmp_path: Path) -> None:
    host = TreeHost(make_tree(tmp_path / "t", files={"etc/hostname": "n1\n"}))
    specs = [spec("a.one", sleeps(0.2)), spec("a.two", sleeps(5)), spec("a.three", sleeps(0))]
    t0 = time.monotonic()
    found = {f.check: f for f in run_checks(Context(host), specs, timeout=0.5)}
    assert time.monotonic() - t0 < 2
    assert found["a.one"].status is Status.PASS
    assert (
        found["a.two"].status is Status.UNKNOWN
        and "ran out in this check" in found["a.two"].summary
    )
    three = found["a.three"]
    assert three.status is Status.UNKNOWN and three.summary.startswith("not run: ")
    assert three.remedy == ""  # its remedy is for a signal nobody read
    late = found[RUN_TIMEOUT]
    assert late.status is Status.UNKNOWN and late.gating
    assert late.evidence["check"] == "a.two" and late.evidence["not_run"] == ["a.three"]
    assert host.deadline.seconds is None  # the host's own deadline is back after the run


def test_a_hung_command_is_what_the_run_waited_on(tmp_path: Path) -> None:
    hang = [sys.executable, "-c", "import time; time.sleep(3600)"]

    def runs(ctx: Context) -> list[Outcome]:
        res = ctx.host.run(hang, timeout=60)
        return [passed("host", "ran") if res.ok else unknown("host", res.failure())]

    specs = [spec("gpu.present", runs), spec("gpu.later", sleeps(0))]
    t0 = time.monotonic()
    found = run_checks(Context(LiveHost()), specs, timeout=1.0)
    assert time.monotonic() - t0 < 3
    first = found[0]
    assert first.status is Status.UNKNOWN and first.summary.startswith("timed out: ")
    v = verdict(found)
    assert v.health is Health.UNDECIDED and v.health.exit_code == 2
    line = one_line_reason(v, 200)
    assert line == (
        f"dolmen: undecided: timed out after 1 s on {' '.join(hang)} in gpu.present; 1 not run"
    )
    assert len(one_line_reason(v)) <= 80 and "timed out after 1 s" in one_line_reason(v)


def test_a_failure_found_before_the_timeout_still_leads(tmp_path: Path) -> None:
    from dolmen.checks.model import failed

    host = TreeHost(make_tree(tmp_path / "t", files={"etc/hostname": "n1\n"}))
    specs = [
        spec("gpu.xid", lambda ctx: [failed("host", "Xid 79")]),
        spec("gpu.slow", sleeps(5)),
    ]
    v = verdict(run_checks(Context(host), specs, timeout=0.3))
    assert v.health is Health.UNHEALTHY
    assert one_line_reason(v).startswith("dolmen: unhealthy: gpu.xid")


def test_a_checks_limit_counts_its_computation_not_its_commands() -> None:
    d = Deadline(None)
    with time_limit(0.3, d), d.waiting("nvidia-smi -q -x", call=True):
        time.sleep(0.6)  # a slow command: its own limit applies, not the check's
    with pytest.raises(CheckTimeout), time_limit(0.3, d):
        time.sleep(0.6)


def test_every_command_of_a_validate_run_has_a_bounded_timeout(tmp_path: Path) -> None:
    """Host.run has no unbounded form; this holds every caller in a standard run to a limit
    a health check can live with (the deadline clips them further)."""
    import math
    from collections.abc import Sequence

    from dolmen.checks.suite import validate
    from dolmen.host.command import CommandResult
    from tests.hosts import scenarios

    root = scenarios.build("h100-hgx-healthy", tmp_path / "tree")
    asked: dict[str, float] = {}

    class Counting(TreeHost):
        def run(
            self, argv: Sequence[str], *, timeout: float = 10.0, key: str | None = None
        ) -> CommandResult:
            asked[" ".join(argv)] = timeout
            return super().run(argv, timeout=timeout, key=key)

    validate(Counting(root), level=Level.STANDARD)
    assert any(a.startswith("nvidia-smi") for a in asked)
    assert all(math.isfinite(t) and 0 < t <= 60 for t in asked.values()), asked


@pytest.mark.slow
def test_the_backstop_ends_a_run_blocked_where_no_signal_reaches() -> None:
    """A read stuck in the kernel (signals blocked stand in for it: SIGALRM's handler never
    runs) is ended by the watchdog thread, after the reason line, with the exit code."""
    import subprocess

    code = (
        "import signal, time\n"
        "from dolmen.checks.deadline import backstop\n"
        "from dolmen.host.deadline import Deadline\n"
        "d = Deadline(0.5)\n"
        "backstop(lambda: d, 0.5, lambda line: print(line, flush=True), 2)\n"
        "with d.waiting('gpu.present'), d.waiting('proc/driver/nvidia/gpus/x/information'):\n"
        "    signal.pthread_sigmask(signal.SIG_BLOCK, [signal.SIGALRM])\n"
        "    time.sleep(30)\n"
    )
    src = str(Path(__file__).resolve().parents[2] / "src")
    t0 = time.monotonic()
    done = subprocess.run(
        [sys.executable, "-c", code],
        env={"PYTHONPATH": src, "PATH": "/usr/bin:/bin"},
        capture_output=True,
        text=True,
        timeout=20,
        check=False,
    )
    assert time.monotonic() - t0 < 8
    assert done.returncode == 2, done.stderr
    assert done.stdout.startswith(
        "dolmen: undecided: timed out after 0.5 s on gpu.present: "
        "proc/driver/nvidia/gpus/x/information (not interruptible"
    )

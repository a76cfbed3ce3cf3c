"""Run the registered checks against a context: failures are results (STYLE.md rule 11)."""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from contextlib import suppress
from typing import Any

from dolmen.checks import identity
from dolmen.checks.context import PREDICATES, Context
from dolmen.checks.deadline import CheckTimeout, RunTimeout, not_run, ran_out, timeout_finding
from dolmen.checks.deadline import time_limit as _time_limit
from dolmen.checks.model import CheckSpec, Finding, Level, Outcome, Status
from dolmen.checks.remedy import Site, fill, needs_site, site_of, unbundled, values
from dolmen.errors import UsageError
from dolmen.facts import FactError
from dolmen.host.deadline import Deadline

CHECK_TIME_LIMIT = 5.0  # seconds of pure computation per check; commands have their own limits
# Facts collected before the checks, each under its own limit instead of inside the first
# check that needs them: the kernel log is read in one streamed pass, and a bundle's log of
# millions of lines takes longer than one check may (it turned every kernel-log check into
# an error, and the verdict into undecided).
PREPASS: Mapping[str, float] = {"kernel_log": 300.0}

__all__ = ["CHECK_TIME_LIMIT", "PREPASS", "CheckTimeout", "run_checks", "run_one", "select"]


def select(
    specs: Iterable[CheckSpec],
    level: Level,
    only: Sequence[str] = (),
) -> list[CheckSpec]:
    """Checks at or below ``level``; ``only`` keeps ids or categories given (prefix match)."""
    chosen = [s for s in specs if s.level <= level]
    if only:
        chosen = [s for s in chosen if any(_matches(s.id, o) for o in only)]
    return sorted(chosen, key=lambda s: s.id)


def matches(check_id: str, names: Sequence[str]) -> bool:
    """Whether ``check_id`` is one of ``names`` or in one of them (a category, a prefix)."""
    return any(_matches(check_id, n) for n in names)


def refuse_unknown(names: Sequence[str], known: Mapping[str, CheckSpec], where: str) -> None:
    """UsageError for a name that is no check id, category or id prefix: ``--only gpu.eccc``
    would otherwise select nothing, and a health check would pass a broken node."""
    for name in names:
        if not any(_matches(i, name) for i in known):
            import difflib  # only on this error path: the quick tier never loads it

            parts = [i.split(".") for i in known]
            ids = sorted({".".join(p[:n]) for p in parts for n in range(1, len(p) + 1)})
            close = difflib.get_close_matches(name, ids, n=3)
            hint = f"did you mean {', '.join(close)}? " if close else ""
            cats = ", ".join(sorted({i.split(".", 1)[0] for i in known}))
            raise UsageError(
                f"{where}: unknown check {name!r}",
                hint=f"{hint}categories: {cats}; every id: dolmen validate --list",
            )


def run_checks(
    ctx: Context,
    specs: Iterable[CheckSpec],
    disabled: Sequence[str] = (),
    timeout: float | Deadline | None = None,
) -> list[Finding]:
    """Run each check; an exception or a timeout becomes ``error`` and the run goes on.

    ``timeout`` bounds the whole run (``--timeout``, checks/deadline.py): no check starts
    once it has passed, and ``run.timeout`` says what the run was waiting on. A Deadline
    already running (a full run's, which its workloads used first) gives what is left."""
    specs = list(specs)
    deadline = timeout if isinstance(timeout, Deadline) else Deadline(timeout)
    before = _deadline(ctx)
    ctx.host.deadline = deadline  # the checks' commands and NVML reads wait no longer
    findings: list[Finding] = []
    skipped: list[str] = []
    try:
        prepare(ctx, specs, disabled)
        for spec in specs:
            if deadline.expired():
                skipped.append(spec.id)
                findings.append(_finding(ctx, spec, not_run(deadline)))
                continue
            with deadline.waiting(spec.id):
                findings.extend(run_one(ctx, spec, disabled))
    finally:  # what runs after the checks (the drain contract's scontrol) has its own limits
        ctx.host.deadline = before
    late = timeout_finding(deadline, skipped)
    return [*findings, late] if late else findings


def prepare(ctx: Context, specs: Sequence[CheckSpec], disabled: Sequence[str] = ()) -> None:
    """Collect the ``PREPASS`` facts the enabled checks need, each under its own limit; a
    failure is remembered by the store and reported by every check that needs them."""
    wanted = {
        name
        for spec in specs
        if not any(_matches(spec.id, d) for d in disabled)
        for name in spec.needs
    }
    deadline = _deadline(ctx)
    for name, seconds in PREPASS.items():
        if name in wanted and not deadline.expired():
            with (
                deadline.waiting(f"{name} facts"),
                suppress(FactError, CheckTimeout, RunTimeout),
                _time_limit(seconds, deadline),
            ):
                ctx.store.get(name)


def run_one(ctx: Context, spec: CheckSpec, disabled: Sequence[str] = ()) -> list[Finding]:
    """Findings of one check, including why it was skipped or could not run."""
    if any(_matches(spec.id, d) for d in disabled):
        return [
            _finding(ctx, spec, Outcome(Status.SKIP, "host", "disabled by the site configuration"))
        ]
    try:
        for name in spec.when:
            predicate, _ = PREDICATES[name]
            reason = predicate(ctx)
            if reason is not None:
                return [_finding(ctx, spec, Outcome(Status.SKIP, "host", reason))]
        with _time_limit(CHECK_TIME_LIMIT, _deadline(ctx), spec):
            outcomes = list(spec.fn(ctx.for_check(spec)))
    except FactError as e:
        status = Status.ERROR if e.bug else Status.UNKNOWN
        ev = {"facts": e.subsystem, "error": e.message}
        if e.bug:
            ev["traceback"] = e.detail
        return [
            _finding(
                ctx,
                spec,
                Outcome(
                    status, "host", f"could not read {e.subsystem} facts: {e.message}", None, ev
                ),
            )
        ]
    except CheckTimeout:
        return [
            _finding(
                ctx, spec, Outcome(Status.ERROR, "host", f"check ran over {CHECK_TIME_LIMIT:g} s")
            )
        ]
    except RunTimeout:
        return [_finding(ctx, spec, ran_out(_deadline(ctx), spec.id))]
    except Exception as e:
        import traceback  # only here: 3 ms a start (with textwrap) for a rare path

        return [
            _finding(
                ctx,
                spec,
                Outcome(
                    Status.ERROR,
                    "host",
                    f"check raised {e.__class__.__name__}: {e}",
                    None,
                    {"traceback": traceback.format_exc()},
                ),
            )
        ]
    if not outcomes:
        return [_finding(ctx, spec, Outcome(Status.ERROR, "host", "check returned no outcome"))]
    return [_finding(ctx, spec, o) for o in outcomes]


def _finding(ctx: Context, spec: CheckSpec, o: Outcome) -> Finding:
    """The outcome as a finding: the check's remedy where it gives none (an unknown whose
    source the bundle lacked: what to add, ``remedy.unbundled``), the identity of the GPU its
    subject names (``identity``), the remedy's fields filled in (``remedy``)."""
    remedy = o.remedy
    if remedy is None and o.status is Status.UNKNOWN:
        remedy = unbundled(o.summary)
    if remedy is None and o.status in (Status.WARN, Status.FAIL, Status.UNKNOWN):
        remedy = spec.remedy
    device = None
    if o.subject.startswith("gpu:"):
        device = identity.device_of(o.subject, identity.known(ctx.store.done("gpu")))
    if remedy is not None and "<" in remedy:
        site = _site(ctx) if needs_site(remedy) else None
        remedy = fill(remedy, values(spec.id, o.subject, o.evidence, device, site))
    return Finding(
        check=spec.id,
        category=spec.category,
        status=o.status,
        subject=o.subject,
        summary=o.summary,
        remedy=remedy,
        evidence=dict(o.evidence),
        gating=spec.gating,
        device=device,
    )


def _deadline(ctx: Context) -> Deadline:
    """The run's deadline on the host; an unbounded one for a stand-in host without any."""
    found = getattr(ctx.host, "deadline", None)
    return found if isinstance(found, Deadline) else Deadline()


_sites: list[Any] = [None, None]  # the last host asked about and its Site


def _site(ctx: Context) -> Site:
    """The node's name and schedulers (``remedy.site_of``), found once per host."""
    if _sites[0] is not ctx.host:
        try:
            hostname = ctx.store.get("os").hostname
        except FactError:
            hostname = None
        _sites[:] = [ctx.host, site_of(ctx.host, hostname)]
    return _sites[1]  # type: ignore[no-any-return]


def _matches(check_id: str, pattern: str) -> bool:
    return check_id == pattern or check_id.startswith(pattern.rstrip(".") + ".")

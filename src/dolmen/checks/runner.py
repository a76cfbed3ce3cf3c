"""Run the registered checks against a context: failures are results (STYLE.md rule 11)."""

from __future__ import annotations

import signal
import threading
from collections.abc import Iterable, Iterator, Mapping, Sequence
from contextlib import contextmanager, suppress
from typing import Any

from dolmen.checks import identity
from dolmen.checks.context import PREDICATES, Context
from dolmen.checks.model import CheckSpec, Finding, Level, Outcome, Status
from dolmen.checks.remedy import Site, fill, needs_site, site_of, values
from dolmen.errors import UsageError
from dolmen.facts import FactError

CHECK_TIME_LIMIT = 5.0  # seconds of pure computation per check; commands have their own limits
# Facts collected before the checks, each under its own limit instead of inside the first
# check that needs them: the kernel log is read in one streamed pass, and a bundle's log of
# millions of lines takes longer than one check may (it turned every kernel-log check into
# an error, and the verdict into undecided).
PREPASS: Mapping[str, float] = {"kernel_log": 300.0}


class CheckTimeout(Exception):
    """A check body ran past CHECK_TIME_LIMIT."""


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
    ctx: Context, specs: Iterable[CheckSpec], disabled: Sequence[str] = ()
) -> list[Finding]:
    """Run each check; an exception or a timeout becomes ``error`` and the run goes on."""
    specs = list(specs)
    prepare(ctx, specs, disabled)
    findings: list[Finding] = []
    for spec in specs:
        findings.extend(run_one(ctx, spec, disabled))
    return findings


def prepare(ctx: Context, specs: Sequence[CheckSpec], disabled: Sequence[str] = ()) -> None:
    """Collect the ``PREPASS`` facts the enabled checks need, each under its own limit; a
    failure is remembered by the store and reported by every check that needs them."""
    wanted = {
        name
        for spec in specs
        if not any(_matches(spec.id, d) for d in disabled)
        for name in spec.needs
    }
    for name, seconds in PREPASS.items():
        if name in wanted:
            with suppress(FactError, CheckTimeout), _time_limit(seconds):
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
        with _time_limit(CHECK_TIME_LIMIT):
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
    """The outcome as a finding: the check's remedy where it gives none, the identity of the
    GPU its subject names (``identity``), the remedy's fields filled in (``remedy``)."""
    remedy = o.remedy
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


@contextmanager
def _time_limit(seconds: float) -> Iterator[None]:
    """Interrupt a runaway pure-Python check (main thread only; elsewhere no limit)."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return

    def _raise(signum: int, frame: object) -> None:
        raise CheckTimeout(f"ran over {seconds:g} s")

    old = signal.signal(signal.SIGALRM, _raise)
    signal.setitimer(signal.ITIMER_REAL, seconds)
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, old)

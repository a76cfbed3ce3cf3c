"""Slurm's HealthCheckProgram, Prolog and Epilog, as the console scripts slurm.conf names.

    dolmen-slurm-healthcheck | dolmen-slurm-prolog | dolmen-slurm-epilog
    python -m dolmen.slurm.hooks healthcheck|prolog|epilog [--from TREE] [--level L]
        [--timeout DURATION]

The console scripts (pyproject.toml ``[project.scripts]``) take no argument, as
slurm.conf runs them, and keep sites working when module paths move. Each runs
``dolmen validate`` (quick by default: passive reads under a second) on this
node and applies the drain contract (``dolmen.slurm.drain``). Exit codes
follow what slurmd does with them:

- healthcheck: always 0; the drain is the signal (slurmd ignores the code).
- prolog: 1 when the node is unhealthy, so that slurmctld requeues the job on
  other nodes (``SchedulerParameters=nohold_on_prolog_fail``); 0 otherwise,
  undecided included, so that a signal dolmen cannot read never blocks jobs.
- epilog: always 0; a non-zero epilog would make Slurm drain the node again
  with its own reason ("Epilog error"), hiding dolmen's.

With ``[net] policy`` set, the prolog then puts the job's network isolation in place and
the epilog takes it away (``dolmen.slurm.isolation``): a prolog that cannot exits 3, so
the job never runs unisolated (docs/net-prove.md). ``--from TREE`` changes what the
checks read, not where the isolation goes: it is always this node's own table.

Each run is bounded (``--timeout``, else ``[slurm] hook_timeout`` of dolmen.toml, else
``HOOK_TIMEOUT``): slurmd kills a HealthCheckProgram that runs 60 s, silently, so a hung
driver would never drain the node. A run that times out is undecided (the node is left
as it is) and its line names what it waited on: ``dolmen healthcheck: dolmen:
undecided: timed out after 50 s on nvidia-smi -q -x in gpu.present; ...``.

``dolmen validate --level quick --slurm`` does the same as ``healthcheck``
(and prints the whole verdict).
"""

from __future__ import annotations

import argparse
import sys

KINDS = ("healthcheck", "prolog", "epilog")
# Under slurmd's 60 s limit on HealthCheckProgram (slurm.conf(5)), with time left for
# the drain contract (one scontrol call, under a second on a live slurmctld) and the verdict.
HOOK_TIMEOUT = "45s"


def run_hook(
    kind: str, source: str | None = None, level: str = "quick", timeout: str | None = None
) -> int:
    """Validate this node, apply the drain contract, print what was done; the exit code.

    Anything that goes wrong inside dolmen is printed and gives 0: a hook that
    crashed must not make Slurm drain the node or requeue the job ("Prolog error").
    """
    from dolmen.quickstart import DEFERRED, collector_off, defer_imports

    if level == "quick":
        defer_imports(DEFERRED)
    with collector_off(level == "quick"):
        rc = _run(kind, source, level, timeout)
    if rc == 0 and kind in ("prolog", "epilog"):
        rc = _isolation(kind)
    return rc


def _isolation(kind: str) -> int:
    """The job's network isolation (``slurm/isolation.py``), after the checks: a prolog
    that cannot put it in place exits 3, even when the checks could not decide."""
    import os

    from dolmen.config import load_config
    from dolmen.errors import ConfigError, ExitCode
    from dolmen.host.live import LiveHost
    from dolmen.slurm.isolation import isolation_hook

    try:
        config = load_config(None)
        return isolation_hook(kind, LiveHost(), config, os.environ)
    except Exception as e:  # cannot tell whether it is asked for, or in place: fail closed
        message = e.message if isinstance(e, ConfigError) else f"{e.__class__.__name__}: {e}"
        print(f"dolmen {kind}: job isolation: {message}", file=sys.stderr)
        return int(ExitCode.ENVIRONMENT) if kind == "prolog" else 0


def _run(kind: str, source: str | None, level: str, timeout: str | None) -> int:
    try:
        from dolmen.checks.deadline import backstop
        from dolmen.checks.model import Level
        from dolmen.checks.suite import validate
        from dolmen.checks.verdict import Health
        from dolmen.config import load_config
        from dolmen.host import open_host
        from dolmen.report.reason import one_line_reason
        from dolmen.slurm.drain import drain_if_unhealthy
        from dolmen.values.duration import parse_duration

        config = load_config(None)
        limit = timeout or str(config.get("slurm", "hook_timeout", HOOK_TIMEOUT))
        seconds = parse_duration(limit, what="--timeout", bare="s", positive=True)
        with open_host(source) as host:
            cancel = backstop(
                lambda: host.deadline,
                seconds.total_seconds(),
                lambda line: print(f"dolmen {kind}: {line}", file=sys.stderr, flush=True),
                0,  # undecided: every hook exits 0 (module docstring)
            )
            try:
                verdict = validate(
                    host,
                    level=Level.parse(level),
                    config=config,
                    timeout=seconds.total_seconds(),
                )
            finally:  # an in-process caller must never meet it later
                cancel()
            action = drain_if_unhealthy(host, verdict)
    except Exception as e:
        message = getattr(e, "message", None) or f"{e.__class__.__name__}: {e}"
        print(f"dolmen {kind}: could not decide: {message}", file=sys.stderr)
        return 0
    print(f"dolmen {kind}: {one_line_reason(verdict)}; {action}", file=sys.stderr)
    if kind == "prolog" and verdict.health is Health.UNHEALTHY:
        return 1
    return 0


def main(argv: list[str] | None = None, *, kind: str | None = None) -> int:
    """Command line of the hooks (module docstring); ``kind`` fixed for a console script."""
    prog = f"dolmen-slurm-{kind}" if kind else "python -m dolmen.slurm.hooks"
    p = argparse.ArgumentParser(prog=prog)
    if kind is None:
        p.add_argument("kind", choices=KINDS)
    p.add_argument("--from", dest="source", default=None, help="validate a host tree instead")
    p.add_argument("--level", default="quick", choices=("quick", "standard", "full"))
    p.add_argument(
        "--timeout",
        default=None,
        help=f"bound the run (30s, 2m, or seconds); default [slurm] hook_timeout, {HOOK_TIMEOUT}",
    )
    args = p.parse_args(argv)
    return run_hook(kind or args.kind, args.source, args.level, args.timeout)


def healthcheck() -> int:
    """``dolmen-slurm-healthcheck``: slurm.conf's HealthCheckProgram."""
    return _script("healthcheck")


def prolog() -> int:
    """``dolmen-slurm-prolog``: slurm.conf's Prolog."""
    return _script("prolog")


def epilog() -> int:
    """``dolmen-slurm-epilog``: slurm.conf's Epilog."""
    return _script("epilog")


def _script(kind: str) -> int:
    """A console script's run: this process ends with it, so the collection at exit is spared
    (``dolmen.quickstart.skip_final_collection``), as for ``dolmen validate``."""
    from dolmen.quickstart import skip_final_collection

    rc = main(kind=kind)
    skip_final_collection()
    return rc


if __name__ == "__main__":
    sys.exit(main())

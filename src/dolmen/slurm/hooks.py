"""Slurm's HealthCheckProgram, Prolog and Epilog, as the console scripts slurm.conf names.

    dolmen-slurm-healthcheck | dolmen-slurm-prolog | dolmen-slurm-epilog [--from TREE] [--level L]
    python -m dolmen.slurm.hooks healthcheck|prolog|epilog [--from TREE] [--level L]

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

``dolmen validate --level quick --slurm`` does the same as ``healthcheck``
(and prints the whole verdict).
"""

from __future__ import annotations

import argparse
import sys

KINDS = ("healthcheck", "prolog", "epilog")


def run_hook(kind: str, source: str | None = None, level: str = "quick") -> int:
    """Validate this node, apply the drain contract, print what was done; the exit code.

    Anything that goes wrong inside dolmen is printed and gives 0: a hook that
    crashed must not make Slurm drain the node or requeue the job ("Prolog error").
    """
    from dolmen.quickstart import DEFERRED, collector_off, defer_imports

    if level == "quick":
        defer_imports(DEFERRED)
    with collector_off(level == "quick"):
        return _run(kind, source, level)


def _run(kind: str, source: str | None, level: str) -> int:
    try:
        from dolmen.checks.model import Level
        from dolmen.checks.suite import validate
        from dolmen.checks.verdict import Health
        from dolmen.config import load_config
        from dolmen.host import open_host
        from dolmen.report.reason import one_line_reason
        from dolmen.slurm.drain import drain_if_unhealthy

        with open_host(source) as host:
            verdict = validate(host, level=Level.parse(level), config=load_config(None))
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
    args = p.parse_args(argv)
    return run_hook(kind or args.kind, args.source, args.level)


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

"""What ``dolmen validate`` does, without click: run by the click command and by the lean
entry (``cli/lean.py``) alike, so the two cannot drift apart.

Slurm's HealthCheckProgram and node-problem-detector start dolmen every few seconds on
every node; importing click costs them 15 to 25 ms a run for nothing, so this body
writes with ``print`` and returns the exit code instead of raising click's Exit. For the
same callers a quick run also defers the standard modules it imports but never uses
(``DEFERRED``), runs without the cyclic garbage collector, and, as a process of its own,
spares the collection at exit (bench/startup.py measures the whole start).
"""

from __future__ import annotations

import sys
from typing import TYPE_CHECKING

from dolmen.errors import UsageError
from dolmen.quickstart import DEFERRED, collector_off, defer_imports

if TYPE_CHECKING:
    from dolmen.checks.verdict import Verdict
    from dolmen.config import Config
    from dolmen.host import Host


def run_validate(
    level: str | None,
    source: str | None,
    config_path: str | None,
    baseline_path: str | None,
    only: tuple[str, ...],
    as_json: bool,
    junit_path: str | None,
    prom_path: str | None,
    npd: bool,
    slurm: bool,
    verbose: bool,
    list_checks: bool,
    device: str | None = None,
    force: bool = False,
) -> int:
    """Validate the host (or tree), print the verdict, return the exit code (0, 1, 2)."""
    if level == "quick":
        defer_imports(DEFERRED)
    with collector_off(level == "quick"):
        from dolmen.checks.model import Level
        from dolmen.config import load_config

        if npd and slurm:
            raise UsageError(
                "--slurm and --npd are two callers' modes (Slurm's health check, "
                "node-problem-detector); choose one"
            )
        config = load_config(config_path)
        if config.sections.get("thresholds"):  # refused before any host is opened
            from dolmen.checks import load_registry
            from dolmen.config import check_thresholds

            check_thresholds(config, {i: s.limits for i, s in load_registry().items()})
        level_name = level or str(config.get("validate", "level", "standard"))
        try:
            lvl = Level.parse(level_name)
        except ValueError as e:
            raise UsageError(str(e)) from None
        if list_checks:
            _list(as_json)
            return 0
        full = lvl is Level.FULL
        if full or device or force:
            from dolmen.cli.validate_full import refuse_flags

            refuse_flags(full, device, force)
        baseline = None
        baseline_path = baseline_path or _site_baseline(config)
        if baseline_path:
            from dolmen.baseline import load_baseline

            baseline = load_baseline(baseline_path)
        from dolmen.checks.suite import validate as run
        from dolmen.host import open_host

        if as_json and npd:
            raise UsageError("--json and --npd both write to stdout; choose one")
        _check_side_outputs(junit_path, prom_path)
        with open_host(source) as host:
            detected = getattr(host, "detected", None)  # a pasted file, a sosreport
            if detected:
                _echo(str(detected), err=True)
            if full:  # the workloads, their progress and Ctrl-C: cli/validate_full.py
                from dolmen.cli.validate_full import validate_full

                got = validate_full(host, lvl, config, baseline, only, device, force)
                if isinstance(got, int):
                    return got
                verdict = got
            else:
                verdict = run(host, level=lvl, config=config, baseline=baseline, only=only)
            slurm_action = _slurm(host, verdict) if slurm else None
        _write_side_outputs(verdict, junit_path, prom_path)
        if npd:
            from dolmen.report.reason import one_line_reason

            _echo(one_line_reason(verdict, 80))
        elif as_json:
            from dolmen.report.json import render_json

            sys.stdout.write(render_json(verdict))
        else:
            from rich.console import Console

            from dolmen.report.terminal import render_terminal

            render_terminal(verdict, Console(), verbose=verbose)
        if slurm_action:
            _echo(slurm_action, err=True)
        return int(verdict.health.exit_code)


def _site_baseline(config: Config) -> str | None:
    """``[validate] baseline`` (relative to the config file's folder), the --baseline default."""
    value = config.get("validate", "baseline")
    if not value:
        return None
    from pathlib import Path

    path = Path(value).expanduser()
    if not path.is_absolute() and config.path is not None:
        path = config.path.parent / path
    return str(path)


def _echo(line: str, *, err: bool = False) -> None:
    """One line, flushed (what click.echo does with plain text)."""
    print(line, file=sys.stderr if err else sys.stdout, flush=True)


def _check_side_outputs(junit_path: str | None, prom_path: str | None) -> None:
    """Refuse a bad --junit/--prometheus path before the checks run, not after."""
    from pathlib import Path

    from dolmen.fsutil import output_target

    if junit_path:
        output_target(Path(junit_path), what="--junit")
    if prom_path:
        output_target(Path(prom_path), what="--prometheus")


def _write_side_outputs(verdict: Verdict, junit_path: str | None, prom_path: str | None) -> None:
    from pathlib import Path

    from dolmen.fsutil import write_output

    if junit_path:
        from dolmen.report.junit import render_junit

        write_output(Path(junit_path), render_junit(verdict).encode(), what="--junit")
    if prom_path:
        from dolmen.report.prometheus import render_prometheus

        # node_exporter reads *.prom files; an atomic rename means it never sees half a file.
        write_output(Path(prom_path), render_prometheus(verdict).encode(), what="--prometheus")


def _slurm(host: Host, verdict: Verdict) -> str:
    from dolmen.slurm.drain import drain_if_unhealthy

    return drain_if_unhealthy(host, verdict)


def _list(as_json: bool) -> None:
    """Every check: a table, or with --json the ``dolmen.checks/1`` document scripts read."""
    from dolmen.checks import load_registry

    specs = sorted(load_registry().values(), key=lambda s: s.id)
    if as_json:
        import json

        rows = [
            {
                "id": s.id,
                "category": s.category,
                "level": s.level.name.lower(),
                "title": s.title,
                "gating": s.gating,
                "needs": list(s.needs),
                "when": list(s.when),
                "limits": dict(s.limits),
                "source": s.source,
            }
            for s in specs
        ]
        _echo(json.dumps({"schema": "dolmen.checks/1", "checks": rows}, indent=2, default=str))
        return
    for spec in specs:
        limits = ", ".join(f"{k}={v}" for k, v in spec.limits.items())
        _echo(
            f"{spec.id:<40} {spec.level.name.lower():<9} {spec.title}"
            + (f"  [{limits}]" if limits else "")
        )

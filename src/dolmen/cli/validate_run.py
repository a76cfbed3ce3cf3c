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
    from collections.abc import Callable

    from dolmen.checks.verdict import Verdict
    from dolmen.config import Config
    from dolmen.host import Host
    from dolmen.host.deadline import Deadline
    from dolmen.values.busid import BusId


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
    timeout: str | None,
    verbose: bool,
    list_checks: bool,
    matrix: bool = False,
    statuses: str | None = None,
    gpu: str | None = None,
    device: str | None = None,
    force: bool = False,
) -> int:
    """Validate the host (or tree), print the verdict, return the exit code (0, 1, 2)."""
    only = only_names(only)
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
        if matrix or statuses is not None or gpu is not None:  # refused before any read
            _check_view(statuses, gpu, as_json or npd)
        config = load_config(config_path)
        level_name = level or str(config.get("validate", "level", "standard"))
        try:
            lvl = Level.parse(level_name)
        except ValueError as e:
            raise UsageError(str(e)) from None
        seconds = run_timeout(timeout)
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
        from dolmen.checks.suite import choose
        from dolmen.checks.suite import validate as run
        from dolmen.host import open_host

        if as_json and npd:
            raise UsageError("--json and --npd both write to stdout; choose one")
        _check_side_outputs(junit_path, prom_path)
        selection = choose(config, lvl, only)  # every refusal of names, before any host opens
        with open_host(source) as host:
            detected = getattr(host, "detected", None)  # a pasted file, a sosreport
            if detected:
                _echo(str(detected), err=True)
            # One deadline for the whole run, from here: the backstop's, the workloads' and
            # the checks' (which get what the workloads of a full run left of it), and every
            # wait before them (the GPU list a full run reads to place its workloads).
            deadline, before = _deadline(seconds), host.deadline
            cancel = _backstop(host, seconds, npd)
            if deadline is not None:
                host.deadline = deadline
            try:
                if full and slurm:  # minutes of workloads for a contract that cannot apply?
                    from dolmen.slurm.drain import preflight

                    preflight(host)
                if full:  # the workloads, their progress and Ctrl-C: cli/validate_full.py
                    from dolmen.cli.validate_full import validate_full

                    got = validate_full(
                        host, lvl, config, baseline, selection, deadline, device, force
                    )
                    if isinstance(got, int):
                        return got
                    verdict = got
                else:
                    verdict = run(
                        host,
                        level=lvl,
                        config=config,
                        baseline=baseline,
                        timeout=deadline,
                        selection=selection,
                    )
            finally:  # an in-process caller must never meet it later
                cancel()
                host.deadline = before  # the drain contract's scontrol has its own limits
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

            from dolmen.report.terminal import Options, parse_statuses, render_terminal

            chosen = parse_statuses(statuses) if statuses is not None else None
            view = Options(verbose, matrix, chosen, None if gpu is None else _gpu(gpu, verdict))
            render_terminal(verdict, Console(), options=view)
        if slurm_action:
            _echo(slurm_action, err=True)
        return int(verdict.health.exit_code)


def only_names(only: tuple[str, ...]) -> tuple[str, ...]:
    """--only's names: ``--only a,b`` is ``--only a --only b`` (as ``dolmen bench --only``
    and ``--status`` take lists). An ``--only`` that names nothing (``''``, ``,``) is a
    usage error: dropped, it would leave no selector and run every check."""
    names: list[str] = []
    for item in only:
        words = [w.strip() for w in item.split(",") if w.strip()]
        if not words:
            raise UsageError(
                f"--only {item!r} names no check",
                hint="give a check id, a category or an id prefix, comma-separated "
                "(--only gpu, --only gpu.ecc,pcie); every id: dolmen validate --list",
            )
        names += words
    return tuple(names)


def _check_view(statuses: str | None, gpu: str | None, machine: bool) -> None:
    """--matrix, --status and --gpu shape the terminal report: refused with --json or --npd
    (a filtered document would read as a healthier host), or with a word they do not take."""
    from dolmen.report.terminal import parse_statuses
    from dolmen.report.terminal.gpus import valid_gpu_word

    if machine:
        raise UsageError(
            "--matrix, --status and --gpu shape the terminal report; --json and --npd "
            "always carry every finding (filter the JSON with jq)"
        )
    if statuses is not None:
        try:
            parse_statuses(statuses)
        except ValueError as e:
            raise UsageError(f"--status: {e}") from None
    if gpu is not None and not valid_gpu_word(gpu):
        raise UsageError(
            f"--gpu: {gpu!r} is neither a GPU index nor a PCI bus id",
            hint="give the index nvidia-smi prints (--gpu 3) or a bus id (--gpu 0000:86:00.0)",
        )


def _gpu(text: str, verdict: Verdict) -> BusId:
    """The GPU ``--gpu`` names, by bus id; a usage error naming the GPUs there are."""
    from dolmen.report.terminal.gpus import indexes, select_gpu

    bus = select_gpu(text, verdict.inventory)
    if bus is None:
        known = sorted(indexes(verdict.inventory).values())
        raise UsageError(
            f"--gpu {text}: no GPU of that index in this verdict",
            hint=f"GPUs here: {', '.join(map(str, known))}" if known else "no GPU was listed",
        )
    return bus


def run_timeout(text: str | None) -> float | None:
    """``--timeout``'s seconds: a duration (``30s``, ``2m``) or, as NHC's ``-t`` takes it, a
    number of seconds; longer than zero. None without one."""
    if text is None:
        return None
    from dolmen.values.duration import parse_duration

    return parse_duration(text, what="--timeout", bare="s", positive=True).total_seconds()


def _deadline(seconds: float | None) -> Deadline | None:
    """The run's Deadline under --timeout, started now; None without one."""
    if seconds is None:
        return None
    from dolmen.host.deadline import Deadline

    return Deadline(seconds)


def _backstop(host: Host, seconds: float | None, npd: bool) -> Callable[[], None]:
    """With --timeout, end the process when the run cannot keep it (checks/deadline.py
    ``backstop``): the reason line on stdout for node-problem-detector, else on stderr."""
    if seconds is None:
        return lambda: None
    from dolmen.checks.deadline import backstop

    return backstop(lambda: host.deadline, seconds, lambda line: _echo(line, err=not npd), 2)


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

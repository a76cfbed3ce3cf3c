"""``dolmen bench``: the workloads of ``validate --level full`` as a benchmark report.

A run writes ``bench.json`` (``dolmen.bench/1``) and PNG/SVG charts to a folder and prints
the terminal view; ``--compare A B`` sets two runs side by side, ``--save-baseline`` and
``--baseline`` keep a run under a name and compare against it (docs/bench.md). The
workloads, their budgets, ``--device`` and ``--force`` are validate's (cli/validate_full.py).
"""

from __future__ import annotations

import sys
import time
from datetime import datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

import click

from dolmen.cli.common import config_option
from dolmen.cli.main import exit_with
from dolmen.compat import UTC
from dolmen.errors import ExitCode, UsageError

if TYPE_CHECKING:
    from dolmen.config import Config

_RUN_FLAGS = ("--device", "--force", "--only", "--smoke")
COMPARE_SCHEMA = "dolmen.bench.compare/1"  # --compare --json (report/schemas)


@click.command()
@click.option(
    "--device",
    type=click.Choice(["cpu", "cuda"], case_sensitive=False),
    default=None,
    help="Where the workloads run (default: cuda where an NVIDIA GPU is seen, else cpu).",
)
@click.option("--force", is_flag=True, help="Run on GPUs another process is using.")
@click.option("--only", multiple=True, metavar="NAME[,NAME]", help="Run only these workloads.")
@click.option(
    "--smoke", is_flag=True, help="Tiny sizes: checks the machinery in seconds, not the machine."
)
@config_option
@click.option(
    "--out",
    metavar="DIR",
    help="Folder for bench.json and the charts (default: a new one under "
    "$DOLMEN_STATE_DIR/bench/runs).",
)
@click.option("--no-plots", is_flag=True, help="Write bench.json only.")
@click.option("--json", "as_json", is_flag=True, help="Print the dolmen.bench/1 document.")
@click.option(
    "--input",
    "input_path",
    metavar="FILE",
    help="Show (and with --out, replot) a bench.json written before instead of running.",
)
@click.option(
    "--compare",
    nargs=2,
    metavar="A.json B.json",
    default=None,
    help="Two runs side by side with B/A per figure; runs nothing.",
)
@click.option("--save-baseline", metavar="NAME", help="Store this run as baseline NAME.")
@click.option("--baseline", "baseline_name", metavar="NAME", help="Compare this run with NAME.")
@click.option("--list-baselines", is_flag=True, help="List the stored baselines and exit.")
def bench(
    device: str | None,
    force: bool,
    only: tuple[str, ...],
    smoke: bool,
    config_path: str | None,
    out: str | None,
    no_plots: bool,
    as_json: bool,
    input_path: str | None,
    compare: tuple[str, str] | None,
    save_baseline: str | None,
    baseline_name: str | None,
    list_baselines: bool,
) -> None:
    """Measure GEMM, memory, collective and storage throughput; write JSON and charts.

    Exit codes: 0 measured (or compared), 2 bad input or nothing could be measured,
    3 the environment refused (an output folder dolmen may not write in), 130 Ctrl-C.
    """
    run_flags = [f for f, v in zip(_RUN_FLAGS, (device, force, only, smoke)) if v]
    if list_baselines:
        _alone(
            "--list-baselines", run_flags, out, input_path, compare, save_baseline, baseline_name
        )
        _list_baselines()
        return
    if compare is not None:
        _alone("--compare", run_flags, out, input_path, None, save_baseline, baseline_name)
        exit_with(_compare(*compare, as_json=as_json))
    if input_path is not None and run_flags:
        raise UsageError(
            f"{run_flags[0]} applies to a run; --input shows a run already made",
            hint="drop --input to run the workloads",
        )
    exit_with(
        _bench(
            device,
            force,
            _names(only),
            smoke,
            config_path,
            out,
            no_plots,
            as_json,
            input_path,
            save_baseline,
            baseline_name,
        )
    )


def _bench(
    device: str | None,
    force: bool,
    only: list[str],
    smoke: bool,
    config_path: str | None,
    out: str | None,
    no_plots: bool,
    as_json: bool,
    input_path: str | None,
    save_baseline: str | None,
    baseline_name: str | None,
) -> int:
    from dolmen.report.bench import store
    from dolmen.report.bench.document import load_bench
    from dolmen.report.bench.output import discard, run_folder, target, write_run

    if save_baseline is not None:
        store.baseline_path(save_baseline)  # a bad name is refused before the run
    reference = store.load_baseline(baseline_name) if baseline_name else None
    if input_path is not None:
        doc = load_bench(input_path)
        folder = run_folder(out, datetime.now(UTC)) if out is not None else None
    else:
        from dolmen.config import load_config

        config = load_config(config_path)  # a bad config is refused before any folder
        started = datetime.now(UTC)
        made = not target(out, started).exists()
        folder = run_folder(out, started)
        measured = _measure(device, force, only, smoke, config, started)
        if isinstance(measured, int):
            if made:  # interrupted: the folder made for this run goes too
                discard(folder)
            return measured
        doc = measured
    note, written = "", list[Path]()
    if folder is not None:
        written, note = write_run(doc, folder, plots=not no_plots)
    _view(doc, as_json)
    say = _err if as_json else click.echo
    if folder is not None:
        say(f"written: {', '.join(str(p) for p in written)}")
    if note:
        say(note)
    if save_baseline is not None and not doc["results"]:  # a baseline of nothing compares nothing
        say(f"baseline {save_baseline!r} not stored: this run measured nothing")
    elif save_baseline is not None:
        say(f"baseline {save_baseline!r} stored: {store.save_baseline(save_baseline, doc)}")
    if reference is not None:
        from dolmen.report.bench.compare import render_compare

        say("")
        for line in render_compare(
            reference, doc, a_name=f"baseline {baseline_name}", b_name="this run"
        ):
            say(line)
    if not doc["results"] and doc["errors"]:
        _err("dolmen: nothing could be measured (every workload said why above)")
        return int(ExitCode.UNDECIDED)
    return int(ExitCode.OK)


def _measure(
    device: str | None,
    force: bool,
    only: list[str],
    smoke: bool,
    config: Config,
    started: datetime,
) -> dict[str, Any] | int:
    """Run the workloads on this host: the document, or the exit code of a Ctrl-C."""
    from dolmen import __version__
    from dolmen.cli.progress import clear
    from dolmen.cli.validate_full import interrupted, workloads_for
    from dolmen.host import open_host
    from dolmen.report.bench.document import bench_document
    from dolmen.workloads import RUNNERS
    from dolmen.workloads.model import Aborted

    names = [n for n in RUNNERS if not only or n in only]
    t0 = time.monotonic()
    with open_host(None) as host:
        workloads = workloads_for(host, config, device, force, smoke=smoke, label="bench")
        assert workloads is not None  # the live host
        try:
            workloads.prepare(names)
        except Aborted as e:
            return interrupted(e, workloads.device, "no bench.json written")
        finally:
            clear()
        results = {n: r.to_json() for n, r in workloads.results().items()}
        return bench_document(
            host=host.hostname,
            started=started.isoformat(timespec="seconds").replace("+00:00", "Z"),
            device=workloads.device,
            wall_s=time.monotonic() - t0,
            results=results,
            errors=workloads.errors(),
            smoke=smoke,
            version=__version__,
        )


def _names(only: tuple[str, ...]) -> list[str]:
    """--only's workload names (repeated or comma-separated), each one known."""
    if not only:
        return []
    from dolmen.workloads import RUNNERS

    names = [n.strip().lower() for item in only for n in item.split(",") if n.strip()]
    unknown = [n for n in names if n not in RUNNERS]
    if unknown or not names:
        raise UsageError(
            f"unknown workload {unknown[0]!r}" if unknown else "--only names no workload",
            hint=f"valid workloads: {', '.join(RUNNERS)}",
        )
    return names


def _compare(a_path: str, b_path: str, *, as_json: bool) -> int:
    from dolmen.report.bench.compare import compare_rows, notes, render_compare
    from dolmen.report.bench.document import load_bench

    a, b = load_bench(a_path), load_bench(b_path)
    if as_json:
        import json

        rows = [
            {
                "workload": r.workload,
                "figure": r.label,
                "unit": r.unit,
                "a": r.a,
                "b": r.b,
                "ratio": r.ratio,
            }
            for r in compare_rows(a, b)
        ]
        said = [n.removeprefix("note: ") for n in notes(a, b)]
        doc = {"schema": COMPARE_SCHEMA, "a": a_path, "b": b_path, "notes": said, "rows": rows}
        click.echo(json.dumps(doc, indent=2))
    else:
        for line in render_compare(a, b, a_name=a_path, b_name=b_path):
            click.echo(line)
    return int(ExitCode.OK)


def _view(doc: dict[str, Any], as_json: bool) -> None:
    if as_json:
        from dolmen.report.bench.document import dump_bench

        click.echo(dump_bench(doc).decode(), nl=False)
        return
    from dolmen.report.bench.terminal import render_bench

    for line in render_bench(doc):
        click.echo(line)


def _list_baselines() -> None:
    from dolmen.report.bench.store import baseline_names, baselines_dir

    names = baseline_names()
    if not names:
        click.echo(f"no bench baselines in {baselines_dir()}")
    for name in names:
        click.echo(name)


def _alone(flag: str, run_flags: list[str], *others: object) -> None:
    """``flag`` is a mode of its own: refuse the run's flags beside it."""
    given = run_flags + [
        name
        for name, v in zip(
            ("--out", "--input", "--compare", "--save-baseline", "--baseline"), others
        )
        if v is not None
    ]
    if given:
        raise UsageError(f"{flag} runs nothing: {given[0]} does not go with it")


def _err(line: str) -> None:
    print(line, file=sys.stderr, flush=True)

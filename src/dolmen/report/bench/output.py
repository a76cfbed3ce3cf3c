"""Where a bench run goes: the folder (checked before any workload starts) and its files.

``--out DIR`` names the folder: an existing folder, or a new one whose parent exists
(dolmen creates that one folder, never its parents: STYLE.md rule 21). Without it a run
goes to ``<state>/bench/runs/<UTC time>/`` (``$DOLMEN_STATE_DIR``, /var/lib/dolmen by
default), dolmen's own state, created as needed. The folder gets ``bench.json`` and,
where matplotlib is installed, ``<chart>.png`` and ``<chart>.svg`` per chart.
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Mapping
from datetime import datetime
from pathlib import Path
from typing import Any

from dolmen.errors import EnvironmentProblem, UsageError
from dolmen.fsutil import kind_of, output_folder, write_output
from dolmen.paths import state_dir
from dolmen.report.bench.document import dump_bench

BENCH_JSON = "bench.json"


def runs_dir() -> Path:
    """Where runs without ``--out`` go."""
    return state_dir() / "bench" / "runs"


def target(out: str | None, started: datetime) -> Path:
    """The folder ``run_folder`` makes ready: ``--out``'s, or the run's own under runs_dir."""
    return Path(out) if out is not None else runs_dir() / started.strftime("%Y%m%dT%H%M%SZ")


def run_folder(out: str | None, started: datetime) -> Path:
    """The folder this run writes to, made ready now, so a run of minutes never ends in
    "cannot write there" (UsageError for a path that is no folder, EnvironmentProblem for
    a folder dolmen may not write in)."""
    if out is None:
        folder = target(out, started)
        try:
            folder.mkdir(parents=True, exist_ok=True)
        except OSError as e:
            raise EnvironmentProblem(
                f"cannot create {folder} ({e.strerror or e})",
                hint="name a folder with --out DIR, or point DOLMEN_STATE_DIR elsewhere",
            ) from None
        return output_folder(folder, what="bench")
    folder = Path(out)
    try:
        st = os.stat(folder)
    except FileNotFoundError:
        st = None
    if st is None:
        output_folder(folder.parent if str(folder.parent) else Path("."), what=f"--out {out}:")
        try:
            folder.mkdir()
        except OSError as e:
            raise EnvironmentProblem(f"--out {out}: cannot create it ({e.strerror or e})") from None
        return folder
    if not folder.is_dir():
        raise UsageError(
            f"--out {out} is {kind_of(st.st_mode)}, not a folder",
            hint="name a folder (a new one is created if its parent exists)",
        )
    return output_folder(folder, what="--out")


def discard(folder: Path) -> None:
    """Remove a run folder ``run_folder`` created when the run ended before writing into it
    (Ctrl-C): an interrupted run leaves nothing behind. Only an empty folder goes."""
    with contextlib.suppress(OSError):
        folder.rmdir()


def write_run(
    doc: Mapping[str, Any], folder: Path, *, plots: bool = True
) -> tuple[list[Path], str]:
    """bench.json and the charts into ``folder``: the files written and a line saying what
    happened to the plots ("" when they were written)."""
    written = [folder / BENCH_JSON]
    write_output(written[0], dump_bench(doc), what="bench")
    if not plots:
        return written, "plots skipped: --no-plots"
    from dolmen.report.bench.plots import MISSING, matplotlib_missing, write_plots

    if matplotlib_missing():
        return written, MISSING
    return written + write_plots(doc, folder), ""

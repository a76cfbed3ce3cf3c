"""The quick tier on an 8-GPU host tree versus Meta's GCM health checks, same data, same run.

    .venv/bin/python bench/validate_vs_gcm.py [--runs N]

GCM (PyPI gpucm) installs into its own virtualenv, bench/.venv-gcm (it pins old click
and pydantic). It runs its real check code: check-nvidia-smi with the checks comparable
to dolmen's quick GPU tier (count, temperature, retired pages, volatile ECC, row remap
pending/failed, VBIOS), check-syslogs xid and check-ib check-ibstat. It reads the same
tree: NVML through bench/shims/pynvml.py (the tree's nvidia-smi XML, parsed once), dmesg
and ibstat through shim commands that print the tree's recordings. dolmen runs
`dolmen validate --level quick --from TREE --json` (every quick check, not only the
comparable ones). Both are timed as whole processes, wall clock, median of N runs,
alternating. Printed: both medians, the ratio, and the 0.3 s target.
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))
GCM_VENV = REPO / "bench" / ".venv-gcm"
TARGET_S = 0.3
TARGET_RATIO = 3.0


def ensure_gcm() -> Path:
    exe = GCM_VENV / "bin" / "health_checks"
    if not exe.exists():
        print("installing gpucm into bench/.venv-gcm (once)...", file=sys.stderr)
        subprocess.run([sys.executable, "-m", "venv", str(GCM_VENV)], check=True)
        subprocess.run([str(GCM_VENV / "bin" / "pip"), "install", "-q", "gpucm"], check=True)
    return exe


def shim_commands(tree: Path, folder: Path) -> None:
    for name, recorded in (("dmesg", "dmesg"), ("ibstat", "ibstat")):
        script = folder / name
        script.write_text(f"#!/bin/sh\nexec cat '{tree / 'commands' / recorded}'\n")
        script.chmod(0o755)


def timed(argv: list[str], env: dict[str, str], cwd: Path) -> tuple[float, int]:
    t0 = time.perf_counter()
    rc = subprocess.run(
        argv, env=env, cwd=cwd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL
    ).returncode
    return time.perf_counter() - t0, rc


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--runs", type=int, default=10)
    args = ap.parse_args()
    from tests.hosts.scenarios import build

    work = Path(tempfile.mkdtemp(prefix="dolmen-bench-"))
    try:
        tree = build("h100-hgx-healthy", work / "tree")
        shims = work / "bin"
        shims.mkdir()
        shim_commands(tree, shims)
        logs = work / "gcm-logs"
        logs.mkdir()
        gcm = str(ensure_gcm())
        genv = {
            **os.environ,
            "PATH": f"{shims}:{os.environ['PATH']}",
            "PYTHONPATH": str(REPO / "bench" / "shims"),
            "DOLMEN_BENCH_TREE": str(tree),
        }
        common = ["fair_cluster", "prolog", "--sink", "do_nothing", "--log-folder", str(logs)]
        nvsmi = [gcm, "check-nvidia-smi", *common]
        for c in (
            "gpu_num",
            "gpu_temperature",
            "gpu_retired_pages",
            "ecc_uncorrected_volatile_total",
            "row_remap_pending",
            "row_remap_failed",
            "vbios_mismatch",
        ):
            nvsmi += ["-c", c]
        nvsmi += [
            "--gpu_num",
            "8",
            "--gpu_temperature_threshold",
            "85",
            "--gpu_vbios",
            "96.00.99.00.01",
        ]
        gcm_runs = [
            nvsmi,
            [gcm, "check-syslogs", "xid", *common],
            [gcm, "check-ib", "check-ibstat", *common],
        ]
        dolmen = [
            sys.executable,
            "-m",
            "dolmen.cli.main",
            "validate",
            "--level",
            "quick",
            "--from",
            str(tree),
            "--json",
        ]
        denv = {**os.environ, "PYTHONPATH": str(REPO / "src")}
        # warm both (page cache, .pyc) before measuring
        for argv in gcm_runs:
            _, rc = timed(argv, genv, work)
            print(f"gcm {' '.join(argv[1:3])}: exit {rc}", file=sys.stderr)
        _, rc = timed(dolmen, denv, work)
        print(f"dolmen validate --level quick: exit {rc}", file=sys.stderr)
        d_times, g_times = [], []
        for _ in range(args.runs):
            d_times.append(timed(dolmen, denv, work)[0])
            g_times.append(sum(timed(argv, genv, work)[0] for argv in gcm_runs))
        d, g = statistics.median(d_times), statistics.median(g_times)
        print(f"8-GPU H100 host tree, {args.runs} runs each, median wall time of whole processes")
        for label, med, runs in (
            ("dolmen validate --level quick", d, d_times),
            ("GCM, 3 comparable invocations", g, g_times),
        ):
            print(f"  {label} : {med:.3f} s  (min {min(runs):.3f}, max {max(runs):.3f})")
        print(f"  ratio GCM / dolmen            : {g / d:.1f}x  (target >= {TARGET_RATIO:g}x)")
        print(f"  dolmen vs 0.3 s target        : {d / TARGET_S:.2f} of the budget")
        return 0 if d < TARGET_S and g / d >= TARGET_RATIO else 1
    finally:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())

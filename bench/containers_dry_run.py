"""Start-up cost of `dolmen containers run --dry-run`: whole processes against a bare
`python -c pass`, same run, same interpreter, bytecode cached.

    .venv/bin/python bench/containers_dry_run.py [--runs N]

The dry run is what people and job scripts call to see the command before every launch,
and `containers run` itself pays the same before the container starts: the runtimes
found on the PATH (no --version runs), the CDI specs (PyYAML), the RDMA nodes and the
limits, then the plan. Each command runs with a bytecode cache of its own
(PYTHONPYCACHEPREFIX in a temporary folder, filled by two warm-up runs). Printed: each
median (wall clock and CPU time, N runs interleaved), the ratio to the bare start, and
whether issue 11's target (at most 8x the bare start, wall clock) is met; exit 1 when
it is missed.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))
TARGET_RATIO = 8.0
ENTRY = "import sys; from dolmen.cli.main import main; sys.exit(main())"
ARGS = ["containers", "run", "--dry-run", "nvcr.io/nvidia/pytorch:24.05-py3", "--", "python"]

from bench.startup import interleaved, start_env  # noqa: E402


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=30)
    args = parser.parse_args()
    commands = {
        "bare python -c pass": [sys.executable, "-c", "pass"],
        "containers run --dry-run": [sys.executable, "-c", ENTRY, *ARGS],
    }
    with tempfile.TemporaryDirectory(prefix="dolmen-bench-containers-") as tmp:
        walls, cpus = interleaved(commands, start_env(Path(tmp)), args.runs)
    bare_w, bare_c = walls["bare python -c pass"], cpus["bare python -c pass"]
    print(f"{args.runs} runs each, interleaved; medians")
    for name in commands:
        w, c = walls[name], cpus[name]
        print(
            f"  {name:<26} wall {w * 1000:7.1f} ms ({w / bare_w:4.1f}x)"
            f"   cpu {c * 1000:7.1f} ms ({c / max(bare_c, 1e-9):4.1f}x)"
        )
    ratio = walls["containers run --dry-run"] / bare_w
    ok = ratio <= TARGET_RATIO
    print(f"target: at most {TARGET_RATIO:.0f}x a bare start (wall): {'met' if ok else 'MISSED'}")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())

"""Start-up cost of `dolmen nccl env` and `dolmen topo`: whole processes on the 8-GPU rails
host tree against a bare `python -c pass`, same run, same interpreter, bytecode cached;
and how many hosts' PCI trees agree with their recorded `nvidia-smi topo -m`.

    .venv/bin/python bench/nccl_topo.py [--runs N] [--instructions]

`nccl env` runs where launches ask for it (containers run, the jobs backends, every
Slurm batch script on its node), `topo` where people look. The tree is
tests/hosts/h100-hgx-rails (8 GPUs, 9 HCAs, 4 NVSwitches), built into a temporary
folder. Timing is bench/startup.py's `timed` (wall clock and CPU time of one process).
Printed: each median (N runs, interleaved), its ratio to the bare start, whether issue
11's target (at most 8x the bare start, wall clock) is met (exit 1 when missed), then
the agreement count: every scenario and recorded tree holding both a PCI tree and
`nvidia-smi topo -m`, with its cells and affinities compared and agreeing.
With --instructions, each command also runs once under valgrind's callgrind (bench/startup.py
``instructions``): its user-space instruction count and ratio, which the load of a shared
machine does not move.
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

from bench.startup import instructions, interleaved, start_env  # noqa: E402


def agreement(work: Path) -> list[tuple[str, int, int]]:
    """(host, compared, agreed) for every host with both sources."""
    from tests.facts.test_topology_tree import _hosts_with_both

    from dolmen.facts.topology import collect, collect_tree, compare
    from dolmen.host.tree import TreeHost

    out = []
    for name, tree in _hosts_with_both(work):
        host = TreeHost(tree)
        matrix = collect(host).matrix
        if matrix is None:
            continue
        _, compared, agreed = compare(collect_tree(host), matrix)
        out.append((name, compared, agreed))
    return out


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=20)
    parser.add_argument(
        "--instructions", action="store_true", help="also count instructions (valgrind)"
    )
    args = parser.parse_args()
    from tests.hosts.scenarios import build

    with tempfile.TemporaryDirectory(prefix="dolmen-bench-nccl-") as tmp:
        tree = build("h100-hgx-rails", Path(tmp) / "tree")
        commands = {
            "bare python -c pass": [sys.executable, "-c", "pass"],
            "nccl env": [sys.executable, "-c", ENTRY, "nccl", "env", "--from", str(tree)],
            "topo": [sys.executable, "-c", ENTRY, "topo", "--from", str(tree)],
        }
        env = start_env(Path(tmp))
        walls, cpus = interleaved(commands, env, args.runs)
        counted = (
            {k: instructions(v, env) for k, v in commands.items()} if args.instructions else {}
        )
        agreed = agreement(Path(tmp) / "both")
    bare_w, bare_c = walls["bare python -c pass"], cpus["bare python -c pass"]
    print(f"8-GPU rails host tree, {args.runs} runs each, interleaved; medians")
    ok = True
    for name in commands:
        w, c = walls[name], cpus[name]
        print(
            f"  {name:<22} wall {w * 1000:7.1f} ms ({w / bare_w:4.1f}x)"
            f"   cpu {c * 1000:7.1f} ms ({c / max(bare_c, 1e-9):4.1f}x)"
        )
        ok = ok and (name.startswith("bare") or w / bare_w <= TARGET_RATIO)
    floor = counted.get("bare python -c pass")
    for name, n in counted.items():
        shown = f"{n / 1e6:7.1f} M ({n / floor:4.1f}x)" if n and floor else "not counted"
        print(f"  {name:<22} instructions (callgrind, user space, one run) {shown}")
    print(f"target: at most {TARGET_RATIO:.0f}x a bare start (wall): {'met' if ok else 'MISSED'}")
    print(f"PCI tree vs recorded nvidia-smi topo -m: {len(agreed)} host(s) with both")
    for name, compared, same in agreed:
        print(f"  {Path(name).name}: {same} of {compared} cells and affinities agree")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())

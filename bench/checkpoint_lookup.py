"""Restart lookup on a 50-shard checkpoint: size-only verification against the old full hash.

    .venv/bin/python bench/checkpoint_lookup.py [--dir DIR] [--shards 50] [--mib 4] [--rounds 5]

One real torch.distributed.checkpoint save (one rank, one file per tensor: ``--shards``
files of ``--mib`` MiB each) and the same bytes in dolmen's one-writer format, each as
the newer of two steps with a partial newer one beside them (what a crash leaves).
Then, alternately, ``--rounds`` times each: ``checkpoint.latest`` as a restart calls it
now (``verify="size"``: a stat per shard) and as it did before (``verify="hash"``: every
byte re-read and hashed). Prints the medians and the ratio old / new. The files are in
the page cache (they were just written), so the hash lookup is at its fastest here: on a
cold parallel file system the ratio is larger. DIR defaults to a fresh folder under
/var/tmp.
"""

from __future__ import annotations

import argparse
import shutil
import statistics
import sys
import tempfile
import time
import warnings
from pathlib import Path

from dolmen.jobs import checkpoint, checkpoint_dcp


def build(root: Path, shards: int, mib: int) -> tuple[Path, Path]:
    """A DCP folder and a one-writer folder, each with steps 2 and 3 complete and 4 partial."""
    import torch

    dcp_root, one_root = root / "dcp", root / "one-writer"
    numel = mib * (1 << 20) // 4
    state = {f"layer{i}.weight": torch.rand(numel) for i in range(shards)}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)  # "assuming ... a single process"
        for step in (2, 3, 4):
            path = checkpoint_dcp.save(dcp_root, step, state, single_file_per_rank=False)
    (path / ".metadata").unlink()  # step 4: the coordinator died before its marker
    payload = {p.name: p.read_bytes() for p in sorted(path.iterdir())}
    for step in (2, 3):
        checkpoint.save(one_root, step, payload)
    (one_root / "step-000000000004").mkdir()  # renamed, no COMPLETE yet
    return dcp_root, one_root


def timed(root: Path, verify: checkpoint.Verify) -> float:
    t0 = time.perf_counter()
    ck = checkpoint.latest(root, verify=verify)
    took = time.perf_counter() - t0
    if ck is None or ck.step != 3:
        sys.exit(f"lookup in {root} with verify={verify} found {ck}, not step 3")
    return took


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--dir", help="folder to write the checkpoints in")
    parser.add_argument("--shards", type=int, default=50)
    parser.add_argument("--mib", type=int, default=4, help="MiB per shard")
    parser.add_argument("--rounds", type=int, default=5)
    args = parser.parse_args()
    root = Path(args.dir or tempfile.mkdtemp(prefix="dolmen-ckpt-bench-", dir="/var/tmp"))
    try:
        t0 = time.perf_counter()
        dcp_root, one_root = build(root, args.shards, args.mib)
        total = args.shards * args.mib
        print(
            f"{args.shards} shards x {args.mib} MiB ({total} MiB a step) written in"
            f" {time.perf_counter() - t0:.1f} s under {root}"
        )
        runs: dict[str, list[float]] = {}
        for _ in range(args.rounds):
            for label, where, verify in (
                ("dcp size", dcp_root, "size"),
                ("one-writer size", one_root, "size"),
                ("one-writer hash (old)", one_root, "hash"),
            ):
                runs.setdefault(label, []).append(timed(where, verify))  # type: ignore[arg-type]
        med = {k: statistics.median(v) for k, v in runs.items()}
        for label, value in med.items():
            print(f"  {label:<24} median {value * 1000:9.2f} ms over {args.rounds} lookups")
        old, one = med["one-writer hash (old)"], med["one-writer size"]
        print(
            f"ratio old full-hash / new size-only lookup: one-writer {old / one:.0f}x,"
            f" dcp {old / med['dcp size']:.0f}x ({total} MiB a step, page cache warm)"
        )
    finally:
        if not args.dir:
            shutil.rmtree(root, ignore_errors=True)


if __name__ == "__main__":
    main()

"""dolmen's built-in sequential read against fio's, on the same file, in one run (not a test).

    .venv/bin/python bench/storage_vs_fio.py [--dir DIR] [--mib N] [--seconds S] [--rounds R]

One file of N MiB is written once (the built-in engine's direct sequential write), then
read R times by each, alternately (fio, built-in, fio, ...), S seconds a read, both with
O_DIRECT, 1 MiB blocks and four requests in flight (fio: libaio iodepth=4; built-in: four
threads on interleaved blocks). Prints each round and the ratio of the medians; the
target is within 10% (0.90 or more). DIR defaults to a fresh folder under /var/tmp (a
disk, not a tmpfs).
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import subprocess
import sys
import tempfile

from dolmen.workloads import storage_builtin as builtin
from dolmen.workloads.storage_fio import fio_argv, parse_fio_json


def fio_read(path: str, size: int, seconds: float) -> float:
    """fio's sequential direct read of ``path`` for ``seconds``, bytes per second."""
    argv = fio_argv(path, size, seconds, phases=("seq_read",))
    done = subprocess.run(argv, capture_output=True, text=True, check=False)
    report = parse_fio_json(done.stdout)
    if report.problem or report.jobs["seq_read"].error:
        sys.exit(f"fio failed: {report.problem or report.jobs['seq_read']}: {done.stderr.strip()}")
    return report.jobs["seq_read"].read_bytes_s


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--dir", help="folder on the file system to measure")
    parser.add_argument("--mib", type=int, default=512, help="file size in MiB")
    parser.add_argument("--seconds", type=float, default=3.0, help="seconds per read")
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args()
    if shutil.which("fio") is None:
        sys.exit("fio is not installed (Debian: apt-get install fio)")
    folder = args.dir or tempfile.mkdtemp(prefix="dolmen-io-bench-", dir="/var/tmp")
    path = os.path.join(folder, f".dolmen-io-bench-{os.getpid()}.tmp")
    size = args.mib << 20
    fd, direct = builtin.open_file(path)
    try:
        write = builtin.seq_write(fd, size)
        print(
            f"file {args.mib} MiB on {folder}: direct={direct}, written at {write / 1e6:.0f} MB/s"
        )
        fio, ours = [], []
        for r in range(args.rounds):
            fio.append(fio_read(path, size, args.seconds))
            builtin.drop_cache(fd, direct)
            ours.append(builtin.seq_read(fd, size, args.seconds))
            print(
                f"round {r + 1}: fio {fio[-1] / 1e6:.0f} MB/s, built-in {ours[-1] / 1e6:.0f} MB/s"
            )
        ratio = statistics.median(ours) / statistics.median(fio)
        verdict = "within 10%" if ratio >= 0.9 else "MORE than 10% below fio"
        print(f"built-in / fio sequential read (medians): {ratio:.2f} ({verdict})")
    finally:
        os.close(fd)
        os.unlink(path)
        if not args.dir:
            os.rmdir(folder)


if __name__ == "__main__":
    main()

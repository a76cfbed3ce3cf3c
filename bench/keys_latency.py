"""Key wrap/unwrap latency per provider: file, OpenBao transit, SoftHSM2 (issue 12's figure).

    .venv/bin/python bench/keys_latency.py [--runs N]

Each provider wraps a fresh 32-byte data key and unwraps it again, N times, through the
same KeyProvider calls that `crypt unlock` makes (on_release set, as the CLI sets it,
to a no-op here: the audit append is measured by bench/audit_bench.py). The file
provider runs in the same process and the same run, and is the peer: printed are the
median and p95 of each call, and each provider's ratio against the file provider.
OpenBao is a dev server on 127.0.0.1 (in memory, HTTP on loopback: a production server
adds TLS and its storage), SoftHSM2 a private token in a tmp folder; both are started
here and stopped by their PID. A provider whose service is absent is reported as
skipped, not as fast.
"""

from __future__ import annotations

import argparse
import contextlib
import os
import statistics
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))
sys.path.insert(0, str(REPO / "src"))

from dolmen.keys import KeyProvider, KeyRelease  # noqa: E402
from dolmen.keys.providers import open_provider  # noqa: E402
from dolmen.keys.settings import KeySettings  # noqa: E402


def _released(_release: KeyRelease) -> None:
    pass


def measure(provider: KeyProvider, runs: int) -> dict[str, list[float]]:
    """Seconds per call of wrap and unwrap (after 5 warm-up pairs)."""
    times: dict[str, list[float]] = {"wrap": [], "unwrap": []}
    for i in range(runs + 5):
        key = os.urandom(32)
        t0 = time.perf_counter()
        wrapped = provider.wrap(key, context=f"vol-{i % 4}")
        t1 = time.perf_counter()
        assert provider.unwrap(wrapped, purpose="bench") == key
        t2 = time.perf_counter()
        if i >= 5:
            times["wrap"].append(t1 - t0)
            times["unwrap"].append(t2 - t1)
    return times


def _p95(values: list[float]) -> float:
    return sorted(values)[int(0.95 * (len(values) - 1))]


@contextlib.contextmanager
def providers(root: Path) -> Iterator[dict[str, Callable[[], KeyProvider] | str]]:
    """The three providers (or why one is skipped), their services running meanwhile."""
    from tests.keys.services import start_openbao, start_softhsm

    found: dict[str, Callable[[], KeyProvider] | str] = {}
    file_settings = KeySettings(kek_file=root / "kek", signing_key_file=root / "sign.key")
    found["file"] = lambda: open_provider(file_settings, on_release=_released)
    with contextlib.ExitStack() as stack:
        try:
            (root / "bao").mkdir()
            bao = stack.enter_context(start_openbao(root / "bao"))
            vault = bao.settings()
            found["openbao"] = lambda: open_provider(vault, on_release=_released)
        except (RuntimeError, ImportError) as e:
            found["openbao"] = f"skipped: {e}"
        try:
            (root / "hsm").mkdir()
            token = stack.enter_context(start_softhsm(root / "hsm"))
            hsm = token.settings()
            found["softhsm2"] = lambda: open_provider(hsm, on_release=_released)
        except (RuntimeError, ImportError) as e:
            found["softhsm2"] = f"skipped: {e}"
        yield found


def main() -> int:
    ap = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    ap.add_argument("--runs", type=int, default=300)
    args = ap.parse_args()
    results: dict[str, dict[str, list[float]]] = {}
    with tempfile.TemporaryDirectory(prefix="dkl-") as tmp, providers(Path(tmp)) as found:
        for name, make in found.items():
            if isinstance(make, str):
                print(f"{name:<9} {make}")
                continue
            results[name] = measure(make(), args.runs)
    peer = {op: statistics.median(results["file"][op]) for op in ("wrap", "unwrap")}
    print(f"\n{args.runs} wrap+unwrap pairs of a 32-byte data key per provider (one run)")
    print(f"{'provider':<9} {'op':<7} {'median':>10} {'p95':>10} {'x file':>8}")
    for name, times in results.items():
        for op, values in times.items():
            med = statistics.median(values)
            print(
                f"{name:<9} {op:<7} {med * 1e6:>8.1f}us {_p95(values) * 1e6:>8.1f}us "
                f"{med / peer[op]:>7.1f}x"
            )
    return 0


if __name__ == "__main__":
    sys.exit(main())

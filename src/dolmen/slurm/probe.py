"""Is a slurmd answering? ``python -m dolmen.slurm.probe ADDR:PORT...``

Prints ``ADDR:PORT ok|refused|timeout|error`` per target. A TCP connect to
slurmd's port tells within milliseconds that the daemon is gone (the kernel
answers "connection refused"), where slurmctld only notices at its next ping
and declares the node DOWN after SlurmdTimeout. It runs as a command so that
it runs wherever Slurm's client commands run (the watcher's ``prefix``).
"""

from __future__ import annotations

import socket
import sys

TIMEOUT_S = 1.0


def probe(addr: str, port: int, timeout: float = TIMEOUT_S) -> str:
    """``ok``, ``refused``, ``timeout`` or ``error: <why>`` for one TCP connect."""
    try:
        with socket.create_connection((addr, port), timeout=timeout):
            return "ok"
    except ConnectionRefusedError:
        return "refused"
    except TimeoutError:
        return "timeout"
    except OSError as e:
        return f"error: {e.strerror or e}"


def parse_output(text: str) -> dict[str, str]:
    """``ADDR:PORT result`` lines -> {"ADDR:PORT": result}; other lines are left out."""
    out: dict[str, str] = {}
    for line in text.splitlines():
        target, _, result = line.strip().partition(" ")
        if ":" in target and result:
            out[target] = result
    return out


def main(argv: list[str] | None = None) -> int:
    """Probe every ``ADDR:PORT`` given; exit 0 when all answered, 1 otherwise, 2 bad usage."""
    args = sys.argv[1:] if argv is None else argv
    bad = 0
    for target in args:
        addr, _, port = target.rpartition(":")
        if not addr or not port.isdigit():
            print(f"{target} error: not ADDR:PORT")
            return 2
        result = probe(addr, int(port))
        bad += result != "ok"
        print(f"{target} {result}", flush=True)
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())

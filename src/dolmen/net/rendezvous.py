"""A Slurm job's rendezvous port (torchrun's MASTER_PORT): one rule that every rank, the
batch script and each node's prolog derive alike, with no word between them (docs/net.md
"A job's rendezvous port").

    port = first + (job id + 997 x restart count) mod size       over first..last

``first..last`` is the network policy's ``[jobs] rendezvous`` range when ``[net] policy``
is set (so the prolog can grant each job its own port), else 20000-39999. A requeued job
gets a new port (997 is prime: each restart moves it unless the range has exactly 997
ports), so the last run's sockets in TIME_WAIT are not in the way; jobs whose ids are
fewer than ``size`` apart, at the same restart count, get different ports.

``bash_rule`` is the same rule as bash arithmetic, for the batch script (an image need
not hold dolmen); tests/net/test_rendezvous.py runs both over many ids and restarts.
"""

from __future__ import annotations

from dolmen.net.model import PortRange

DEFAULT = PortRange(20000, 39999)  # without a network policy: out of the usual services' way
STEP = 997


def rendezvous_port(job_id: str, restarts: int, ports: PortRange = DEFAULT) -> int:
    """The rendezvous port of Slurm job ``job_id`` after ``restarts`` requeues, in
    ``ports``. A Slurm id is digits; anything else counts as the sum of its bytes."""
    number = int(job_id) if job_id.isascii() and job_id.isdigit() else sum(job_id.encode())
    return ports.first + (number + STEP * restarts) % (ports.last - ports.first + 1)


def bash_rule(ports: PortRange = DEFAULT) -> str:
    """``rendezvous_port`` as a bash arithmetic expansion of SLURM_JOB_ID and
    DOLMEN_RESTART_COUNT (``10#``: decimal even with a leading zero, as ``int`` reads it)."""
    size = ports.last - ports.first + 1
    return f"$(({ports.first} + (10#$SLURM_JOB_ID + {STEP} * 10#$DOLMEN_RESTART_COUNT) % {size}))"

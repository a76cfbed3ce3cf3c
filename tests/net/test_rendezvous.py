"""A Slurm job's rendezvous port (dolmen.net.rendezvous): the rule in Python, as the
launcher and the prolog use it, and in bash, as the batch script runs it. The two must
give the same port, or the prolog grants one port and the ranks listen on another."""

from __future__ import annotations

import shutil
import subprocess

import pytest

from dolmen.jobs.slurm.sbatch import SbatchOptions, render
from dolmen.jobs.spec import JobSpec
from dolmen.net.model import PortRange
from dolmen.net.rendezvous import DEFAULT, rendezvous_port

RANGES = [DEFAULT, PortRange(29500, 29563), PortRange(29500, 29500), PortRange(40000, 40996)]
IDS = ["1", "42", "997", "19999", "20000", "123456", "4294967294", "0123"]
RESTARTS = [0, 1, 2, 7, 100]


def test_without_a_policy_jobs_keep_the_ports_they_had() -> None:
    """The default range is the rule before it took one: 20000 + (id + 997 r) % 20000."""
    assert rendezvous_port("42", 0) == 20042
    assert rendezvous_port("123456", 2) == 25450  # 123456 + 1994 = 125450
    assert rendezvous_port("", 0) == 20000 and rendezvous_port("a", 0) == 20097  # ord("a")


def test_a_requeue_moves_the_port_and_it_stays_in_its_range() -> None:
    r = PortRange(29500, 29563)
    ports = [rendezvous_port("123456", n, r) for n in range(64)]
    assert len(set(ports)) == 64 and all(29500 <= p <= 29563 for p in ports)
    # jobs fewer than the range's size apart (same restart count) never share a port
    assert len({rendezvous_port(str(i), 3, r) for i in range(5000, 5064)}) == 64
    assert rendezvous_port("5000", 0, r) == rendezvous_port("5064", 0, r)  # 64 apart: shared


def _script_lines(rendezvous: PortRange, image: bool) -> list[str]:
    """The batch script's lines that set the port (and, with an image, MASTER_PORT)."""
    spec = JobSpec(name="t", command=("true",), nodes=2, image="img" if image else None)
    script = render(spec, SbatchOptions(rendezvous=rendezvous))
    keep = ("export DOLMEN_RESTART_COUNT=", "export DOLMEN_MASTER_PORT=", "MASTER_PORT=")
    lines = [x for x in script.splitlines() if x.startswith(keep)]
    assert len(lines) == (3 if image else 2), lines
    return lines


@pytest.mark.skipif(shutil.which("bash") is None, reason="bash is not installed")
@pytest.mark.parametrize("image", [False, True])
@pytest.mark.parametrize("rendezvous", RANGES, ids=str)
def test_the_batch_script_gives_the_port_python_gives(rendezvous: PortRange, image: bool) -> None:
    lines = _script_lines(rendezvous, image)
    show = "$MASTER_PORT" if image else "$DOLMEN_MASTER_PORT"
    body = "\n".join(lines)
    loop = (
        "while read -r SLURM_JOB_ID SLURM_RESTART_COUNT; do\n"
        "  unset DOLMEN_MASTER_PORT MASTER_PORT\n"
        f"{body}\n"
        f'  echo "{show}"\n'
        "done\n"
    )
    cases = [(i, r) for i in IDS for r in RESTARTS]
    stdin = "".join(f"{i} {r}\n" for i, r in cases)
    done = subprocess.run(
        ["bash", "-euc", loop], input=stdin, capture_output=True, text=True, check=True
    )
    expected = [str(rendezvous_port(i, r, rendezvous)) for i, r in cases]
    assert done.stdout.split() == expected


@pytest.mark.skipif(shutil.which("bash") is None, reason="bash is not installed")
def test_the_batch_script_keeps_a_port_the_job_sets_and_counts_a_first_run_as_zero() -> None:
    lines = _script_lines(PortRange(29500, 29563), image=False)
    env = {"PATH": "/usr/bin:/bin", "SLURM_JOB_ID": "77"}
    show = ["bash", "-euc", "\n".join([*lines, 'echo "$DOLMEN_MASTER_PORT"'])]
    assert subprocess.run(show, env=env, capture_output=True, text=True).stdout == "29513\n"
    kept = {**env, "DOLMEN_MASTER_PORT": "31000"}
    assert subprocess.run(show, env=kept, capture_output=True, text=True).stdout == "31000\n"

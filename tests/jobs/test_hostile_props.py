"""Issue 9 property tests for jobs: random control characters in every string field of a
JobSpec never reach a script, manifest or command line; random SIGKILLs of the supervisor
never leave a process of the job behind after cancel.

Each test appends its trial counts to $DOLMEN_I9_FIGURES when set (the note quotes them).
"""

from __future__ import annotations

import json
import os
import random
import shlex
import signal
import sys
import time
from dataclasses import replace
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from dolmen.errors import UsageError
from dolmen.host.process import JobTree, pid_alive
from dolmen.jobs.backend import JobState
from dolmen.jobs.kubernetes.backend import KubernetesBackend
from dolmen.jobs.local.backend import LocalBackend
from dolmen.jobs.local.tree import MARKER_ENV
from dolmen.jobs.slurm.backend import SlurmBackend
from dolmen.jobs.spec import JobSpec

CONTROLS = [chr(c) for c in (*range(0x20), 0x7F, *range(0x80, 0xA0))]
BASE = JobSpec(
    name="job",
    command=("python", "train.py", "--lr", "0.1"),
    image="nvcr.io/nvidia/pytorch:24.05-py3",
    checkpoint_dir="/shared/ckpt",
    account="research",
    user="alice",
    workdir="/shared/src",
    env={"NCCL_DEBUG": "WARN"},
    exclude_nodes=("gpu-07",),
    partition="gpu",
    qos="high",
    constraint="ib&h100",
    mem="64G",
    reservation="maint",
)
FIELDS = [
    "name",
    "command[0]",
    "command[1]",
    "image",
    "checkpoint_dir",
    "account",
    "user",
    "workdir",
    "env.NCCL_DEBUG",
    "exclude_nodes[0]",
    "partition",
    "qos",
    "constraint",
    "mem",
    "reservation",
]
QUOTED = ("command[", "env.")


def record(name: str, **figures: int) -> None:
    path = os.environ.get("DOLMEN_I9_FIGURES")
    if path:
        with open(path, "a") as f:
            f.write(json.dumps({"test": name, **figures}) + "\n")


def inject(spec: JobSpec, field: str, value: str) -> JobSpec:
    if field.startswith("command["):
        i = int(field[8:-1])
        cmd = list(spec.command)
        cmd[i] = value
        return replace(spec, command=tuple(cmd))
    if field.startswith("exclude_nodes["):
        return replace(spec, exclude_nodes=(value,))
    if field.startswith("env."):
        return replace(spec, env={field[4:]: value})
    return replace(spec, **{field: value})


def value_of(spec: JobSpec, field: str) -> str:
    if field.startswith("command["):
        return spec.command[int(field[8:-1])]
    if field.startswith("exclude_nodes["):
        return spec.exclude_nodes[0]
    if field.startswith("env."):
        return spec.env[field[4:]]
    return str(getattr(spec, field))


def artifacts(spec: JobSpec) -> dict[str, str]:
    out: dict[str, str] = {}
    for backend in (SlurmBackend(), KubernetesBackend(), LocalBackend()):
        out.update(backend.plan(spec).artifacts)
    return out


TRIALS = {"tried": 0, "refused_with_field": 0, "quoted_through": 0, "leaked": 0}


@settings(max_examples=600, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    field=st.sampled_from(FIELDS),
    control=st.one_of(st.sampled_from(CONTROLS), st.sampled_from(["\t", "\n"])),
    where=st.floats(0, 1),
    payload=st.sampled_from(["", "rm -rf /", "#SBATCH --uid=0", "\x1b]0;owned\x07"]),
)
def test_control_characters_never_reach_a_script(
    field: str, control: str, where: float, payload: str
) -> None:
    base = value_of(BASE, field)
    at = int(where * len(base))
    value = base[:at] + control + payload + base[at:]
    spec = inject(BASE, field, value)
    TRIALS["tried"] += 1
    quoted_ok = field.startswith(QUOTED) and control in "\t\n" and "\x1b" not in payload
    if not quoted_ok:
        with pytest.raises(UsageError) as e:
            artifacts(spec)
        assert e.value.message.startswith(field if field != "name" else "name")
        TRIALS["refused_with_field"] += 1
        return
    # A newline or tab in a command argument or an environment value is quoted where it
    # lands: the script's shell words give the value back exactly.
    script = SlurmBackend().plan(spec).artifacts["job.sbatch"]
    if field.startswith("command["):
        srun = script[script.index("srun --label") : script.index(" &\nranks=$!")]
        words = shlex.split(srun)
        # the image runs through pyxis: the rank wrapper's $0 comes before the command
        sep = "dolmen-rank" if spec.image else "--"
        assert words[words.index(sep) + 1 :] == list(spec.command)
    else:
        key = field[4:]
        start = script.index(f"export {key}=")
        words = shlex.split(script[start:], posix=True)
        assert words[1] == f"{key}={value}"
    manifest = artifacts(spec)
    assert all("\x1b" not in text for text in manifest.values())
    TRIALS["quoted_through"] += 1


def test_control_character_figures() -> None:
    """Runs after the property above (file order): the counts for the note."""
    assert TRIALS["leaked"] == 0
    record("control-characters", **TRIALS)


# --- random SIGKILL of the supervisor -------------------------------------------------
FORKER = """
import os, signal, sys, time
for i in range(2):
    if os.fork() == 0:
        signal.signal(signal.SIGTERM, signal.SIG_IGN)
        if i:
            os.setsid()
        if os.fork() == 0:  # a great-grandchild too
            signal.signal(signal.SIGTERM, signal.SIG_IGN)
            time.sleep(600)
        time.sleep(600)
        os._exit(0)
time.sleep(600)
"""


def test_random_sigkill_of_the_supervisor_then_cancel_leaves_nothing(
    state: Path, tmp_path: Path
) -> None:
    trials = int(os.environ.get("DOLMEN_I9_KILL_TRIALS", "12"))
    rng = random.Random(int(os.environ.get("DOLMEN_I9_SEED", "9")))
    survivors = 0
    local = LocalBackend(poll=0.02, stop_grace=0.5)
    for n in range(trials):
        spec = JobSpec(
            name=f"k{n}",
            command=(sys.executable, "-c", FORKER),
            procs_per_node=rng.choice([1, 2, 3]),
        )
        job = local.submit(spec)
        marker = str(local.store.get(job.job_id).options["marker"])
        time.sleep(rng.uniform(0.0, 1.5))  # before, while or after the ranks start and fork
        sup = local.store.get(job.job_id).supervisor_pid
        if sup and pid_alive(sup):
            os.kill(sup, signal.SIGKILL)
        assert local.cancel(job.job_id).state in (JobState.CANCELLED, JobState.FAILED)
        left = JobTree(MARKER_ENV, marker).pids()
        survivors += len(left)
        for pid in left:  # never leave them to the next test
            os.kill(pid, signal.SIGKILL)
    record("supervisor-sigkill", trials=trials, survivors=survivors)
    assert survivors == 0

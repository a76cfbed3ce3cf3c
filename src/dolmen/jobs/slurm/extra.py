"""The ``[slurm] extra`` passthrough: more sbatch options, one per item, checked.

The job file's ``[slurm] extra`` and dolmen.toml's ``[slurm] extra`` add options dolmen
has no flag for (submitit's ``slurm_additional_parameters``): ``--gres-flags=enforce-binding``,
``--mail-type=END``. Each item lands on an ``#SBATCH`` line of its own, so an item must be
exactly one long option: ``--name`` or ``--name=value``, the value without whitespace,
quotes or shell metacharacters (a newline would write a line of shell into the script; a
space would smuggle a second option past this check). Options dolmen writes itself are
refused with the flag or key that sets them: two ``--nodes`` lines would leave the job's
size to the order sbatch reads them in.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from dolmen.errors import UsageError

# --name[=value]: sbatch's long options are lowercase words joined by '-'.
OPTION = re.compile(r"^--([a-z][a-z0-9-]*)(=([A-Za-z0-9_.,:/@%+=*\[\]()&|!-]*))?$")

# What dolmen renders, and what sets it instead.
OWNED = {
    "job-name": "--name / name",
    "nodes": "--nodes / nodes",
    "ntasks-per-node": "--procs-per-node / procs_per_node",
    "gpus-per-node": "--gpus-per-node / gpus_per_node",
    "requeue": "dolmen (always on)",
    "no-requeue": "dolmen (requeue is how recovery works)",
    "open-mode": "dolmen (append)",
    "output": "slurm_log_dir of [jobs]",
    "error": "slurm_log_dir of [jobs]",
    "time": "--time-limit / time_limit",
    "signal": "dolmen (USR2 before the time limit)",
    "exclude": "exclude_nodes",
    "account": "--account / account",
    "partition": "--partition / partition",
    "qos": "--qos / qos",
    "constraint": "--constraint / constraint",
    "mem": "--mem / mem",
    "cpus-per-task": "--cpus-per-task / cpus_per_task",
    "exclusive": "--exclusive / exclusive",
    "reservation": "--reservation / reservation",
    "chdir": "workdir",
    "wrap": "the command after `--`",
}


def check_extra(items: Sequence[object], where: str) -> None:
    """Refuse an item that is not one checked long option (module docstring), naming it."""
    for i, item in enumerate(items):
        if not isinstance(item, str):
            raise UsageError(f"{where}[{i}] must be text, not {type(item).__name__}")
        shown = item.encode("unicode_escape").decode()[:80]
        m = OPTION.match(item)
        if m is None:
            raise UsageError(
                f"{where}[{i}] {shown!r} is not one sbatch option",
                hint="one --name or --name=value per item, no spaces, quotes or shell"
                ' characters: extra = ["--mail-type=END", "--gres-flags=enforce-binding"]',
            )
        owner = OWNED.get(m.group(1))
        if owner:
            raise UsageError(
                f"{where}[{i}] {shown!r}: dolmen writes --{m.group(1)} itself: set it with {owner}"
            )

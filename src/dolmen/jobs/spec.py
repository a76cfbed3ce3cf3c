"""What a user asks to run: a command or an image on N nodes with G GPUs each."""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, field

from dolmen.errors import UsageError
from dolmen.jobs.kubernetes.options import PodOptions
from dolmen.jobs.slurm.extra import check_extra

# Kubernetes object names and Slurm job names both accept this; longer names are cut
# by the backends that need it (a DNS label is at most 63 characters).
NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]{0,62}$")

# Every string of a spec lands in an sbatch script, a manifest or a command line: a
# newline there writes a line of shell (issue 9 case 12). C0, DEL and C1 controls.
CONTROL = re.compile(r"[\x00-\x1f\x7f-\x9f]")
# The command's arguments and the environment's values are always quoted where they
# land (shlex in a script, JSON in a manifest, argv on a command line), and
# ``python -c`` takes a program with newlines and tabs: those two stay allowed there.
CONTROL_QUOTED = re.compile(r"[\x00-\x08\x0b-\x1f\x7f-\x9f]")
# An environment key is written unquoted (``export KEY=...``): a shell identifier.
ENV_KEY = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")

# Caps at submit, so a typo cannot fork without limit or fill memory (issue 9 case 9).
# The largest GPU clusters have about 10 000 nodes and 8-16 GPUs per node; Linux
# caps a node's processes (pid_max, nproc) long before 1024 ranks per node matter.
MAX_NODES = 16384
MAX_GPUS_PER_NODE = 64
MAX_PROCS_PER_NODE = 1024
MAX_RESTARTS = 10000
MAX_TIME_LIMIT_S = 366 * 86400
MAX_CPUS_PER_TASK = 4096

# The site words land on ``#SBATCH`` lines (and, for mem, a pod's memory request): the
# characters Slurm's own grammar uses, nothing a shell or a second line could read.
SITE_WORDS = (
    ("partition", re.compile(r"^[A-Za-z0-9_.-]+(,[A-Za-z0-9_.-]+)*$"), "a partition name (or a,b)"),
    ("qos", re.compile(r"^[A-Za-z0-9_.-]+(,[A-Za-z0-9_.-]+)*$"), "a QOS name"),
    ("reservation", re.compile(r"^[A-Za-z0-9_.-]+(,[A-Za-z0-9_.-]+)*$"), "a reservation name"),
    # features and Slurm's operators: & | , [ ] * digits (``ib&(h100|a100)``, ``[rack1*2]``)
    ("constraint", re.compile(r"^[A-Za-z0-9_.:&|,()\[\]*!-]+$"), "a feature expression"),
    ("mem", re.compile(r"^[0-9]{1,9}[KMGT]?$"), "a size such as 64G, 500M or 1T"),
)


@dataclass(frozen=True)
class JobSpec:
    """A training job, independent of where it runs.

    ``gpus_per_node == 0`` is a CPU job; ``procs_per_node`` then says how many
    ranks each node runs (default: one per GPU, or 1 without GPUs).
    ``elastic``: after a fault the job may restart on fewer nodes (never fewer
    than ``min_nodes``) when there is not enough healthy hardware for all of them.
    """

    name: str
    command: tuple[str, ...]
    nodes: int = 1
    gpus_per_node: int = 0
    procs_per_node: int | None = None
    image: str | None = None
    checkpoint_dir: str | None = None
    max_restarts: int = 0
    time_limit_s: int | None = None
    account: str | None = None
    user: str | None = None
    workdir: str | None = None
    env: Mapping[str, str] = field(default_factory=dict)
    exclude_nodes: tuple[str, ...] = ()
    partition: str | None = None
    elastic: bool = False
    min_nodes: int = 1
    # Site resources (docs/jobs-slurm.md): Slurm's own words; mem and cpus_per_task also
    # size a Kubernetes pod's requests.
    qos: str | None = None
    constraint: str | None = None
    mem: str | None = None  # per node, Slurm's --mem: 64G, 500M, 1T (a bare number is MB)
    cpus_per_task: int | None = None
    exclusive: bool = False
    reservation: str | None = None
    slurm_extra: tuple[str, ...] = ()  # [slurm] extra: more sbatch options, checked
    kubernetes: PodOptions = field(default_factory=PodOptions)
    # "encrypted": checkpoint_dir on fscrypt with a per-job key, shredded at the end (crypt/).
    scratch: str | None = None

    @property
    def ranks_per_node(self) -> int:
        """Processes per node: ``procs_per_node``, else one per GPU, else 1."""
        return self.procs_per_node or self.gpus_per_node or 1

    @property
    def world_size(self) -> int:
        """Total number of ranks."""
        return self.nodes * self.ranks_per_node

    @property
    def total_gpus(self) -> int:
        """GPUs the job holds while it runs (what quotas count)."""
        return self.nodes * self.gpus_per_node

    def strings(self) -> list[tuple[str, str]]:
        """Every string of the spec with the field it belongs to (``env.KEY``, ``command[2]``)."""
        found = [(f"command[{i}]", a) for i, a in enumerate(self.command)]
        found += [(f"exclude_nodes[{i}]", a) for i, a in enumerate(self.exclude_nodes)]
        found += [(f"env.{_safe(key)}", value) for key, value in self.env.items()]
        for label in ("name", "image", "checkpoint_dir", "account", "user", "workdir"):
            value = getattr(self, label)
            if value is not None:
                found.append((label, value))
        for label in ("partition", "qos", "constraint", "mem", "reservation"):
            value = getattr(self, label)
            if value is not None:
                found.append((label, value))
        found += [(f"slurm.extra[{i}]", a) for i, a in enumerate(self.slurm_extra)]
        return found

    def check(self) -> None:
        """Refuse a spec no backend could run, naming the field (UsageError)."""
        for key in self.env:
            if not isinstance(key, str) or not ENV_KEY.match(key):
                raise UsageError(
                    f"env key {_safe(str(key))!r} is not a variable name",
                    hint="letters, digits and '_', not starting with a digit",
                )
        for field_name, text in self.strings():
            if not isinstance(text, str):
                raise UsageError(f"{field_name} must be text, not {type(text).__name__}")
            quoted = field_name.startswith(("command[", "env."))
            bad = (CONTROL_QUOTED if quoted else CONTROL).search(text)
            if bad:
                raise UsageError(
                    f"{field_name} holds a control character (U+{ord(bad.group()):04X}): refused",
                    hint="newlines, tabs and escapes would write lines into the job's script;"
                    " remove them",
                )
        for label, pattern, what in SITE_WORDS:
            value = getattr(self, label)
            if value is not None and not pattern.match(value):
                raise UsageError(f"--{label.replace('_', '-')} {_safe(value)!r} is not {what}")
        if self.cpus_per_task is not None and not 1 <= self.cpus_per_task <= MAX_CPUS_PER_TASK:
            raise UsageError(
                f"--cpus-per-task must be 1 to {MAX_CPUS_PER_TASK}, not {self.cpus_per_task}"
            )
        if self.scratch not in (None, "encrypted") or (self.scratch and not self.checkpoint_dir):
            raise UsageError(
                f'scratch {_safe(str(self.scratch))!r}: only "encrypted", with a checkpoint_dir'
            )
        check_extra(self.slurm_extra, "the job file's [slurm] extra")
        self.kubernetes.check()
        if not NAME.match(self.name):
            raise UsageError(
                f"job name {self.name!r} is not valid",
                hint="use letters, digits, '-', '_' or '.', starting with a letter or digit",
            )
        if not self.command and not self.image:
            raise UsageError("no command given", hint="put the command after `--`")
        for label, value, low in (
            ("--nodes", self.nodes, 1),
            ("--gpus-per-node", self.gpus_per_node, 0),
            ("--max-restarts", self.max_restarts, 0),
            ("min_nodes", self.min_nodes, 1),
        ):
            if value < low:
                raise UsageError(f"{label} must be at least {low}, not {value}")
        for label, value, high in (
            ("--nodes", self.nodes, MAX_NODES),
            ("--gpus-per-node", self.gpus_per_node, MAX_GPUS_PER_NODE),
            ("--max-restarts", self.max_restarts, MAX_RESTARTS),
            ("--procs-per-node", self.procs_per_node or 1, MAX_PROCS_PER_NODE),
        ):
            if value > high:
                raise UsageError(
                    f"{label} {value} is above the limit of {high}",
                    hint=f"dolmen refuses more than {high} ({label}) at submit",
                )
        if self.procs_per_node is not None and self.procs_per_node < 1:
            raise UsageError(f"--procs-per-node must be at least 1, not {self.procs_per_node}")
        if self.time_limit_s is not None and self.time_limit_s < 1:
            raise UsageError("--time-limit must be at least one second")
        if self.time_limit_s is not None and self.time_limit_s > MAX_TIME_LIMIT_S:
            raise UsageError(f"--time-limit {self.time_limit_s}s is above the limit of 366 days")
        if self.min_nodes > self.nodes:
            raise UsageError(f"min_nodes ({self.min_nodes}) is above --nodes ({self.nodes})")
        g, r = self.gpus_per_node, self.ranks_per_node
        if g and g % r and r % g:
            raise UsageError(
                f"{r} processes per node cannot share {g} GPUs evenly",
                hint="make --procs-per-node divide --gpus-per-node, or the other way round",
            )


def _safe(text: str) -> str:
    """``text`` with its control characters shown as escapes (for a message)."""
    return CONTROL.sub(lambda m: f"\\x{ord(m.group()):02x}", text)

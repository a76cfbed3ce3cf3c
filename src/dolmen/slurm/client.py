"""Slurm's client commands through a ``Host``, with one clear error per way they fail.

``prefix`` and ``env`` say how to reach the cluster: nothing on a login node of
a real cluster; in the tests, a wrapper that enters the controller's network
namespace (``prefix=("/lab/bin/sl",)``) or ``prefix=("nsenter",
"--net=/run/netns/hub")`` with ``env={"SLURM_CONF": ...}``. The same code runs
in both cases.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from dolmen.errors import DolmenError, EnvironmentProblem, ServiceUnavailable, UsageError
from dolmen.host import CommandResult, Host, RunStatus
from dolmen.slurm import parse

# What Slurm clients print when slurmctld is not there (22.05 wording).
_UNREACHABLE = (
    "unable to contact slurm controller",
    "slurm controller not responding",
    "slurmctld(primary) at",  # scontrol ping: "... is DOWN"
    "zero bytes were transmitted or received",
    "socket timed out",
)
# What Slurm clients print when this host has no usable slurm.conf (22.05 wording):
# configless mode's DNS SRV lookup failed, or the file does not parse.
_NO_CONFIG = "could not establish a configuration source"
_BAD_CONFIG = "unable to process configuration file"
# sbatch rejections that are the user's input, not the machine.
_USER_ERRORS = (
    "invalid account",
    "invalid qos",
    "invalid partition",
    "requested node configuration is not available",
    "invalid generic resource",
    "invalid feature specification",
    "node count specification invalid",
    "invalid node name",
    "time limit",
)


class SlurmCommandError(EnvironmentProblem):
    """A Slurm command failed for a reason other than a dead controller."""


class SlurmClient:
    """Runs sbatch, squeue, sacct, scontrol, scancel, sinfo, sacctmgr on ``host``."""

    def __init__(
        self,
        host: Host,
        *,
        prefix: Sequence[str] = (),
        env: Mapping[str, str] | None = None,
        timeout: float = 30.0,
    ) -> None:
        self.host = host
        self.prefix = tuple(prefix)
        self.env = dict(env or {})
        self.timeout = timeout

    def argv(self, cmd: Sequence[str]) -> list[str]:
        """The full argv for ``cmd``: prefix, then ``env K=V`` when env is set, then cmd."""
        envs = ["env", *(f"{k}={v}" for k, v in sorted(self.env.items()))] if self.env else []
        return [*self.prefix, *envs, *cmd]

    def run(self, cmd: Sequence[str], *, timeout: float | None = None) -> CommandResult:
        """Run a command; whatever happened is in the result."""
        return self.host.run(self.argv(cmd), timeout=timeout or self.timeout)

    def out(self, cmd: Sequence[str], *, timeout: float | None = None) -> str:
        """stdout of a command that must succeed; a DolmenError says why it did not."""
        res = self.run(cmd, timeout=timeout)
        if res.ok:
            return res.stdout
        raise command_error(cmd, res)

    # --- controller and nodes ----------------------------------------------------------
    def ping(self) -> None:
        """ServiceUnavailable when slurmctld does not answer."""
        self.out(["scontrol", "ping"], timeout=15)

    def nodes(self, names: Sequence[str] = ()) -> list[parse.NodeInfo]:
        """Nodes as slurmctld sees them (all nodes when ``names`` is empty)."""
        cmd = ["scontrol", "show", "node", "-o"]
        if names:
            cmd.append(",".join(names))
        text = self.out(cmd)
        return [n for n in map(parse.node_info, parse.records(text)) if n is not None]

    def node(self, name: str) -> parse.NodeInfo | None:
        """One node, or None when slurmctld does not know it."""
        res = self.run(["scontrol", "show", "node", "-o", name])
        if not res.ok:
            text = (res.stderr + res.stdout).lower()
            if "invalid node name" in text or "not found" in text:
                return None
            raise command_error(["scontrol", "show", "node"], res)
        found = [n for n in map(parse.node_info, parse.records(res.stdout)) if n]
        return found[0] if found else None

    def set_node(self, name: str, state: str, reason: str | None = None) -> None:
        """``scontrol update nodename=<name> state=<state> [reason=<reason>]``."""
        cmd = ["scontrol", "update", f"nodename={name}", f"state={state}"]
        if reason is not None:
            cmd.append(f"reason={reason}")
        self.out(cmd)

    # --- jobs ----------------------------------------------------------------------------
    def job_record(self, job_id: str) -> dict[str, str] | None:
        """``scontrol show job -o``; None once slurmctld forgot the job (MinJobAge)."""
        res = self.run(["scontrol", "show", "job", "-o", job_id])
        if not res.ok:
            if "invalid job id" in (res.stderr + res.stdout).lower():
                return None
            raise command_error(["scontrol", "show", "job"], res)
        recs = parse.records(res.stdout, tail_key=None)
        return recs[0] if recs else None

    def requeue(self, job_id: str) -> bool:
        """``scontrol requeue``; False when the job is already on its way back (pending)."""
        res = self.run(["scontrol", "requeue", job_id])
        if res.ok:
            return True
        text = (res.stderr + res.stdout).lower()
        if "pending" in text or "already" in text or "completing" in text:
            return False
        raise command_error(["scontrol", "requeue"], res)


def command_error(cmd: Sequence[str], res: CommandResult) -> DolmenError:
    """The one clear error for a failed Slurm command."""
    name = cmd[0] if cmd else "slurm"
    if res.status is RunStatus.MISSING:
        return EnvironmentProblem(
            f"{name} is not installed here ({res.reason})",
            hint="install the Slurm client (Debian: apt-get install slurm-client)",
        )
    if res.status is RunStatus.TIMEOUT:
        return ServiceUnavailable(
            f"{' '.join(cmd)}: no answer ({res.reason})",
            hint="is slurmctld running and reachable? try `scontrol ping`",
        )
    # The last line that says something: scontrol ping ends with a banner of asterisks.
    said_all = res.stderr.strip() or res.stdout.strip() or res.reason
    text = [ln for ln in said_all.splitlines() if ln.strip(" *")]
    line = text[-1] if text else f"exit {res.rc}"
    low = "\n".join(text).lower()
    if any(s in low for s in _UNREACHABLE):
        said = next((ln for ln in text if any(s in ln.lower() for s in _UNREACHABLE)), line)
        return ServiceUnavailable(
            f"slurmctld did not answer {name}: {said}",
            hint="start slurmctld or check SLURM_CONF / SlurmctldHost; `scontrol ping` tells",
        )
    if _NO_CONFIG in low:
        return EnvironmentProblem(
            f"{name}: no Slurm configuration on this host ({line})",
            hint="set SLURM_CONF to the cluster's slurm.conf, install /etc/slurm/slurm.conf,"
            " or run on a login node of the cluster",
        )
    if _BAD_CONFIG in low:
        why = next((ln for ln in text if "error:" in ln or "s_p_parse_file" in ln), line)
        return EnvironmentProblem(
            f"{name}: Slurm's configuration does not parse ({why})",
            hint="fix the slurm.conf that SLURM_CONF (or /etc/slurm/slurm.conf) names",
        )
    if name == "sbatch" and any(s in low for s in _USER_ERRORS):
        return UsageError(f"Slurm refused the job: {line}")
    return SlurmCommandError(f"{' '.join(cmd[:3])}: {line}")

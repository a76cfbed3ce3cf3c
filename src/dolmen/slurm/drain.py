"""The Slurm drain contract: what ``dolmen validate --slurm`` does to this node.

- Unhealthy: drain the node, ``reason="dolmen: <checks>"`` naming the failed checks.
- Healthy (or degraded: warnings only) again: resume the node, but only when
  dolmen itself drained it (its reason starts with ``dolmen:``).
- A node someone else drained or set down (any other reason) is left alone:
  never resumed, and its reason never overwritten by a new drain.
- Undecided (a check could not read its signal): nothing changes.

Every command runs through ``Host.run``. The verdict may come from a recorded
host tree (``--from``); the Slurm commands then run on the live machine, where
slurmd started the health check. ``decide`` is pure and is what the tests and
the recovery watcher share. A drain or resume is a ``nodes.*`` audit event,
recorded after scontrol did it (``events``).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from dolmen.checks.verdict import Health, Verdict
from dolmen.compat import StrEnum
from dolmen.report.reason import PREFIX, one_line_reason
from dolmen.slurm import events

if TYPE_CHECKING:
    from dolmen.host import Host
    from dolmen.slurm.client import SlurmClient
    from dolmen.slurm.parse import NodeInfo

REASON_MAX = 80  # Slurm keeps longer reasons, but sinfo -R and squeue columns cut them


class Action(StrEnum):
    """What the contract does to a node."""

    DRAIN = "drain"
    RESUME = "resume"
    NONE = "none"


@dataclass(frozen=True)
class Decision:
    """An action and why, in one line (what ``drain_if_unhealthy`` reports)."""

    action: Action
    why: str
    reason: str = ""  # the drain reason for Action.DRAIN


def drained_by_dolmen(node: NodeInfo) -> bool:
    """The node is drained or down with a reason dolmen wrote."""
    return (node.drained or node.down) and node.reason.startswith(PREFIX)


def held_by_someone_else(node: NodeInfo) -> bool:
    """Drained or set down by an admin or by Slurm (any reason that is not dolmen's)."""
    return (node.drained or node.state == "DOWN") and not node.reason.startswith(PREFIX)


def decide(health: Health, reason: str, node: NodeInfo) -> Decision:
    """Pure: the contract for a node in state ``node`` given a verdict's health and reason."""
    if health is Health.UNHEALTHY:
        if held_by_someone_else(node):
            return Decision(
                Action.NONE, f"left {node.name} alone: drained by someone else ({node.reason})"
            )
        if node.drained and node.reason == reason:
            return Decision(Action.NONE, f"{node.name} already drained: {reason}")
        return Decision(Action.DRAIN, f"drained {node.name}: {reason}", reason)
    if health in (Health.HEALTHY, Health.DEGRADED):
        if drained_by_dolmen(node):
            return Decision(Action.RESUME, f"resumed {node.name} (was: {node.reason})")
        return Decision(Action.NONE, f"{node.name} healthy, nothing to do")
    return Decision(Action.NONE, f"{node.name} undecided: left as it is")


def drain_if_unhealthy(
    host: Host, verdict: Verdict, node: str | None = None, *, client: SlurmClient | None = None
) -> str:
    """Apply the contract to ``node`` (default: ``$SLURMD_NODENAME``, else the host's name).

    Returns what it did, in one line. Raises a DolmenError (ServiceUnavailable,
    exit 3) when slurmctld does not answer. ``client`` says how to reach Slurm
    (default: its commands on this machine, as slurmd runs the health check).
    """
    client, name = _target(host, node, client)
    info = client.node(name)
    if info is None:
        return f"{name} is not a node of this Slurm cluster: nothing done"
    decision = decide(verdict.health, one_line_reason(verdict, REASON_MAX), info)
    if decision.action is Action.NONE:
        return decision.why
    # A health check must drain a sick node even when the audit log cannot be written:
    # the events are then lost, and the line returned says so.
    action = f"nodes.{decision.action.value}"
    target = events.node_target(name)
    details = {"reason": decision.reason, "health": verdict.health.value}
    if decision.action is Action.DRAIN:
        _, lost = events.acting(
            action, target, details, lambda: client.set_node(name, "drain", decision.reason)
        )
    else:
        _, lost = events.acting(action, target, details, lambda: client.set_node(name, "resume"))
    return decision.why + (f" (not audited: {lost})" if lost else "")


def preflight(host: Host, node: str | None = None, *, client: SlurmClient | None = None) -> None:
    """Before a run that takes minutes (``validate --level full --slurm``): what the drain
    contract needs at its end, asked now. Raises the one error the end would have met
    (scontrol missing, no Slurm configuration, slurmctld not answering: exit 3), and an
    EnvironmentProblem when Slurm does not know the node, so no workload runs for a
    contract that could not be applied."""
    from dolmen.errors import EnvironmentProblem

    client, name = _target(host, node, client)
    if client.node(name) is None:
        raise EnvironmentProblem(
            f"--slurm: {name} is not a node of this Slurm cluster, so no verdict could drain "
            "or resume it",
            hint="run on a node of the cluster (slurmd sets SLURMD_NODENAME) or leave out --slurm",
        )


def _target(host: Host, node: str | None, client: SlurmClient | None) -> tuple[SlurmClient, str]:
    """How to reach Slurm (its commands on this machine, even for a verdict of a tree) and
    the node the contract acts on: ``node``, else ``$SLURMD_NODENAME``, else the host's name."""
    from dolmen.host import open_host
    from dolmen.slurm.client import SlurmClient

    if client is None:
        client = SlurmClient(host if host.kind == "live" else open_host(None))
    return client, node or client.host.environ().get("SLURMD_NODENAME") or host.hostname

"""The run behind ``dolmen fleet validate --slurm``: plan, srun, store, decide, (drain).

The I/O around the pure pieces of ``slurm_run``: one ``srun`` for the whole fleet,
its tasks' verdicts stored as one collection, then the drain contract per node. Without
``apply`` the decisions are only printed (the dry run); with it each one goes through
``drain_if_unhealthy``, which records the audit events. The collection's manifest
records the decisions and whether they were applied.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from dolmen.checks.verdict import Health
from dolmen.errors import ExitCode, UsageError
from dolmen.fleet.collect import Collection, Item, add_bytes
from dolmen.fleet.doc import verdict_of
from dolmen.fleet.slurm_run import Plan, decode_task, partition_nodes, plan, split_tasks
from dolmen.fleet.store import FleetStore, collection_id
from dolmen.report.reason import one_line_reason
from dolmen.slurm.client import SlurmClient
from dolmen.slurm.drain import REASON_MAX, Action, decide, drain_if_unhealthy


@dataclass
class Outcome:
    """What the run did: the plan, the collection, one line per node, the exit code."""

    plan: Plan
    collection: Collection
    lines: list[str] = field(default_factory=list)
    exit_code: ExitCode = ExitCode.OK
    seconds: float = 0.0


def run(
    client: SlurmClient,
    store: FleetStore,
    *,
    partition: str | None = None,
    only: tuple[str, ...] = (),
    apply: bool = False,
    timeout_s: float = 600.0,
    say: Callable[[str], None] = lambda line: None,
    **plan_options: Any,
) -> Outcome:
    """Validate every node of ``partition`` through one srun step; see the module."""
    nodes = partition_nodes(client, partition)
    if only:
        unknown = sorted(set(only) - {n.name for n in nodes})
        if unknown:
            raise UsageError(
                f"not nodes of the partition: {', '.join(unknown)}; "
                f"valid: {', '.join(n.name for n in nodes)}"
            )
        nodes = [n for n in nodes if n.name in only]
    p = plan(nodes, partition=partition, **plan_options)
    coll = Collection(collection_id())
    out = Outcome(p, coll)
    for name, why in p.left_out:
        coll.items.append(Item(f"slurm:{name}", error=f"not validated: Slurm shows it {why}"))
    if p.nodes:
        res = client.run(p.argv, timeout=timeout_s)
        tasks = split_tasks(res.stdout, res.stderr)
        got: set[str] = set()
        for task in tasks.values():
            if task.node is None or task.node not in p.nodes:
                continue
            item = Item(f"slurm:{task.node}")
            coll.items.append(item)
            got.add(task.node)
            if not task.stdout:
                item.error = "the task printed no verdict: " + (
                    task.stderr[-1] if task.stderr else f"srun exit {res.rc}"
                )
                continue
            try:
                data = decode_task(task.stdout)
            except ValueError as e:
                item.error = f"no verdict: {e}" + (f"; {task.stderr[-1]}" if task.stderr else "")
                continue
            if not data.strip():  # validate printed nothing: its error line is on stderr
                item.error = "validate printed no verdict: " + (
                    task.stderr[-1] if task.stderr else f"srun exit {res.rc}"
                )
                continue
            add_bytes(coll, store, item, data, node=task.node)
        srun_said = [
            ln for ln in res.stderr.splitlines() if ln.startswith("srun:") and "error" in ln
        ]
        for name in p.nodes:
            if name not in got:
                why = srun_said[-1] if srun_said else (res.reason or f"srun exit {res.rc}")
                coll.items.append(Item(f"slurm:{name}", error=f"no verdict came back: {why}"))
    _decide(client, coll, out, apply, {n.name: n for n in nodes})
    store.write_manifest(coll.id, coll.manifest({"partition": partition, "applied": apply}))
    for line in out.lines:
        say(line)
    return out


def _decide(
    client: SlurmClient, coll: Collection, out: Outcome, apply: bool, infos: dict[str, Any]
) -> None:
    """The contract per node with a verdict; the others said why they have none."""
    health: list[Health] = []
    for item in sorted(coll.items, key=lambda i: i.source):
        if item.error:
            out.lines.append(f"{item.source.removeprefix('slurm:')}: {item.error}")
            health.append(Health.UNDECIDED)
            continue
        node = str(item.node)
        doc = store_doc(coll, item)
        verdict = verdict_of(doc)
        health.append(verdict.health)
        reason = one_line_reason(verdict, REASON_MAX)
        info = client.node(node) if apply else infos.get(node)
        if info is None:
            line, action = f"{node}: {reason}; not a node of this cluster", Action.NONE
        else:
            d = decide(verdict.health, reason, info)
            action = d.action
            if apply and d.action is not Action.NONE:
                line = f"{node}: " + drain_if_unhealthy(client.host, verdict, node, client=client)
            elif d.action is Action.NONE:
                line = f"{node}: {reason}; {d.why}"
            else:
                line = f"{node}: {reason}; would {d.action.value} (dry run: --drain to apply)"
        out.lines.append(line)
        coll.actions.append({"node": node, "action": action.value, "applied": apply, "line": line})
    if Health.UNHEALTHY in health:
        out.exit_code = ExitCode.UNHEALTHY
    elif Health.UNDECIDED in health:
        out.exit_code = ExitCode.UNDECIDED


def store_doc(coll: Collection, item: Item) -> dict[str, Any]:
    """The parsed verdict behind a stored item (kept on the collection while it runs)."""
    return coll.docs[item.source]

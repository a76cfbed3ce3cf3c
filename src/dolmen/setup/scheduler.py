"""The scheduler step: Slurm's node line and gres.conf, or Kubernetes' node labels and
the GPU operator's values, for this node from its facts; written only to files named
(writes.write_with_backup), printed otherwise."""

from __future__ import annotations

from dolmen.errors import UsageError
from dolmen.setup.model import Context, Status, StepPlan, StepResult
from dolmen.setup.writes import write_with_backup

SCHEDULERS = ("slurm", "kubernetes")


def node_name(ctx: Context) -> str:
    """--node-name, else the short hostname (slurmd's default NodeName)."""
    from dolmen.slurm.conf_gen import node_name as checked

    name = ctx.options.node_name or ctx.host.hostname
    try:
        return checked(name)
    except ValueError as e:
        raise UsageError(str(e), hint="name the node with --node-name NAME") from None


class SchedulerStep:
    """Generate, show, and write where asked."""

    name = "scheduler"
    title = "Describe the node to its scheduler"

    def plan(self, ctx: Context) -> StepPlan:
        """The generated texts; UNKNOWN (nothing written) when a figure is missing."""
        if ctx.options.scheduler == "kubernetes":
            return _plan_k8s(ctx)
        return _plan_slurm(ctx)

    def apply(self, ctx: Context, plan: StepPlan) -> StepResult:
        """Write each text to its named file; the lines say where."""
        lines = list(plan.lines)
        for path, block, what in plan.payload or ():
            lines += write_with_backup(path, node_name(ctx), block, what)
        return StepResult(self.name, Status.DONE, tuple(lines))


def _plan_slurm(ctx: Context) -> StepPlan:
    from dolmen.setup.node import node_shape
    from dolmen.slurm.conf_gen import render

    o = ctx.options
    name = node_name(ctx)
    s = node_shape(ctx.host, name)
    r = render(s, o.gres_mode, o.device)
    lines = [f"slurm.conf: {r.node_line}"] if r.node_line else []
    if r.gres:
        lines += ["gres.conf:", *(f"  {x}" for x in r.gres.splitlines())]
    lines += [f"note: {n}" for n in s.notes]
    if s.gpus:
        lines.append("note: slurm.conf needs GresTypes=gpu once (cluster-wide)")
    if r.problems:
        lines += [f"unknown: {p}" for p in r.problems]
        lines.append("nothing written: a line with a guessed figure could drain or overbook")
        return StepPlan(tuple(lines), status=Status.UNKNOWN)
    writes = []
    if o.slurm_conf is not None and r.node_line:
        writes.append((o.slurm_conf, r.node_line + "\n", "slurm.conf"))
    if o.gres_conf is not None and r.gres:
        writes.append((o.gres_conf, r.gres, "gres.conf"))
    if not writes:
        lines.append("not written: name --slurm-conf FILE and --gres-conf FILE to write them")
    return StepPlan(tuple(lines), changes=bool(writes), payload=tuple(writes))


def _plan_k8s(ctx: Context) -> StepPlan:
    from dolmen.facts import containers, gpu
    from dolmen.setup.kubernetes import K8sNode, helm_values, label_command
    from dolmen.setup.node import gpu_missing

    g, c = gpu.collect(ctx.host), containers.collect(ctx.host)
    missing = gpu_missing(g)
    if missing:
        return StepPlan(tuple(f"unknown: {m}" for m in missing), status=Status.UNKNOWN)
    tools = [c.tools.get(t) for t in ("nvidia-ctk", "nvidia-container-cli")]
    seen = [t.installed for t in tools if t is not None]
    toolkit = True if any(seen) else (False if seen and all(x is False for x in seen) else None)
    node = K8sNode(
        name=node_name(ctx),
        gpus=len(g.gpus),
        driver=g.driver_version,
        driver_why=g.unread.get("driver_version", g.error or "not read"),
        toolkit=toolkit,
        toolkit_why="; ".join(t.detail for t in tools if t is not None),
        mig=[x.mig.current for x in g.gpus],
    )
    values = helm_values(node)
    lines = [f"labels: {label_command(node)}", "gpu-operator values:"]
    lines += [f"  {x}" for x in values.splitlines()]
    o = ctx.options
    writes = [(o.k8s_values, values, "gpu-operator values")] if o.k8s_values else []
    if not writes:
        lines.append("not written: name --k8s-values FILE to write the values")
    return StepPlan(tuple(lines), changes=bool(writes), payload=tuple(writes))

"""``dolmen fleet collective --slurm``: all_reduce and all_gather bus bandwidth across nodes,
one Slurm job step, held to the rails' inter-node figure (docs/fleet.md).

Exit codes: 0 measured (and at or above the inter-node floor where one applies), 1 below
the floor, 2 bad usage or a rank that did not finish (each said why), 3 Slurm not
reachable or an output folder dolmen may not write in.
"""

from __future__ import annotations

import sys
import time
from datetime import datetime
from typing import Any

import click

from dolmen.cli.common import config_option
from dolmen.compat import UTC
from dolmen.errors import ExitCode, UsageError
from dolmen.fleet import MIN_FRACTION


@click.command("collective")
@click.option("--slurm", is_flag=True, required=True, help="Run through Slurm (srun).")
@click.option("--partition", metavar="P", help="The partition (default: the default one).")
@click.option("--nodes", "count", type=click.IntRange(2), default=2, show_default=True)
@click.option("--nodelist", metavar="N1,N2", help="These nodes (default: the first free ones).")
@click.option(
    "--device",
    type=click.Choice(["cuda", "cpu"], case_sensitive=False),
    default="cuda",
    show_default=True,
    help="cuda: NCCL, one rank per GPU; cpu: gloo, one rank per node (measured only).",
)
@click.option("--gpus-per-node", type=click.IntRange(1), help="Ranks per node on cuda.")
@click.option("--smoke", is_flag=True, help="Tiny sizes: the machinery, not the fabric.")
@config_option
@click.option("--out", metavar="DIR", help="Folder for bench.json and busbw.png/svg.")
@click.option("--no-plots", is_flag=True, help="Write bench.json only.")
@click.option("--json", "as_json", is_flag=True, help="Print the dolmen.bench/1 document.")
@click.option("--python", metavar="PATH", help="The Python the nodes run (default: this one).")
@click.option(
    "--min-fraction",
    type=click.FloatRange(0.0, 1.0, min_open=True),
    default=MIN_FRACTION,
    show_default=True,
    help="Of the rails' line rate that busbw at 1 GiB must reach.",
)
@click.option("--wait", "wait_s", type=click.IntRange(1), default=30, show_default=True)
@click.option("--prefix", multiple=True, metavar="ARG", help="Argv prefix to reach Slurm.")
def collective(
    slurm: bool,
    partition: str | None,
    count: int,
    nodelist: str | None,
    device: str,
    gpus_per_node: int | None,
    smoke: bool,
    config_path: str | None,
    out: str | None,
    no_plots: bool,
    as_json: bool,
    python: str | None,
    min_fraction: float,
    wait_s: int,
    prefix: tuple[str, ...],
) -> int:
    """Measure all_reduce/all_gather busbw across nodes through one srun step."""
    from dolmen import __version__
    from dolmen.config import load_config
    from dolmen.fleet import collective as fc
    from dolmen.fleet.slurm_run import partition_nodes
    from dolmen.host import open_host
    from dolmen.report.bench.document import bench_document
    from dolmen.report.bench.output import run_folder, write_run
    from dolmen.slurm.client import SlurmClient
    from dolmen.workloads.session import BUDGETS, SMOKE_BUDGET_S

    config = load_config(config_path)
    device = device.lower()
    client = SlurmClient(open_host(None), prefix=prefix)
    client.ping()
    infos = partition_nodes(client, partition)
    wanted = tuple(n for n in (nodelist or "").split(",") if n)
    nodes = fc.choose(infos, len(wanted) or count, wanted)
    per_node = 1 if device == "cpu" else _gpus(gpus_per_node, infos, nodes)
    started = datetime.now(UTC)
    folder = run_folder(out, started)
    budget = float(config.get("workloads", "collective_s", BUDGETS["collective"][0]))
    budget = SMOKE_BUDGET_S if smoke else budget
    p = fc.plan(
        nodes,
        device=device,
        per_node=per_node,
        budget_s=budget,
        smoke=smoke,
        partition=partition,
        python=python,
        wait_s=wait_s,
    )
    world = len(nodes) * per_node
    backend = p.spec.backend
    _err(
        f"collective across {', '.join(nodes)} ({world} {backend} ranks): about "
        f"{budget:g} s, up to {budget + p.spec.grace_s + wait_s:g} s to start and end"
    )
    t0 = time.monotonic()
    result, outcome = fc.run(client, p, timeout_s=budget + p.spec.grace_s + wait_s + 60)
    body, judgement = _judge(config, result, outcome, nodes, per_node, device, min_fraction)
    errors = {"collective": "; ".join(outcome.errors)} if outcome.errors else {}
    doc = bench_document(
        host="slurm:" + ",".join(nodes),
        started=started.isoformat(timespec="seconds").replace("+00:00", "Z"),
        device=device,
        wall_s=time.monotonic() - t0,
        results={"collective": body} if result.runs else {},
        errors=errors,
        smoke=smoke,
        version=__version__,
    )
    written, note = write_run(doc, folder, plots=not no_plots)
    say = _err if as_json else click.echo
    if as_json:
        from dolmen.report.bench.document import dump_bench

        click.echo(dump_bench(doc).decode(), nl=False)
    else:
        for line in fc.table(result, judgement.floor_gbps):
            click.echo(line)
    for why in outcome.errors:
        say(f"collective: {why}")
    say(f"inter-node: {judgement.status}: {judgement.why}")
    say(f"written: {', '.join(str(w) for w in written)}")
    if note:
        say(note)
    if outcome.errors or not result.runs:
        return int(ExitCode.UNDECIDED)
    return int(ExitCode.UNHEALTHY if judgement.status == "fail" else ExitCode.OK)


def _judge(
    config: Any,
    result: Any,
    outcome: Any,
    nodes: tuple[str, ...],
    per_node: int,
    device: str,
    fraction: float,
) -> tuple[dict[str, Any], Any]:
    """The collective body of the document and the inter-node judgement."""
    from dolmen.fleet import collective as fc
    from dolmen.fleet import internode as fi
    from dolmen.kb import load_kb

    hcas = load_kb().hcas
    rails = []
    for node in nodes:
        raw, unread = outcome.ports.get(node, ([], "its ports were not reported"))
        ports = [p for p in map(fi.port_of, raw) if p is not None]
        rails.append(fi.node_rails(node, ports, hcas, unread))
    site = (config.get("validate", "expected_ib_ports"), config.get("validate", "expected_ib_rate"))
    figure, how = fi.figure(rails, site[0], site[1])
    judgement = fi.judge(result.run("all_reduce"), device, figure, how, fraction, result.stopped)
    listed = [{"node": r.node, "ports": r.ports, "gbps": r.gbps, "why": r.why} for r in rails]
    body = fc.document_body(result, nodes, per_node, judgement.to_json(), listed)
    return body, judgement


def _gpus(given: int | None, infos: Any, nodes: tuple[str, ...]) -> int:
    """Ranks per node on cuda: --gpus-per-node, else the fewest GPUs Slurm lists on them."""
    if given:
        return given
    counts = [n.gpus for n in infos if n.name in nodes]
    if not counts or any(not c for c in counts):
        raise UsageError(
            "Slurm lists no GPUs (gres/gpu) on " + ", ".join(nodes),
            hint="give --gpus-per-node N, or --device cpu",
        )
    return int(min(counts))


def _err(line: str) -> None:
    print(line, file=sys.stderr, flush=True)

"""``dolmen net k8s`` and ``dolmen net ib``: the policy's Kubernetes and InfiniBand targets
(docs/net-targets.md).

    dolmen net k8s --policy P --job NAME [--namespace NS] [--tenant T] [--check FILE]
    dolmen net ib partitions --fabric F [--policy P] [--node NAME=PATH]... [--output FILE]
    dolmen net ib verify --fabric F [--policy P] [--node NAME=PATH]... [--from PATH] [--sm]

Registered on the ``net`` group by cli/net.py (``net.add_command(net_targets.k8s)``,
``net.add_command(net_targets.ib)``).
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import click

from dolmen.cli.common import from_option
from dolmen.cli.main import exit_with
from dolmen.errors import ExitCode, UsageError

GAPS = (
    "NetworkPolicy has no deny rule: isolation rests on the default-deny object selecting "
    "every pod, and any other allow in the namespace widens it",
    "NetworkPolicy logs nothing: dropped connections are seen only through the CNI's own "
    "tools (Calico flow logs, Cilium Hubble)",
    "pods with hostNetwork: true are outside NetworkPolicy (undefined by the API): refused",
    "nothing is enforced unless the cluster's CNI implements NetworkPolicy (Calico, Cilium; "
    "not flannel alone)",
)


def _emit(doc: dict[str, Any]) -> None:
    sys.stdout.write(json.dumps(doc, indent=2) + "\n")


@click.command()
@click.option("--policy", "policy_path", required=True, metavar="FILE", help="The policy.")
@click.option("--job", required=True, help="The job (its pods' dolmen.io/job label).")
@click.option("--namespace", default="default", show_default=True, help="The job's namespace.")
@click.option("--tenant", default=None, help="The job's tenant (its ports).")
@click.option(
    "--check",
    "check_path",
    metavar="FILE",
    default=None,
    help="Manifests (YAML) of the job: refused when a pod uses hostNetwork.",
)
@click.option("--json", "as_json", is_flag=True, help="Print JSON.")
def k8s(
    policy_path: str,
    job: str,
    namespace: str,
    tenant: str | None,
    check_path: str | None,
    as_json: bool,
) -> None:
    """Print the NetworkPolicy objects of a job's namespace (YAML)."""
    from dolmen.jobs.kubernetes.manifests import dns_name
    from dolmen.jobs.kubernetes.pod import PORT
    from dolmen.jobs.kubernetes.yamltext import dump_all
    from dolmen.net.kubernetes import Port, host_network_pods, job_net, network_policies
    from dolmen.net.model import load_policy

    policy = load_policy(policy_path)
    if check_path is not None:
        refused = host_network_pods(_manifests(Path(check_path)))
        if refused:
            raise UsageError(
                f"{check_path}: pods with hostNetwork: true escape every NetworkPolicy: "
                + "; ".join(refused),
                hint="remove hostNetwork from the pod spec (the policy cannot isolate it)",
            )
    try:
        net = job_net(policy, dns_name(job), namespace, tenant=tenant, extra=(Port("TCP", PORT),))
    except ValueError as e:
        raise UsageError(str(e)) from None
    objects = network_policies(net)
    if as_json:
        _emit(
            {
                "schema": "dolmen.net.k8s/1",
                "job": net.job,
                "namespace": namespace,
                "objects": objects,
                "gaps": list(GAPS),
            }
        )
        return
    click.echo(dump_all(objects), nl=False)


def _manifests(path: Path) -> list[Any]:
    import yaml

    from dolmen.config import read_text

    try:
        return [d for d in yaml.safe_load_all(read_text(path, "manifest file")) if d is not None]
    except yaml.YAMLError as e:
        raise UsageError(f"{path}: not YAML: {str(e).splitlines()[0]}") from None


@click.group()
def ib() -> None:
    """InfiniBand partitions: opensm's partitions.conf and each port's PKey table."""


def _partitions(fabric_path: str, policy_path: str | None, nodes: tuple[str, ...]) -> Any:
    from dolmen.host import open_host
    from dolmen.net.ib_fabric import load_fabric, node_port_guids, partitions_for
    from dolmen.net.model import load_policy

    fabric = load_fabric(fabric_path)
    policy = load_policy(policy_path) if policy_path else None
    guids: dict[str, tuple[str, ...]] = {}
    for spec in nodes:
        name, sep, where = spec.partition("=")
        if not sep or not name or not where:
            raise UsageError(f"--node {spec!r}: write NAME=PATH (a snapshot or host tree)")
        if not Path(where).exists():
            raise UsageError(f"--node {name}: no such snapshot or tree: {where}")
        with open_host(where) as host:
            guids[name] = node_port_guids(host)
    try:
        return partitions_for(fabric, policy=policy, node_guids=guids)
    except ValueError as e:
        raise UsageError(str(e)) from None


_FABRIC = click.option(
    "--fabric", "fabric_path", required=True, metavar="FILE", help="PKeys per tenant (TOML)."
)
_POLICY = click.option(
    "--policy", "policy_path", default=None, metavar="FILE", help="The policy (its tenants)."
)
_NODES = click.option(
    "--node",
    "nodes",
    multiple=True,
    metavar="NAME=PATH",
    help="A node's snapshot or tree, for the GUIDs of a member written as a node name.",
)


@ib.command()
@_FABRIC
@_POLICY
@_NODES
@click.option("--output", default=None, metavar="FILE", help="Write here (atomically).")
@click.option("--json", "as_json", is_flag=True, help="Print JSON.")
def partitions(
    fabric_path: str,
    policy_path: str | None,
    nodes: tuple[str, ...],
    output: str | None,
    as_json: bool,
) -> None:
    """Print (or write) opensm's partitions.conf: a PKey per tenant, Default explicit."""
    from dolmen.fsutil import output_target, write_output
    from dolmen.net.infiniband import render_partitions

    if output is not None:
        output_target(Path(output), what="--output")  # refused before any work
    parts = _partitions(fabric_path, policy_path, nodes)
    text = render_partitions(
        parts, header=f"written by dolmen net ib partitions from {fabric_path}; do not edit"
    )
    if output is not None:
        write_output(Path(output), text.encode(), what="--output")
    if as_json:
        _emit(
            {
                "schema": "dolmen.net.ib.partitions/1",
                "output": output,
                "partitions": [
                    {
                        "name": p.name,
                        "pkey": f"{p.pkey:#06x}",
                        "defmember": p.defmember,
                        "all": p.everyone,
                        "members": [
                            {"guid": m.guid, "membership": m.membership, "node": m.node or None}
                            for m in p.members
                        ],
                    }
                    for p in parts
                ],
                "text": text,
            }
        )
    elif output is None:
        click.echo(text, nl=False)
    else:
        click.echo(f"wrote {output}: {len(parts)} partitions (reload opensm: kill -HUP)")


@ib.command()
@_FABRIC
@_POLICY
@_NODES
@from_option
@click.option("--sm", "is_sm", is_flag=True, help="This host runs the subnet manager (SELF).")
@click.option("--json", "as_json", is_flag=True, help="Print JSON.")
def verify(
    fabric_path: str,
    policy_path: str | None,
    nodes: tuple[str, ...],
    source: str | None,
    is_sm: bool,
    as_json: bool,
) -> None:
    """Compare this host's PKey tables (sysfs) with the partitions: exit 1 on a difference,
    2 when a table could not be read or no InfiniBand port was seen."""
    from dolmen.host import open_host
    from dolmen.net.ib_verify import verify_host

    parts = _partitions(fabric_path, policy_path, nodes)
    with open_host(source) as host:
        rows = verify_host(host, parts, is_sm=is_sm)
    if as_json:
        _emit({"schema": "dolmen.net.ib.verify/1", "ports": rows})
    else:
        for r in rows:
            click.echo(_line(r))
        if not rows:
            click.echo("no InfiniBand port with a PKey table on this host")
    statuses = {r["status"] for r in rows}
    if "differs" in statuses:
        exit_with(int(ExitCode.UNHEALTHY))
    if "unknown" in statuses or not rows:
        exit_with(int(ExitCode.UNDECIDED))


def _line(row: dict[str, Any]) -> str:
    head = f"{row['subject']} ({row['guid'] or 'GUID unread'}): {row['status']}"
    if row["status"] == "unknown":
        return f"{head}: {row['reason']}"
    said = [
        f"{what} {', '.join(row[key])}"
        for key, what in (("missing", "missing"), ("extra", "extra"), ("membership", "membership"))
        if row[key]
    ]
    return f"{head}: {'; '.join(said)}" if said else head

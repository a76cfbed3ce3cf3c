"""``dolmen nccl``: NCCL for this host's fabric (docs/topo.md).

- ``topo -o FILE``: NCCL_TOPO_FILE, the topology in NCCL's own XML, from the PCI tree
  (atomically, regular files only). Exit 2 when the tree lacks what it needs (no GPU, a
  GPU without a PCI location): one line naming it.
- ``env``: each NCCL variable with its value and why; ``--json`` (``dolmen.nccl.env/1``),
  ``--export`` (shell lines). ``--write`` plans /etc/nccl.conf and /etc/nccl-topo.xml
  (the diff; a dry run) and, with ``--yes``, applies them through tune's journaled
  engine (the originals journaled first, audit events ``nccl.apply``); exit 3 when an
  earlier write is still active, 4 when it cannot be audited.
- ``rollback``: puts back the files the last ``env --write`` replaced.

``env`` without ``--write`` is cli/nccl_run.py's, which the lean entry (cli/lean.py) also
runs without click.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import TYPE_CHECKING, Any

import click

from dolmen.cli.common import (
    change_host,
    change_options,
    finish_change,
    from_option,
    rollback_change,
)
from dolmen.cli.nccl_run import SCHEMA, show_env
from dolmen.values.text import printable

if TYPE_CHECKING:
    from dolmen.host import Host

_ROOT_HELP = "Write into the host tree DIR (its etc/) instead of this machine's /etc."
_AGAIN = "dolmen nccl rollback"


@click.group()
def nccl() -> None:
    """NCCL for this host's fabric: the topology file and the environment."""


@nccl.command("topo")
@from_option
@click.option("-o", "--output", metavar="FILE", required=True, help="Write the XML here.")
def topo_cmd(source: str | None, output: str) -> None:
    """Write NCCL_TOPO_FILE: this host's topology (or --from TREE's) in NCCL's XML."""
    from dolmen.facts.topology import collect_tree
    from dolmen.fsutil import output_target, write_output
    from dolmen.host import open_host

    path = Path(output)
    output_target(path, what="topology file")
    with open_host(source) as host:
        tree = collect_tree(host)
    text, notes = _xml(tree)
    write_output(path, text.encode(), what="topology file")
    click.echo(f"wrote {path}: {len(tree.gpus)} GPUs, {len(tree.nics)} NICs ({tree.source})")
    for note in notes:
        click.echo(f"note: {printable(note)}")


def _xml(tree: Any) -> tuple[str, tuple[str, ...]]:
    from dolmen.errors import InputError
    from dolmen.nccl.xml import XmlGap, topo_xml

    if "devices" in tree.unread:
        raise InputError(
            f"cannot write the NCCL topology: no PCI tree ({tree.unread['devices']})",
            hint="read a host tree with sys/bus/pci (dolmen snapshot records it)",
        )
    try:
        return topo_xml(tree)
    except XmlGap as e:
        raise InputError(
            f"cannot write the NCCL topology: {e}",
            hint="on a bundle, record sys/bus/pci and sys/devices (dolmen snapshot does)",
        ) from None


@nccl.command("env")
@from_option
@click.option("--json", "as_json", is_flag=True, help=f"Print {SCHEMA}.")
@click.option("--export", "as_shell", is_flag=True, help="Print `export NAME=value` lines.")
@click.option("--write", is_flag=True, help="Plan /etc/nccl.conf (and the XML it names).")
@click.option("--yes", "-y", is_flag=True, help="With --write: apply the plan.")
@click.option("--root", metavar="DIR", default=None, help=_ROOT_HELP)
def env_cmd(
    source: str | None, as_json: bool, as_shell: bool, write: bool, yes: bool, root: str | None
) -> None:
    """The NCCL environment for this fabric, each value with why."""
    from dolmen.errors import UsageError

    if write:
        if source is not None:
            raise UsageError("--write changes a host: use --root DIR, not --from")
        _write(change_host(root, "host tree", tree=True), yes, as_json)
        return
    if yes or root:
        raise UsageError("--yes and --root go with --write")
    show_env(source, as_json, as_shell)


def _write(host: Host, yes: bool, as_json: bool) -> None:
    """Plan (and with --yes apply) the files; see the module docstring."""
    import difflib

    from dolmen.errors import EnvironmentProblem
    from dolmen.tune.journal import change_dir, open_journal
    from dolmen.tune.settings.nccl_conf import plan_files

    plan, texts = plan_files(host)
    if as_json and not yes:
        click.echo(json.dumps({**plan.to_json(), "dry_run": True}, indent=2))
        return
    if not as_json:
        for change in plan.changes:
            old = (change.current or "").splitlines(keepends=True)
            new = texts[change.target.key].splitlines(keepends=True)
            rel = change.target.key
            diff = difflib.unified_diff(old, new, f"/{rel} (now)", f"/{rel} (planned)")
            click.echo(f"{change.action.value:<7} /{rel}")
            click.echo("".join(printable(x.rstrip("\n")) + "\n" for x in diff), nl=False)
    if not yes:
        click.echo("dry run: nothing written; --write --yes applies it (journaled, audited)")
        return
    if not plan.steps:
        click.echo("the files already hold this: nothing to change")
        return
    from dolmen.tune.engine import apply_plan, require_root

    folder = change_dir(host, "nccl")
    if open_journal(folder) is not None:
        raise EnvironmentProblem(
            "an earlier `nccl env --write` is active on this host",
            hint="dolmen nccl rollback puts back what it replaced; then write again",
        )
    require_root(host, plan, doing="writing the NCCL files")
    res = apply_plan(host, plan, folder, kind="nccl")
    finish_change(
        res.to_json(), as_json, res.ok, res.state_error, res.interrupted, again=_AGAIN, values=False
    )


@nccl.command()
@change_options(_ROOT_HELP)
def rollback(root: str | None, yes: bool, as_json: bool) -> None:
    """Put back the files the last `nccl env --write` replaced (or remove new ones)."""
    from dolmen.tune.journal import change_dir

    host = change_host(root, "host tree", tree=True)
    rollback_change(
        host,
        change_dir(host, "nccl"),
        what="nccl env --write",
        doing="rolling back the NCCL files",
        question="Put back the NCCL files of {host}?",
        again=_AGAIN,
        as_json=as_json,
        yes=yes,
        kind="nccl",
        values=False,
    )

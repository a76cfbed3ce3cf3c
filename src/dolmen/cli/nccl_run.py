"""What ``dolmen nccl env`` prints without ``--write``, without click: run by the click
command (cli/nccl.py) and by the lean entry (cli/lean.py ``READS``) alike.

Launches and people ask for it on every node; importing click and building the command
group cost a third of such a start (docs/topo.md, Figures)."""

from __future__ import annotations

import sys

SCHEMA = "dolmen.nccl.env/1"


def show_env(source: str | None = None, as_json: bool = False, as_shell: bool = False) -> None:
    """Each NCCL variable of the host (or ``--from`` tree) with its value and why;
    ``as_json``: dolmen.nccl.env/1; ``as_shell``: ``export NAME=value`` lines."""
    from dolmen.host import open_host
    from dolmen.nccl import NCCL_CONF
    from dolmen.nccl.site import compute

    with open_host(source) as host:
        tree, env = compute(host)
        conf = host.read_opt(NCCL_CONF)
        info = host.describe()
    if as_shell:
        import shlex

        values = env.values()
        for name, value in values.items():
            echo(f"export {name}={shlex.quote(value)}")
        if not values:  # a comment, so that an eval of it stays harmless and says why
            echo("# dolmen nccl env: no NCCL variable to set on this host (nccl env says why)")
        return
    if as_json:
        import json

        from dolmen.nccl.conf import parse_conf

        doc = {
            "schema": SCHEMA,
            "host": info,
            "nccl_conf": None if conf is None else parse_conf(conf),
            "variables": env.to_json(),
            "unread": dict(tree.unread),
        }
        echo(json.dumps(doc, indent=2))
        return
    from dolmen.values.text import printable

    for v in env.variables:  # the reasons name a bundle's devices: made printable
        echo(f"{v.name}={v.value}" if v.value is not None else f"{v.name} (not set)")
        echo(f"    {printable(v.why)}")
    if conf is not None:
        echo(f"note: /{NCCL_CONF} exists: NCCL reads it, and launches pass none of these")


def echo(line: str) -> None:
    """The line and a newline, flushed (what ``click.echo`` does, without click)."""
    sys.stdout.write(line + "\n")
    sys.stdout.flush()

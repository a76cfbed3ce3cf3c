"""``dolmen topo``: the GPU/NIC/NVSwitch/CPU topology of a host, from its PCI tree.

Prints the matrix people know from ``nvidia-smi topo -m`` (built by dolmen from sysfs,
or from ``lspci -vvv`` in a bundle without sysfs), each GPU's closest NIC, and, where
``nvidia-smi topo -m`` is also recorded, where the two disagree. ``--json`` prints
``dolmen.topo/1``; ``--svg FILE`` / ``--png FILE`` write the picture (atomically,
regular files only). Exit 0; 2 when the host shows no PCI tree, or no GPU and no NIC in
it (the line names what is missing); 3 when --png cannot load matplotlib.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import TYPE_CHECKING

import click

from dolmen.cli.common import from_option

if TYPE_CHECKING:
    from dolmen.facts.topology import HostTopology


@click.command()
@from_option
@click.option("--json", "as_json", is_flag=True, help="Print dolmen.topo/1.")
@click.option("--svg", "svg", metavar="FILE", help="Write the picture as SVG.")
@click.option("--png", "png", metavar="FILE", help="Write the picture as PNG (matplotlib).")
def topo(source: str | None, as_json: bool, svg: str | None, png: str | None) -> None:
    """The GPU/NIC/NVSwitch/CPU topology of this host (or --from TREE), from the PCI tree."""
    from dolmen.errors import EnvironmentProblem, UsageError
    from dolmen.facts import topology
    from dolmen.fsutil import output_target, write_output
    from dolmen.host import open_host

    if svg and png:
        raise UsageError("give --svg or --png, not both", hint="run twice for both pictures")
    named = svg or png
    picture = Path(named) if named else None
    if picture is not None:
        output_target(picture, what="picture")  # refused before any work
    with open_host(source) as host:
        tree = require_devices(topology.collect_tree(host))
        matrix = topology.collect(host).matrix
        info = host.describe()
    compared = topology.compare(tree, matrix) if matrix is not None else None
    title = f"{info.get('hostname', '')} ({tree.source})"
    if picture is not None:
        if png:
            from dolmen.report.topology.png import MISSING, render_png

            data = render_png(tree, title)
            if data is None:
                raise EnvironmentProblem(f"cannot draw {picture}: {MISSING}")
        else:
            from dolmen.report.topology.svg import render_svg

            data = render_svg(tree, title).encode()
        write_output(picture, data, what="picture")
        click.echo(f"wrote {picture}")
        return
    if as_json:
        from dolmen.report.topology.document import topo_doc

        sys.stdout.write(json.dumps(topo_doc(tree, info, compared), indent=2) + "\n")
        return
    from dolmen.report.topology.matrix import render_matrix

    lines = compared[0] if compared else None
    counts = (compared[1], compared[2]) if compared else None
    sys.stdout.write(render_matrix(tree, lines, counts))


def require_devices(tree: HostTopology) -> HostTopology:
    """The topology, or InputError naming what is missing (no PCI tree; no GPU, no NIC)."""
    from dolmen.errors import InputError
    from dolmen.facts.topology.tree import empty_reason

    why = empty_reason(tree)
    if why is None:
        return tree
    if "devices" in tree.unread:
        hint = "read a host tree with sys/bus/pci (dolmen snapshot records it) or lspci -vvv"
    else:
        hint = "is the driver's device present (lspci -d 10de:)? on a bundle: was sys/ recorded?"
    raise InputError(why, hint=hint)

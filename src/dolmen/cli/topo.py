"""``dolmen topo``: the GPU/NIC/NVSwitch/CPU topology of a host, from its PCI tree.

Prints the matrix people know from ``nvidia-smi topo -m`` (built by dolmen from sysfs,
or from ``lspci -vvv`` in a bundle without sysfs), each GPU's closest NIC, and, where
``nvidia-smi topo -m`` is also recorded, where the two disagree. ``--json`` prints
``dolmen.topo/1``; ``--svg FILE`` / ``--png FILE`` write the picture (atomically,
regular files only). Exit 0; 2 when the host shows no PCI tree, or no GPU and no NIC in
it (the line names what is missing); 3 when --png cannot load matplotlib. The matrix and
the JSON are cli/topo_run.py's, which the lean entry (cli/lean.py) also runs without click.
"""

from __future__ import annotations

from pathlib import Path

import click

from dolmen.cli.common import from_option
from dolmen.cli.topo_run import read_topo, show_topo


@click.command()
@from_option
@click.option("--json", "as_json", is_flag=True, help="Print dolmen.topo/1.")
@click.option("--svg", "svg", metavar="FILE", help="Write the picture as SVG.")
@click.option("--png", "png", metavar="FILE", help="Write the picture as PNG (matplotlib).")
def topo(source: str | None, as_json: bool, svg: str | None, png: str | None) -> None:
    """The GPU/NIC/NVSwitch/CPU topology of this host (or --from TREE), from the PCI tree."""
    from dolmen.errors import EnvironmentProblem, UsageError
    from dolmen.fsutil import output_target, write_output

    if svg and png:
        raise UsageError("give --svg or --png, not both", hint="run twice for both pictures")
    named = svg or png
    picture = Path(named) if named else None
    if picture is None:
        show_topo(source, as_json)
        return
    output_target(picture, what="picture")  # refused before any work
    tree, _, info = read_topo(source)
    title = f"{info.get('hostname', '')} ({tree.source})"
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

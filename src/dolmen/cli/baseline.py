"""``dolmen baseline``: record a known-good host, show a baseline."""

from __future__ import annotations

from pathlib import Path

import click

from dolmen.cli.common import from_option


@click.group()
def baseline() -> None:
    """Record the expected state of a known-good host; `validate --baseline` compares."""


@baseline.command()
@click.option("-o", "--output", metavar="FILE", required=True, help="Where to write (JSON).")
@from_option
def capture(output: str, source: str | None) -> None:
    """Capture this host's (or a tree's) hardware and versions as a baseline.

    GPU count, models, VBIOS, PCIe capability per bus id, NVLinks, IB ports and rates,
    NIC/NVMe/NVSwitch links, driver and CUDA versions, memory, CPUs. No serials: one
    baseline serves every alike node.
    """
    from dolmen.baseline import capture_baseline, dump_baseline
    from dolmen.facts import FactStore
    from dolmen.fsutil import output_target, write_output
    from dolmen.host import open_host

    output_target(Path(output), what="-o")
    names = ["gpu", "infiniband", "pci", "memory", "cpu", "storage"]
    with open_host(source) as host:
        facts = FactStore(host).collect(names)
        b = capture_baseline(facts, host.hostname)
    write_output(Path(output), dump_baseline(b).encode(), what="-o")
    click.echo(
        f"baseline: {output} ({b.gpu_count} GPUs, {len(b.ib_ports)} IB ports, "
        f"{len(b.pcie)} tracked PCIe devices, driver {b.driver_version or '-'})"
    )


@baseline.command()
@click.argument("file")
def show(file: str) -> None:
    """Print a baseline in a readable form."""
    from dolmen.baseline import describe_baseline, load_baseline

    for line in describe_baseline(load_baseline(file)):
        _shown(line)


def _shown(line: str) -> None:
    """A line of host text (models, firmware, names): control characters escaped."""
    from dolmen.values.text import printable

    click.echo(printable(line))

"""``dolmen snapshot``: capture this host as a support bundle (a host tree archive)."""

from __future__ import annotations

from pathlib import Path

import click


@click.command()
@click.option(
    "-o",
    "--output",
    metavar="FILE",
    default=None,
    help="Where to write: FILE.tar.gz (default dolmen-snapshot-<host>-<time>.tar.gz here), "
    "or a folder ending in / to write a host tree.",
)
@click.option("--only", multiple=True, metavar="SUBSYSTEM", help="Capture only these facts.")
def snapshot(output: str | None, only: tuple[str, ...]) -> None:
    """Capture this host into the host-tree format (no secrets), for `--from` and support.

    Everything dolmen reads is captured; what could not be (and why) is listed in
    dolmen-snapshot.json inside the bundle.
    """
    from dolmen.errors import UsageError
    from dolmen.facts import SUBSYSTEMS
    from dolmen.snapshot import capture

    bad = [o for o in only if o not in SUBSYSTEMS]
    if bad:
        raise UsageError(f"unknown subsystem {bad[0]!r}; valid subsystems: {', '.join(SUBSYSTEMS)}")
    if output is None:
        import socket
        import time

        output = f"dolmen-snapshot-{socket.gethostname()}-{time.strftime('%Y%m%d-%H%M%S')}.tar.gz"
    as_tree = output.endswith("/") or Path(output).is_dir()
    _check_output(Path(output), as_tree=as_tree)
    out = Path(output)
    try:
        meta = capture(out, as_tree=as_tree, subsystems=only or None)
    except OSError as e:  # the bundle's folder refused it (full, read-only, /proc)
        from dolmen.fsutil import write_failure

        folder = out if as_tree else out.absolute().parent
        raise write_failure(f"-o {output}", e, folder, "nothing was left behind") from None
    nc = meta["not_captured"]
    click.echo(
        f"snapshot: {meta['path']} ({meta['captured']['files']} files, "
        f"{len(meta['captured']['commands'])} commands, {len(nc)} not captured, "
        f"{len(meta['redacted'])} redacted, {meta['duration_s']} s)"
    )


def _check_output(out: Path, *, as_tree: bool) -> None:
    """Refuse a bad -o before the capture: a tree goes into an existing folder, an archive
    onto a regular file (or a new one) in an existing folder (STYLE.md rule 21)."""
    from dolmen.fsutil import output_folder, output_target

    if as_tree:
        output_folder(out, what="-o")
    else:
        output_target(out, what="-o")

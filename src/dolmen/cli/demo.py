"""``dolmen demo [NAME DIR]``: write a sample bundle, to try validate on a machine without a GPU."""

from __future__ import annotations

from pathlib import Path

import click


@click.command()
@click.argument("name", required=False)
@click.argument("folder", metavar="DIR", required=False, type=click.Path(path_type=Path))
def demo(name: str | None, folder: Path | None) -> None:
    """List the sample bundles, or write sample NAME as a new host tree DIR.

    Then: dolmen validate --from DIR. The samples are host trees of dolmen's own (an 8-GPU
    H100 node healthy, and with faults), in the format `dolmen snapshot` writes.
    """
    from dolmen import demo as samples
    from dolmen.errors import UsageError

    if name is None:
        for n in samples.names():
            first = " ".join(samples.describe(n).split()).split(": ")[0].split(". ")[0]
            click.echo(f"{n:16}  {first}")
        return
    samples.spec(name)  # an unknown name: one line naming the samples
    if folder is None:
        raise UsageError("dolmen demo NAME DIR: name the new folder to write the sample in")
    written = _write(name, folder)
    click.echo(f"demo: wrote sample {name} to {written}; next: dolmen validate --from {written}")


def _write(name: str, folder: Path) -> Path:
    """Build the sample in a private folder beside ``folder``, then rename it into place: a
    failed write leaves nothing, and an existing path is never replaced (STYLE.md rule 21)."""
    import shutil
    import tempfile

    from dolmen.demo import build_sample
    from dolmen.errors import UsageError
    from dolmen.fsutil import output_folder, write_failure

    if folder.exists() or folder.is_symlink():
        raise UsageError(
            f"{folder} already exists", hint="name a new folder: dolmen demo writes a whole tree"
        )
    parent = output_folder(folder.absolute().parent, what="DIR's parent")
    work: Path | None = None
    try:
        work = Path(tempfile.mkdtemp(prefix=".dolmen-demo-", dir=parent))
        build_sample(name, work / "tree")
        (work / "tree").rename(folder)
    except OSError as e:  # even the private folder may be refused (/proc, a full disk)
        raise write_failure(str(folder), e, parent, "nothing was left behind") from None
    finally:
        if work is not None:
            shutil.rmtree(work, ignore_errors=True)
    return folder

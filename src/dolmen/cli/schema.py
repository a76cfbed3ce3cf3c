"""``dolmen schema [NAME]``: the JSON Schema of a ``--json`` output, for its consumers.

Every ``--json`` document says which contract it follows (``"schema": "dolmen.verdict/1"``);
this prints that contract, the draft 2020-12 file shipped in the package
(``dolmen.report.schemas``), byte for byte, so a script or a CI job validates what it
reads with the schema of the dolmen that wrote it. Without NAME, the list.
docs/contracts.md.
"""

from __future__ import annotations

import sys

import click

from dolmen.errors import UsageError


@click.command()
@click.argument("name", required=False)
def schema(name: str | None) -> None:
    """Print the JSON Schema of a --json document (NAME: verdict, dolmen.logscan/1, ...).

    Without NAME, list every schema with what prints it.
    """
    from dolmen.report import schemas

    if name is None:
        for short in schemas.files():
            doc = schemas.load(short)
            click.echo(f"{doc['$id']:<28} {doc.get('title', '')}")
        return
    try:
        short = schemas.resolve(name)
    except KeyError as e:
        raise UsageError(str(e.args[0]), hint="`dolmen schema` lists them") from None
    sys.stdout.write(schemas.text(short))

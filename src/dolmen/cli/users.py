"""``dolmen users``: the users and groups a job backend knows (each change audited)."""

from __future__ import annotations

import json
import sys
from typing import Any

import click

from dolmen.cli.jobs import backend_from, backend_options


@click.group()
def users() -> None:
    """Manage users and groups of the job backends (local store, Slurm accounting)."""


@users.command()
@click.argument("name")
@click.option("--group", "groups", multiple=True, help="A group (Slurm: account); repeatable.")
@backend_options
def add(name: str, groups: tuple[str, ...], **kw: Any) -> None:
    """Add a user, or set the groups of an existing one."""
    from dolmen.jobs.quota import add_user

    user = add_user(backend_from(kw).quotas(), name, groups)
    click.echo(f"user {user.name}: groups {', '.join(user.groups) or '(none)'}")


@users.command(name="list")
@backend_options
@click.option("--json", "as_json", is_flag=True, help="Print JSON.")
def list_(as_json: bool, **kw: Any) -> None:
    """List the users and their groups."""
    rows = backend_from(kw).quotas().users()
    if as_json:
        users = [{"name": u.name, "groups": list(u.groups)} for u in rows]
        sys.stdout.write(json.dumps({"schema": "dolmen.users/1", "users": users}))
        sys.stdout.write("\n")
        return
    for u in rows:
        click.echo(f"{u.name:<20} {', '.join(u.groups)}")


@users.command()
@click.argument("name")
@backend_options
def remove(name: str, **kw: Any) -> None:
    """Remove a user (and the user's own quota)."""
    from dolmen.errors import UsageError
    from dolmen.jobs.quota import remove_user

    if not remove_user(backend_from(kw).quotas(), name):
        raise UsageError(f"no user {name!r}", hint="`dolmen users list` shows them")
    click.echo(f"user {name}: removed")

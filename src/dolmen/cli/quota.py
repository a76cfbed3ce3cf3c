"""``dolmen quota``: GPU limits per user or group (each change audited).

Local: enforced by the supervisor's store at submit. Slurm: sacctmgr
GrpTRES=gres/gpu=N. Kubernetes: a ResourceQuota in the group's namespace
(``--dry-run`` prints it without an API server).
"""

from __future__ import annotations

import json
import sys
from typing import Any

import click

from dolmen.cli.jobs import backend_from, backend_options
from dolmen.errors import UsageError


def _subject(user: str | None, group: str | None) -> Any:
    from dolmen.jobs.quota import Kind, Subject

    if bool(user) == bool(group):
        raise UsageError("give exactly one of --user U or --group G")
    return Subject(Kind.USER, user) if user else Subject(Kind.GROUP, str(group))


@click.group()
def quota() -> None:
    """Set, show and remove GPU quotas of users and groups."""


@quota.command(name="set")
@click.option("--user", default=None, help="The user the limit applies to.")
@click.option("--group", default=None, help="The group (Slurm account, Kubernetes namespace).")
@click.option("--gpus", type=int, required=True, help="GPUs the subject's jobs may hold at once.")
@click.option("--dry-run", is_flag=True, help="Print what would be set (kubernetes: manifest).")
@backend_options
def set_(user: str | None, group: str | None, gpus: int, dry_run: bool, **kw: Any) -> None:
    """Limit a user or group to N GPUs at once."""
    from dolmen.jobs.quota import check_gpus, check_name, set_quota

    subject = _subject(user, group)
    check_name(subject.kind.value, subject.name)
    check_gpus(gpus)
    store = backend_from(kw).quotas()
    if dry_run:
        render = getattr(store, "render", None)
        click.echo(render(subject, gpus) if render else f"{subject}: at most {gpus} GPUs")
        return
    set_quota(store, subject, gpus)
    click.echo(f"{subject}: at most {gpus} GPUs ({store.backend})")


@quota.command()
@click.option("--user", default=None, help="Only this user.")
@click.option("--group", default=None, help="Only this group.")
@backend_options
@click.option("--json", "as_json", is_flag=True, help="Print JSON.")
def show(user: str | None, group: str | None, as_json: bool, **kw: Any) -> None:
    """Show limits and what is in use now."""
    store = backend_from(kw).quotas()
    rows = [
        q
        for q in store.quotas()
        if (user is None or (q.subject.kind.value, q.subject.name) == ("user", user))
        and (group is None or (q.subject.kind.value, q.subject.name) == ("group", group))
    ]
    doc = [
        {
            "kind": q.subject.kind.value,
            "name": q.subject.name,
            "gpus": q.gpus,
            "in_use": store.usage(q.subject),
        }
        for q in rows
    ]
    if as_json:
        sys.stdout.write(json.dumps({"schema": "dolmen.quota/1", "quotas": doc}, indent=2) + "\n")
        return
    if not doc:
        click.echo("no quotas")
    for d in doc:
        click.echo(f"{d['kind']} {d['name']}: {d['in_use']} of {d['gpus']} GPUs in use")


@quota.command()
@click.option("--user", default=None, help="The user.")
@click.option("--group", default=None, help="The group.")
@backend_options
def remove(user: str | None, group: str | None, **kw: Any) -> None:
    """Lift a limit."""
    from dolmen.jobs.quota import remove_quota

    subject = _subject(user, group)
    if not remove_quota(backend_from(kw).quotas(), subject):
        raise UsageError(f"{subject} has no quota", hint="`dolmen quota show` lists them")
    click.echo(f"{subject}: no limit")

"""``dolmen audit``: show, follow, verify, sign and export the audit trail (docs/audit.md).

``verify`` exits 0 when the log is intact, 1 when it was tampered with (the first
broken link is named), 2 when its input cannot be read or judged (no log, no
trusted keys for its checkpoints).
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import click

from dolmen.audit.reader import Entry, Filter, follow, parse_since, read_entries
from dolmen.audit.settings import AuditSettings, audit_settings
from dolmen.cli.common import config_option
from dolmen.cli.main import exit_with
from dolmen.config import load_config
from dolmen.errors import AuditUnavailable, ExitCode, InputError, UsageError

# A TLS file must exist and be a file: a typo is a usage error, not a failed delivery.
_FILE = click.Path(exists=True, dir_okay=False, readable=True)


def _settings(config_path: str | None, log: str | None = None) -> AuditSettings:
    settings = audit_settings(load_config(config_path))
    if log:
        from dataclasses import replace

        settings = replace(settings, path=Path(log))
    return settings


def log_option(f: Any) -> Any:
    """``--log FILE``: another log than the configured one (a copy taken off the host)."""
    return click.option(
        "--log", "log", metavar="FILE", default=None, help="Audit log (default: [audit] path)."
    )(f)


@click.group()
def audit() -> None:
    """Show, verify and export the audit trail."""


@audit.command()
@click.option("--since", default=None, help="Only events since a time (2h, 7d, ISO 8601).")
@click.option("--action", "actions", multiple=True, help="Only these actions (globs: 'tune.*').")
@click.option("--json", "as_json", is_flag=True, help="Print the events as ECS JSON lines.")
@log_option
@config_option
def show(
    since: str | None, actions: tuple[str, ...], as_json: bool, log: str | None, config_path: str
) -> None:
    """Print the events of the audit log, oldest first."""
    settings = _settings(config_path, log)
    if not settings.path.exists():
        raise InputError("no audit log yet", path=str(settings.path))
    keep = Filter(parse_since(since) if since else None, actions)
    for entry in read_entries(settings.path):
        if entry.event is None or keep(entry.event):
            _print_entry(entry, as_json)


@audit.command()
@click.option(
    "-n",
    "--lines",
    "count",
    default=10,
    show_default=True,
    type=click.IntRange(min=0),
    help="Events to show.",
)
@click.option("-f", "--follow", "following", is_flag=True, help="Keep printing new events.")
@click.option("--json", "as_json", is_flag=True, help="Print the events as ECS JSON lines.")
@log_option
@config_option
def tail(count: int, following: bool, as_json: bool, log: str | None, config_path: str) -> None:
    """Print the last events, and with -f the new ones as they come."""
    settings = _settings(config_path, log)
    if not following and not settings.path.exists():
        raise InputError("no audit log yet", path=str(settings.path))
    last: list[Entry] = []
    after = 0
    for entry in read_entries(settings.path):
        if entry.event is not None:
            after = entry.event.sequence or after
        last.append(entry)
        if len(last) > count:
            last.pop(0)
    for entry in last:
        _print_entry(entry, as_json)
    if following:
        for entry in follow(settings.path, after=after, stop=lambda: False):
            _print_entry(entry, as_json)


@audit.command()
@click.option("--from-checkpoint", is_flag=True, help="Start at the latest signed checkpoint.")
@click.option(
    "--trusted-keys", metavar="FILE", default=None, help="Trusted public keys (default: config)."
)
@click.option("--json", "as_json", is_flag=True, help="Print the result as JSON.")
@log_option
@config_option
def verify(
    from_checkpoint: bool,
    trusted_keys: str | None,
    as_json: bool,
    log: str | None,
    config_path: str,
) -> None:
    """Check the whole chain and its signed checkpoints; name the first broken link.

    Exit codes: 0 intact, 1 tampered, 2 unreadable input or no trusted keys.
    """
    from dolmen.audit.verify import verify_log
    from dolmen.keys.trust import load_trusted_keys

    settings = _settings(config_path, log)
    trust_path = Path(trusted_keys) if trusted_keys else settings.trusted_keys
    if trusted_keys and not trust_path.exists():
        raise InputError("no such trusted keys file", path=str(trust_path))
    trust = load_trusted_keys(trust_path)
    report = verify_log(
        settings.path,
        trust,
        from_checkpoint=from_checkpoint,
        checkpoint_every=settings.checkpoint_every,
        trust_source=str(trust_path),
    )
    if as_json:
        doc: dict[str, Any] = {
            "schema": "dolmen.audit.verify/1",
            "intact": report.ok,
            "files": [str(f) for f in report.files],
            "events": report.events,
            "first_sequence": report.first_sequence,
            "last_sequence": report.last_sequence,
            "head": report.last_hash,
            "checkpoints": report.checkpoints,
            "last_checkpoint": report.last_checkpoint,
            "notes": report.notes,
            "problem": None,
        }
        if report.problem is not None:
            p = report.problem
            doc["problem"] = {
                "kind": p.kind,
                "file": str(p.file),
                "line": p.line,
                "sequence": p.sequence,
                "message": p.message,
            }
        click.echo(json.dumps(doc, indent=2))
    elif report.problem is not None:
        p = report.problem
        where = f"{p.file}:{p.line}" + (f" (event {p.sequence})" if p.sequence else "")
        click.echo(f"audit log TAMPERED: {p.kind} at {where}: {p.message}")
    else:
        click.echo(
            f"audit log intact: {report.events} events in {len(report.files)} file(s), "
            f"up to event {report.last_sequence} (head {report.last_hash[:16]}), "
            f"{report.checkpoints} signed checkpoint(s) verified"
        )
        for note in report.notes:
            click.echo(f"note: {note}")
    if report.problem is not None:
        exit_with(int(ExitCode.UNHEALTHY))


@audit.command()
@config_option
def checkpoint(config_path: str) -> None:
    """Sign the log's head now with the audit key (created on first use)."""
    from dolmen.audit.record import checkpoint as make_checkpoint

    event = make_checkpoint(_settings(config_path))
    body = event.checkpoint or {}
    click.echo(
        f"checkpoint {event.sequence}: event {body.get('sequence')} signed by "
        f"{body.get('key_id')} (epoch {body.get('epoch')})"
    )


@audit.command()
@click.option("--rotate", is_flag=True, help="Replace the key by one in the next epoch.")
@config_option
def key(rotate: bool, config_path: str) -> None:
    """Print the trust line of the audit key (to pin it off this host), or rotate the key."""
    from dolmen.audit.checkpoint import open_signer
    from dolmen.audit.keyrotation import rotate_key
    from dolmen.keys.trust import trust_line

    settings = _settings(config_path)
    if rotate:
        signer = rotate_key(settings)
    else:
        signer = open_signer(settings)
    click.echo(trust_line(signer.public_key, signer.epoch))


@audit.command(name="export")
@click.option(
    "--format", "fmt", type=click.Choice(["rfc5424", "cef", "json"]), required=True, help="Shape."
)
@click.option("--to", "to", required=True, help="tcp://HOST:PORT, tls://HOST:PORT or file:PATH.")
@click.option("--ca", type=_FILE, help="CA of the receiver (tls://).")
@click.option("--cert", type=_FILE, help="Our client certificate (tls://).")
@click.option("--key", "key_file", type=_FILE, help="Its private key.")
@click.option("--server-name", default=None, help="Name to check in the receiver's certificate.")
@click.option("--spool", default=None, metavar="DIR", help="Spool folder (default: state dir).")
@click.option(
    "--batch",
    default=500,
    show_default=True,
    type=click.IntRange(1, 100_000),
    help="Events per delivery.",
)
@click.option(
    "--timeout",
    default=10.0,
    show_default=True,
    type=click.FloatRange(0, 3600, min_open=True),
    help="Seconds to wait on the network.",
)
@log_option
@config_option
def export_cmd(
    fmt: str,
    to: str,
    ca: str | None,
    cert: str | None,
    key_file: str | None,
    server_name: str | None,
    spool: str | None,
    batch: int,
    timeout: float,
    log: str | None,
    config_path: str,
) -> None:
    """Send the events not yet delivered to a SIEM (at least once; dedup key host+sequence)."""
    from dolmen.audit.export import TlsFiles, export

    _check_tls_flags(to, ca, cert, key_file, server_name)
    settings = _settings(config_path, log)
    tls = TlsFiles(
        Path(ca) if ca else None,
        Path(cert) if cert else None,
        Path(key_file) if key_file else None,
        server_name,
    )
    result = export(
        settings,
        fmt,
        to,
        tls=tls,
        spool_root=Path(spool) if spool else None,
        batch_size=batch,
        timeout=timeout,
    )
    span = f" (events {result.first} to {result.last})" if result.sent else ""
    click.echo(f"exported {result.sent} event(s){span} to {result.destination} as {fmt}")
    if result.resent:
        click.echo(f"re-sent {result.resent} event(s) left in the spool by an earlier export")
    for line in result.skipped:
        click.echo(f"warning: skipped a line that is not an event: {line}", err=True)
    for note in result.notes:
        click.echo(f"warning: {note}", err=True)
    if result.sent:
        from dolmen.audit import record_event

        try:
            record_event(
                "audit.export",
                result.destination,
                details={"format": fmt, "first": result.first, "last": result.last},
            )
        except AuditUnavailable as e:  # the export happened; say it could not be recorded
            click.echo(f"warning: the export itself was not audited: {e.message}", err=True)


def _check_tls_flags(
    to: str, ca: str | None, cert: str | None, key: str | None, server_name: str | None
) -> None:
    """TLS input mistakes are usage errors, found before anything is sent (they used to be
    reported as delivery failures, as if the receiver were down)."""
    given = [n for n, v in (("--ca", ca), ("--cert", cert), ("--key", key)) if v]
    if server_name:
        given.append("--server-name")
    if given and not to.startswith("tls://"):
        raise UsageError(f"{', '.join(given)} apply to tls:// only, not {to}")
    if bool(cert) != bool(key):
        raise UsageError(
            "--cert and --key go together (a client certificate needs its private key)",
            hint="give both, or neither",
        )


def _print_entry(entry: Entry, as_json: bool) -> None:
    if entry.event is None:
        click.echo(f"!! {entry.file}:{entry.number}: not an event ({entry.error})", err=True)
        return
    if as_json:
        sys.stdout.write(entry.line.decode("ascii", errors="replace"))
        sys.stdout.flush()
        return
    e = entry.event
    who = e.actor.name or "-"
    if e.actor.effective_name and e.actor.effective_name != e.actor.name:
        who += f"({e.actor.effective_name})"
    click.echo(
        f"{e.sequence:>7} {e.timestamp[:19]}Z {who:<16} {e.outcome:<7} {e.action} {e.target}"
    )

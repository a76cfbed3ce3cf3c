"""``dolmen serve``: the node agent (API, /metrics, the warm quick tier), and
``dolmen serve token add|list|revoke`` for its bearer tokens (docs/serve.md)."""

from __future__ import annotations

import json
import sys
from typing import Any

import click

from dolmen.cli.common import config_option, from_option


@click.group(invoke_without_command=True)
@click.option(
    "--listen", metavar="HOST:PORT", help="Address to listen on (default 127.0.0.1:9405)."
)
@click.option("--interval", metavar="DURATION", help="Run the quick tier every DURATION (5m).")
@click.option("--run-timeout", "run_timeout", metavar="DURATION", help="Bound each run (60s).")
@click.option(
    "--max-age",
    "max_age",
    metavar="DURATION",
    help="Refuse to answer validate clients with a verdict older than this "
    "(default: 3 intervals plus the run timeout); they run cold instead.",
)
@click.option(
    "--state", metavar="DIR", help="State folder (default $DOLMEN_STATE_DIR or /var/lib/dolmen)."
)
@click.option(
    "--tls-cert", "tls_cert", metavar="FILE", help="Serve HTTPS with this PEM certificate."
)
@click.option("--tls-key", "tls_key", metavar="FILE", help="The certificate's PEM key.")
@click.option(
    "--tls-client-ca",
    "tls_client_ca",
    metavar="FILE",
    help="Mutual TLS: require client certificates signed by this CA.",
)
@click.option("--fleet", metavar="DIR", help="Mount the fleet dashboard of DIR at /fleet.")
@click.option(
    "--host-root",
    "host_root",
    metavar="DIR",
    envvar="DOLMEN_HOST_ROOT",
    help="Read this node's /proc, /sys, /etc and /dev under DIR (the agent in a container, "
    "with the node's / mounted there read-only); env DOLMEN_HOST_ROOT.",
)
@from_option
@config_option
@click.pass_context
def serve(ctx: click.Context, /, config_path: str | None, **flags: Any) -> None:
    """Run the node agent: read API, /metrics, /healthz, /readyz, and the quick tier
    every --interval, answering `dolmen validate --level quick` without a cold start."""
    ctx.ensure_object(dict)
    ctx.obj["state"] = flags.get("state")
    ctx.obj["config_path"] = config_path
    if ctx.invoked_subcommand is not None:
        return
    from dolmen.config import load_config
    from dolmen.serve.agent import Agent
    from dolmen.serve.app import ServeState, make_app
    from dolmen.serve.auth import Authenticator, TokenFile
    from dolmen.serve.server import listen_socket, run
    from dolmen.serve.settings import resolve
    from dolmen.serve.store import Store

    config = load_config(config_path)
    settings = resolve(flags, config)
    from dolmen.host import open_host, open_live

    root = settings.host_root
    if settings.source is not None:
        open_host(settings.source).close()  # a bad --from: refused before anything listens
    elif root is not None:
        open_live(root).close()  # a bad --host-root: likewise
    store = Store(settings.folder / "agent.db")
    if store.degraded:
        click.echo(f"dolmen serve: {store.degraded}; serving read-only", err=True)
    agent = Agent(
        store,
        source=settings.source,
        interval=settings.interval,
        run_timeout=settings.run_timeout,
        max_age=settings.max_age,
        config=config,
        host_factory=(lambda: open_live(root)) if root is not None else None,
    )
    auth = Authenticator(TokenFile(settings.folder / "tokens.json"))
    state = ServeState(agent, auth, settings.open_reads)
    app = make_app(state, fleet=settings.fleet)
    try:
        sock = listen_socket(settings.listen)  # before the banner: a port in use says only so
    except BaseException:
        store.close()
        raise
    scheme = "https" if settings.listen.tls_cert else "http"
    click.echo(
        f"dolmen serve: {scheme}://{settings.listen.host}:{settings.listen.port} "
        f"(quick tier every {settings.interval:g} s, state {settings.folder}"
        + (f", the node's files under {root})" if root is not None else ")"),
        err=True,
    )
    try:
        run(app, settings.listen, sock)
    finally:
        store.close()


def _tokens(ctx: click.Context) -> Any:
    from dolmen.config import load_config
    from dolmen.serve.auth import TokenFile
    from dolmen.serve.settings import resolve

    settings = resolve({"state": ctx.obj.get("state")}, load_config(ctx.obj.get("config_path")))
    return TokenFile(settings.folder / "tokens.json")


@serve.group()
def token() -> None:
    """Add, list and revoke the bearer tokens of the API (stored hashed)."""


@token.command("add")
@click.argument("principal")
@click.option(
    "--role",
    type=click.Choice(["viewer", "operator", "admin"]),
    default="viewer",
    show_default=True,
    help="viewer reads; operator also drains, resumes, cancels jobs, applies profiles.",
)
@click.pass_context
def token_add(ctx: click.Context, principal: str, role: str) -> None:
    """Make a token for PRINCIPAL; the token is printed once, only its hash is kept."""
    from dolmen.serve.writes import audited

    tokens = _tokens(ctx)
    details = {"principal": principal, "role": role}
    row, secret = audited(
        "serve.token.add", "tokens", details, None, lambda: tokens.add(principal, role)
    )
    click.echo(secret)
    click.echo(f"token {row.id} for {principal} ({role}); it is not shown again", err=True)


@token.command("list")
@click.option("--json", "as_json", is_flag=True, help="Print the dolmen.serve.tokens/1 document.")
@click.pass_context
def token_list(ctx: click.Context, as_json: bool) -> None:
    """The tokens: id, principal, role, when made (never the secret)."""
    from dolmen.serve.auth import public_rows

    rows = public_rows(_tokens(ctx).load())
    if as_json:
        sys.stdout.write(
            json.dumps({"schema": "dolmen.serve.tokens/1", "tokens": rows}, indent=2) + "\n"
        )
        return
    if not rows:
        click.echo("no tokens (add one: dolmen serve token add NAME --role viewer)")
    for r in rows:
        click.echo(f"{r['id']}  {r['role']:<8}  {r['principal']}  {r['created']}")


@token.command("revoke")
@click.argument("token_id")
@click.pass_context
def token_revoke(ctx: click.Context, token_id: str) -> None:
    """Remove a token by its id (the server rereads the file: no restart)."""
    from dolmen.serve.writes import audited

    tokens = _tokens(ctx)
    gone = audited(
        "serve.token.revoke", f"token:{token_id}", {}, None, lambda: tokens.revoke(token_id)
    )
    click.echo(f"revoked {gone.id} ({gone.principal}, {gone.role})")

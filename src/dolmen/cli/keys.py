"""``dolmen keys``: which key provider, which key versions, whether it answers; rotation.

``status`` exits 0 when the provider answers, 3 when it does not (a dead or sealed
server, a refused token or PIN, a key file others may read), 2 when it could not be
asked. ``rotate`` prints its plan and changes nothing without ``--yes``; with it,
the rotation is audited (intent, then result) and an audit log that cannot be
written refuses it (exit 4). A rotation keeps the older versions: they still unwrap
until ``--retire-below`` raises the minimum decryption version, which a later
``--retire-below`` with a lower version undoes (docs/keys.md).
"""

from __future__ import annotations

import json
from typing import Any

import click

from dolmen.cli.common import config_option
from dolmen.cli.main import exit_with
from dolmen.errors import ExitCode, UsageError
from dolmen.keys import KeyProblem, KeyProvider, ProviderStatus
from dolmen.keys.settings import KeySettings

SCHEMA = "dolmen.keys.status/1"


def _settings(config_path: str | None) -> KeySettings:
    """The [keys] settings, the file provider's signing key being the audit log's."""
    from dolmen.audit.settings import audit_settings
    from dolmen.config import load_config

    return audit_settings(load_config(config_path)).keys


def _open(settings: KeySettings) -> KeyProvider:
    from dolmen.audit.keyevents import audit_release
    from dolmen.keys.providers import open_provider

    return open_provider(settings, on_release=audit_release)


def provider_status(settings: KeySettings) -> tuple[ProviderStatus, str | None]:
    """The provider's status, and the hint of its problem; a provider that cannot even be
    opened (its token file is loose, its address not set) does not answer."""
    from dolmen.keys.providers import where

    try:
        status = _open(settings).status()
    except KeyProblem as e:
        return ProviderStatus(
            settings.provider, where(settings), False, None, (), e.message
        ), e.hint
    return status, None


def status_document(status: ProviderStatus, hint: str | None) -> dict[str, Any]:
    """The ``--json`` document of ``keys status``."""
    return {
        "schema": SCHEMA,
        "provider": status.provider,
        "where": status.where,
        "answers": status.answers,
        "latency_ms": None if status.latency_ms is None else round(status.latency_ms, 3),
        "keys": [
            {
                "key_ref": k.key_ref,
                "purpose": k.purpose,
                "latest": k.latest,
                "min_decryption": k.min_decryption,
                "versions": list(k.versions),
            }
            for k in status.keys
        ],
        "detail": status.detail,
        "hint": hint,
    }


def _versions(versions: tuple[int, ...]) -> str:
    if len(versions) > 2 and list(versions) == list(range(versions[0], versions[-1] + 1)):
        return f"{versions[0]}-{versions[-1]}"
    return ",".join(map(str, versions)) or "-"


@click.group()
def keys() -> None:
    """Show and rotate the keys of the site's key provider."""


@keys.command()
@click.option("--json", "as_json", is_flag=True, help="Print a dolmen.keys.status/1 document.")
@config_option
def status(as_json: bool, config_path: str | None) -> None:
    """Which provider, which key versions, and whether it answers (and how fast)."""
    state, hint = provider_status(_settings(config_path))
    if as_json:
        click.echo(json.dumps(status_document(state, hint), indent=2))
    else:
        answer = {True: "answers", False: "does NOT answer", None: "unknown"}[state.answers]
        took = f" ({state.latency_ms:.1f} ms)" if state.latency_ms is not None else ""
        click.echo(f"provider {state.provider}  {state.where}  {answer}{took}")
        for k in state.keys:
            retired = f"  min decryption {k.min_decryption}" if k.purpose == "wrap" else ""
            click.echo(
                f"  {k.purpose:<4}  {k.key_ref}  versions {_versions(k.versions)}  "
                f"newest {k.latest}{retired}"
            )
        if state.detail:
            click.echo(f"  {state.detail}")
        if hint:
            click.echo(f"  hint: {hint}")
    code = {True: ExitCode.OK, False: ExitCode.ENVIRONMENT, None: ExitCode.UNDECIDED}
    exit_with(code[state.answers])


def rotation_plan(state: ProviderStatus, retire_below: int | None) -> list[str]:
    """What ``keys rotate`` will do, one line a step (pure: the dry run prints it)."""
    wrap = next((k for k in state.keys if k.purpose == "wrap"), None)
    latest = wrap.latest if wrap else 0
    name = wrap.key_ref if wrap else "(made now)"
    steps = [f"put KEK version {latest + 1} of {state.provider} {name} in service"]
    if retire_below is not None:
        if retire_below < 1 or retire_below > latest + 1:
            raise UsageError(
                f"--retire-below {retire_below}: the versions are 1 to {latest + 1} after "
                "this rotation",
                hint="pick a version that exists; data keys wrapped below it stop unwrapping",
            )
        steps.append(
            f"retire the versions below {retire_below}: blobs they wrapped no longer unwrap "
            "(rewrap them first; undo with a lower --retire-below)"
        )
    return steps


@keys.command()
@click.option(
    "--retire-below",
    type=int,
    default=None,
    metavar="N",
    help="Raise the minimum decryption version to N.",
)
@click.option("--yes", is_flag=True, help="Rotate (without it: print the plan only).")
@config_option
def rotate(retire_below: int | None, yes: bool, config_path: str | None) -> None:
    """Put a new KEK version in service (older ones still unwrap unless retired)."""
    settings = _settings(config_path)
    provider = _open(settings)
    state = provider.status()
    if state.answers is False:
        raise KeyProblem(state.detail or f"the {state.provider} provider does not answer")
    steps = rotation_plan(state, retire_below)
    for step in steps:
        click.echo(f"plan: {step}")
    if not yes:
        click.echo("dry run: nothing changed (pass --yes to rotate)")
        return
    from dolmen.audit.keyevents import key_change

    target = f"{state.provider}:{state.where}"
    with key_change("keys.rotate", target, {"provider": state.provider}) as result:
        result["version"] = version = provider.rotate()
    click.echo(f"KEK version {version} in service")
    if retire_below is not None:
        details = {"provider": state.provider, "min_decryption_version": retire_below}
        with key_change("keys.retire", target, details):
            provider.set_min_decryption_version(retire_below)
        click.echo(f"versions below {retire_below} retired")

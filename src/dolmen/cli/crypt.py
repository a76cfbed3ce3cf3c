"""``dolmen crypt``: provider-wrapped LUKS2 keys (docs/crypt.md). Dry run unless ``--yes``."""

from __future__ import annotations

import json
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any, TypeVar

import click

from dolmen.cli.common import config_option

F = TypeVar("F", bound=Callable[..., Any])
KEY_FILE_MAX = 8 << 20  # cryptsetup's own limit on a key file (DEFAULT_KEYFILE_SIZE_MAXKB)


def _common(f: F) -> F:
    f = click.option("--json", "as_json", is_flag=True, help="Print JSON.")(f)
    f = click.option("--yes", is_flag=True, help="Apply (default: print the plan only).")(f)
    f = config_option(f)
    return click.argument("device")(f)


def _provider_option(f: F) -> F:
    return click.option(
        "--provider",
        type=click.Choice(["vault", "pkcs11", "file"]),
        help="Key provider (default: the token's, else [keys] provider of dolmen.toml).",
    )(f)


def _key_file_option(f: F) -> F:
    return click.option(
        "--key-file",
        metavar="FILE",
        help="A passphrase or key file of an existing keyslot (read verbatim, as cryptsetup).",
    )(f)


@click.group()
def crypt() -> None:
    """Enrol, unlock, rotate and recover LUKS2 devices with keys from Vault, an HSM or a file."""


@crypt.command()
@_common
@_provider_option
@_key_file_option
def enrol(device: str, provider: str | None, key_file: str | None, **kw: Any) -> None:
    """Add a fresh random key to a keyslot, wrapped by the provider in a dolmen token."""
    from dolmen.crypt import ops

    if key_file is None:
        from dolmen.errors import UsageError

        raise UsageError("enrol needs --key-file: a passphrase or key of an existing keyslot")
    dev, config = _device(device), _config(kw)
    existing = _read_key(key_file)
    header = ops.load(_host(), dev)
    name = provider or str(config.get("keys", "provider", "file"))
    plan = ops.plan_enrol(header, dev, name)
    _run(plan, kw, lambda cs: ops.run_enrol(plan, _provider(config, name), existing, cs))


@crypt.command()
@_common
@_provider_option
@click.option("--name", help="Open as /dev/mapper/NAME (default: only test the key).")
def unlock(device: str, provider: str | None, name: str | None, **kw: Any) -> None:
    """Unwrap the token's key (a key release) and open the device, or test it."""
    from dolmen.crypt import ops

    dev, config = _device(device), _config(kw)
    plan = ops.plan_unlock(ops.load(_host(), dev), dev, name)
    _run(plan, kw, lambda cs: ops.run_unlock(plan, _token_provider(config, provider, plan), cs))


@crypt.command()
@_common
@_provider_option
def rotate(device: str, provider: str | None, **kw: Any) -> None:
    """Rewrap the token's key to the provider's newest key version (no re-encryption)."""
    from dolmen.crypt import ops

    dev, config = _device(device), _config(kw)
    plan = ops.plan_rotate(ops.load(_host(), dev), dev)
    _run(plan, kw, lambda cs: ops.run_rotate(plan, _token_provider(config, provider, plan), cs))


@crypt.command(name="recovery-key")
@_common
@_provider_option
@_key_file_option
def recovery_key(device: str, provider: str | None, key_file: str | None, **kw: Any) -> None:
    """Add a printed recovery passphrase in a keyslot of its own (unlocked with --key-file,
    else the dolmen token)."""
    from dolmen.crypt import ops

    dev, config = _device(device), _config(kw)
    existing = _read_key(key_file) if key_file else None
    plan = ops.plan_recovery(ops.load(_host(), dev), dev, with_token=existing is None)

    def body(cs: Any) -> dict[str, Any]:
        keys = None if existing is not None else _token_provider(config, provider, plan)
        return ops.run_recovery(plan, cs, existing=existing, provider=keys)

    _run(plan, kw, body)


def _run(plan: Any, kw: dict[str, Any], body: Callable[[Any], dict[str, Any]]) -> None:
    from dolmen.crypt.engine import apply
    from dolmen.host.cryptsetup import Cryptsetup

    if not kw["yes"]:
        if kw["as_json"]:
            _emit(plan.to_json())
            return
        click.echo(f"{plan.action} {plan.device} (LUKS UUID {plan.uuid}):")
        for n, step in enumerate(plan.steps, 1):
            click.echo(f"  {n}. {step}")
        click.echo("dry run: nothing changed; pass --yes to apply")
        return
    cs = Cryptsetup()
    done = apply(plan, lambda: body(cs), cryptsetup=cs)
    secret = done.pop("_recovery_key", None)
    if kw["as_json"]:
        doc = {**plan.to_json(), "schema": "dolmen.crypt.result/1", "result": done}
        if secret:
            doc["recovery_key"] = secret
        _emit(doc)
        return
    for key, value in done.items():
        click.echo(f"{key}: {value}")
    if secret:
        click.echo("recovery key (write it down now; it is stored nowhere else):")
        click.echo(f"  {secret}")
    click.echo(f"{plan.action}: done")


def _device(device: str) -> str:
    from dolmen.crypt.device import absolute

    return absolute(device)


def _host() -> Any:
    from dolmen.host import open_host

    return open_host()


def _config(kw: dict[str, Any]) -> Any:
    from dolmen.config import load_config

    return load_config(kw["config_path"])


def _provider(config: Any, name: str) -> Any:
    from dolmen.crypt.keys import provider_for

    return provider_for(config, name)


def _token_provider(config: Any, name: str | None, plan: Any) -> Any:
    """The provider named on the command line, else the one that wrapped the token."""
    from dolmen.crypt.keys import provider_for
    from dolmen.crypt.ops import read_token
    from dolmen.host.cryptsetup import Cryptsetup

    if name is None:
        _, wrapped = read_token(Cryptsetup(), plan, header_token=True)
        name = wrapped.provider
    return provider_for(config, name)


def _read_key(path: str) -> bytes:
    from dolmen.errors import InputError
    from dolmen.fsutil import read_regular

    try:
        data = read_regular(Path(path), KEY_FILE_MAX)
    except OSError as e:
        raise InputError(f"cannot read the key file ({e.strerror or e})", path=path) from None
    if not data:
        raise InputError("the key file is empty", path=path)
    return data


def _emit(doc: dict[str, Any]) -> None:
    sys.stdout.write(json.dumps(doc, indent=2, sort_keys=True) + "\n")

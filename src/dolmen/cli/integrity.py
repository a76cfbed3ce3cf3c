"""``dolmen integrity``: seal the boot chain and the AI stack, verify them (docs/integrity.md).

``verify`` exits 0 when every file matches the manifest, 1 when something changed or
the manifest's seal does not hold (unsigned, untrusted key, bad signature: one line
names it), 2 when it could not decide (files it could not read and no change, a file
that is not a manifest, no trusted keys), 3 when a permission refused the manifest.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import click

from dolmen.cli.common import config_option
from dolmen.cli.main import exit_with
from dolmen.config import load_config
from dolmen.errors import ExitCode, UsageError
from dolmen.keys import PROVIDERS

SCHEMA = "dolmen.integrity.verify/1"


@click.group()
def integrity() -> None:
    """Seal and verify the boot chain and the AI stack; attest the boot (TPM)."""


@integrity.command()
@click.option("-o", "--output", "output", metavar="MANIFEST", required=True, help="Write here.")
@click.option("--root", default="/", show_default=True, help="Seal the files under this root.")
@click.option("--key", metavar="FILE", default=None, help="A dolmen key file (default: site).")
@click.option(
    "--provider",
    type=click.Choice(PROVIDERS),
    default=None,
    help="Sign with this key provider's key (default: [keys] provider).",
)
@click.option("--kernel", metavar="RELEASE", default=None, help="Kernel release (uname -r).")
@click.option("--workers", type=click.IntRange(1, 64), default=None, help="Hashing threads.")
@config_option
def seal(
    output: str,
    root: str,
    key: str | None,
    provider: str | None,
    kernel: str | None,
    workers: int | None,
    config_path: str | None,
) -> None:
    """Write a signed manifest of the boot chain and the AI stack files."""
    from dolmen.fsutil import output_target, write_output
    from dolmen.integrity.hostroot import open_root
    from dolmen.integrity.seal import seal as make_seal
    from dolmen.integrity.signing import site_signer

    target = Path(output)
    output_target(target, what="manifest")  # refused before minutes of hashing
    if key and provider:
        raise UsageError("--key and --provider name two signers; give one")
    signer = site_signer(load_config(config_path), Path(key) if key else None, provider)
    with open_root(root) as host:
        sealed = make_seal(host, signer, kernel=kernel, workers=workers)
    write_output(target, sealed.data, what="manifest")
    sets = ", ".join(s.name for s in sealed.sets if s.paths)
    click.echo(
        f"sealed {sealed.files} files ({sealed.hashed_bytes / 1e6:.1f} MB hashed) of {sets} "
        f"into {output}, signed by {signer.public_key.key_id} (epoch {signer.epoch})"
    )


@integrity.command()
@click.argument("manifest", metavar="MANIFEST")
@click.option("--full", is_flag=True, help="Hash every file again (default: trust unchanged stat).")
@click.option("--root", default=None, help="Verify the files under this root (default: sealed).")
@click.option("--trusted-keys", metavar="FILE", default=None, help="Trusted keys (default: site).")
@click.option("--workers", type=click.IntRange(1, 64), default=None, help="Hashing threads.")
@click.option("--json", "as_json", is_flag=True, help="Print the result as JSON.")
@config_option
def verify(
    manifest: str,
    full: bool,
    root: str | None,
    trusted_keys: str | None,
    workers: int | None,
    as_json: bool,
    config_path: str | None,
) -> None:
    """Name every file added, removed or changed since MANIFEST was sealed.

    Exit codes: 0 intact, 1 changed or the seal does not hold, 2 could not decide,
    3 permission denied.
    """
    from dolmen.integrity.signing import trust_store
    from dolmen.integrity.verify import read_manifest
    from dolmen.integrity.verify import verify as run_verify

    config = load_config(config_path)
    trust, _ = trust_store(config, Path(trusted_keys) if trusted_keys else None)
    sealed = read_manifest(Path(manifest), trust)
    result = run_verify(sealed, root=root, full=full, workers=workers)
    code = ExitCode.OK
    if result.changes:
        code = ExitCode.UNHEALTHY
    elif result.unread:
        code = ExitCode.UNDECIDED
    if as_json:
        click.echo(json.dumps(_document(manifest, result, int(code)), indent=2))
    else:
        for change in result.changes:
            click.echo(change.line())
        for u in result.unread:
            click.echo(f"unverified {u.path}: {u.reason}")
        m = result.manifest
        how = (
            f"{result.hashed} hashed"
            if full
            else f"{result.trusted} unchanged by stat, {result.hashed} hashed"
        )
        seal_text = f"sealed {m.created} by {m.key_id} (epoch {m.epoch})"
        if code == ExitCode.OK:
            click.echo(f"intact: {result.files} files match {manifest} ({how}; {seal_text})")
        elif code == ExitCode.UNHEALTHY:
            click.echo(
                f"CHANGED: {len(result.changes)} change(s) in {len(m.entries)} sealed files "
                f"({how}; {seal_text})"
            )
        else:
            click.echo(f"could not verify {len(result.unread)} file(s); nothing else changed")
    if code != ExitCode.OK:
        exit_with(int(code))


def _document(manifest: str, result: Any, code: int) -> dict[str, Any]:
    m = result.manifest
    return {
        "schema": SCHEMA,
        "intact": result.intact,
        "exit_code": code,
        "manifest": manifest,
        "root": result.root,
        "mode": "full" if result.full else "incremental",
        "sealed": {
            "key_id": m.key_id,
            "epoch": m.epoch,
            "created": m.created,
            "host": m.host,
            "kernel": m.kernel,
            "sets": [s.name for s in m.sets],
        },
        "files": result.files,
        "hashed": result.hashed,
        "trusted": result.trusted,
        "changes": [c.to_json() for c in result.changes],
        "unverified": [{"path": u.path, "reason": u.reason} for u in result.unread],
    }


from dolmen.cli.integrity_attest import attest  # noqa: E402

integrity.add_command(attest)

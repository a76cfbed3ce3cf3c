"""``integrity.manifest``: the boot chain and the AI stack are the files sealed.

Runs when the site names a manifest (``[validate] integrity_manifest``, made by
``dolmen integrity seal``). The incremental verify of docs/integrity.md: a stat of
every sealed file, a hash of those whose stat moved. A manifest, a trust store or a
file that cannot be read is ``unknown``, never a pass; a seal that does not hold
(unsigned, untrusted key, bad signature) fails like any change: nothing it vouches
for can be believed.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from dolmen.checks.context import Context
from dolmen.checks.model import Level, Outcome, check, failed, passed, skipped, unknown
from dolmen.errors import DolmenError

REMEDY = (
    "Run `dolmen integrity verify <manifest>` to see every change. If it was not yours, "
    "drain the node and investigate (a changed kernel, module or libcuda is a compromise "
    "until shown otherwise); after an intended update, seal again from the known-good "
    "state: dolmen integrity seal -o <manifest>."
)
_SHOWN = 8


@check(
    "integrity.manifest",
    title="The boot chain and AI stack match the signed manifest ([validate] integrity_manifest)",
    level=Level.STANDARD,
    remedy=REMEDY,
    source="AIDE --check, Keylime's runtime policy: a signed list of known-good files",
)
def integrity_manifest(ctx: Context) -> list[Outcome]:
    """Reads the manifest named by ``[validate] integrity_manifest``, checks its seal
    against the site's trust store, then stats (and where needed hashes) every file."""
    where = ctx.config.get("validate", "integrity_manifest")
    if where is None:
        return [skipped("host", 'no manifest configured ([validate] integrity_manifest = "FILE")')]
    # Imported here: a site without a manifest (most) never pays for cryptography's import.
    from dolmen.integrity.manifest import ManifestRefused
    from dolmen.integrity.signing import trust_store
    from dolmen.integrity.verify import read_manifest, verify

    ev: dict[str, Any] = {"manifest": str(where)}
    try:
        trust, _ = trust_store(ctx.config)
        manifest = read_manifest(Path(str(where)), trust)
    except ManifestRefused as e:
        return [failed("host", f"the manifest's seal does not hold: {e.message}", **ev)]
    except DolmenError as e:
        return [unknown("host", f"the manifest cannot be checked: {e.message}", **ev)]
    if os.path.realpath(manifest.root) != os.path.realpath(ctx.host.root):
        return [
            unknown(
                "host",
                f"the manifest was sealed from {manifest.root}, this host is "
                f"{ctx.host.root}: nothing to compare",
                **ev,
            )
        ]
    result = verify(manifest, host=ctx.host)
    ev |= {"files": result.files, "hashed": result.hashed, "key_id": manifest.key_id}
    if result.changes:
        shown = "; ".join(c.line().replace("  ", " ") for c in result.changes[:_SHOWN])
        more = f" (and {len(result.changes) - _SHOWN} more)" if len(result.changes) > _SHOWN else ""
        return [
            failed(
                "host",
                f"{len(result.changes)} change(s) since the seal of {manifest.created}: "
                f"{shown}{more}",
                changes=[c.to_json() for c in result.changes[:100]],
                unverified=[u.path for u in result.unread[:100]],
                **ev,
            )
        ]
    if result.unread:
        first = result.unread[0]
        return [
            unknown(
                "host",
                f"{len(result.unread)} sealed file(s) could not be read (first: {first.path}: "
                f"{first.reason}); the rest match",
                unverified=[u.path for u in result.unread[:100]],
                **ev,
            )
        ]
    return [
        passed(
            "host",
            f"all {result.files} sealed files match the manifest of {manifest.created}",
            **ev,
        )
    ]

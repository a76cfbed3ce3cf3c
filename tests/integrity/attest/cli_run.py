"""The attest group run in process as `dolmen integrity attest` runs it, for the tests."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from click.testing import CliRunner

from dolmen.cli.integrity_attest import attest
from dolmen.errors import DolmenError
from tests.report.contract import assert_valid

NONCE = "a1" * 32
PCRS = "sha256:0-10+sha1:10"


def run(*argv: str) -> tuple[int, str]:
    """The group as `dolmen integrity attest` runs it: a DolmenError is its exit code."""
    result = CliRunner().invoke(attest, list(argv))
    if isinstance(result.exception, DolmenError):
        return int(result.exception.exit_code), str(result.exception)
    if result.exception is not None and not isinstance(result.exception, SystemExit):
        raise result.exception
    return result.exit_code, result.output


def verify(
    quote: Path, ak_pub: Path, node: Path, *extra: str, nonce: str = NONCE
) -> tuple[int, dict[str, Any]]:
    args = ["verify", str(quote), "--ak-pub", str(ak_pub), "--nonce", nonce, "--json"]
    rc, text = run(
        *args, *(extra or ("--eventlog", str(node / "eventlog"), "--ima", str(node / "ima")))
    )
    doc = json.loads(text) if text.startswith("{") else {"error": text}
    if "schema" in doc:
        assert_valid(doc)
    return rc, doc

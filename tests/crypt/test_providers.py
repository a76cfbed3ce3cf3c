"""enrol, unlock and rotate with the real key services: OpenBao transit (derived keys, the
LUKS UUID as context) and a SoftHSM2 token (a non-extractable KEK); a sealed Vault refuses
the enrolment and leaves the header as it was."""

from __future__ import annotations

import json
from dataclasses import fields
from pathlib import Path
from typing import Any

import pytest

from dolmen.cli.main import main
from dolmen.keys.providers import open_provider
from dolmen.keys.settings import KeySettings
from tests.crypt.images import needs_cryptsetup
from tests.crypt.test_enrol import events, header
from tests.report.contract import assert_valid

pytestmark = needs_cryptsetup


def site(config_dir: Path, settings: KeySettings) -> None:
    """The site's dolmen.toml with ``[keys]`` from ``settings``."""
    lines = ["[keys]"]
    for f in fields(KeySettings):
        value = getattr(settings, f.name)
        if value is None or (value == getattr(KeySettings(), f.name) and f.name != "provider"):
            continue
        lines.append(f"{f.name} = {json.dumps(str(value) if isinstance(value, Path) else value)}")
    (config_dir / "dolmen.toml").write_text("\n".join(lines) + "\n")


def crypt(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, Any, str]:
    rc = main(["crypt", *args, "--json"])
    out = capsys.readouterr()
    return rc, (json.loads(out.out) if out.out.strip() else None), out.err


def cycle(capsys: pytest.CaptureFixture[str], image: Path, settings: KeySettings) -> None:
    key = str(image.with_suffix(".key"))
    provider = settings.provider
    rc, doc, err = crypt(
        capsys, "enrol", str(image), "--provider", provider, "--key-file", key, "--yes"
    )
    assert rc == 0, err
    assert assert_valid(doc)["result"]["provider"] == provider
    rc, doc, err = crypt(capsys, "unlock", str(image), "--yes")  # the token names the provider
    assert rc == 0, err
    assert open_provider(settings).rotate() == 2
    rc, doc, err = crypt(capsys, "rotate", str(image), "--yes")
    assert rc == 0, err
    assert (doc["result"]["from_version"], doc["result"]["kek_version"]) == (1, 2)
    assert crypt(capsys, "unlock", str(image), "--yes")[0] == 0


def test_openbao_transit(
    openbao: Any, image: Path, dolmen_dirs: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    settings = openbao.settings()
    site(dolmen_dirs.parent / "config", settings)
    cycle(capsys, image, settings)
    uuid = header(image).uuid
    releases = [d for a, _, d in events(dolmen_dirs) if a == "keys.release"]
    assert releases and all(d["context"] == uuid for d in releases)


def test_a_sealed_vault_refuses_and_changes_nothing(
    openbao: Any, image: Path, dolmen_dirs: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    site(dolmen_dirs.parent / "config", openbao.settings())
    before = header(image)
    openbao.seal()
    try:
        rc, _, err = crypt(
            capsys,
            "enrol",
            str(image),
            "--provider",
            "vault",
            "--key-file",
            str(image.with_suffix(".key")),
            "--yes",
        )
    finally:
        openbao.unseal()
    assert rc == 3 and len(err.strip().splitlines()) <= 2, err
    assert header(image) == before
    assert events(dolmen_dirs)[-1][:2] == ("crypt.enrol", "failure")


def test_softhsm2(
    softhsm_token: Any, image: Path, dolmen_dirs: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    settings = softhsm_token.settings()
    site(dolmen_dirs.parent / "config", settings)
    cycle(capsys, image, settings)

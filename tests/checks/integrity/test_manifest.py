"""``integrity.manifest``: pass only when a trusted seal holds and every file
matches; unknown when the manifest, the trust store or a file cannot be read."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from dolmen.checks import load_registry
from dolmen.checks.context import Context
from dolmen.checks.model import Finding, Status
from dolmen.checks.runner import run_one
from dolmen.config import Config
from dolmen.host.tree import TreeHost
from tests.integrity.roots import Site, make_site

CHECK = "integrity.manifest"


def _run(root: Path, **validate: str) -> Finding:
    sections: dict[str, dict[str, str]] = {"validate": {}, "audit": {}}
    for key, value in validate.items():
        section = "audit" if key == "trusted_keys" else "validate"
        sections[section][key] = value
    found = run_one(
        Context(TreeHost(root), config=Config(sections=sections)), load_registry()[CHECK]
    )
    assert len(found) == 1
    return found[0]


@pytest.fixture
def site(tmp_path: Path) -> Site:
    s = make_site(tmp_path)
    s.seal()
    return s


def _conf(site: Site) -> dict[str, str]:
    return {"integrity_manifest": str(site.manifest), "trusted_keys": str(site.trust)}


def test_not_configured_is_a_skip(site: Site) -> None:
    assert _run(site.root).status is Status.SKIP


def test_intact_passes_with_the_counts(site: Site) -> None:
    f = _run(site.root, **_conf(site))
    assert f.status is Status.PASS and f.evidence["files"] == 25 and f.evidence["hashed"] == 1


def test_a_change_fails_and_names_it(site: Site) -> None:
    os.chmod(site.root / "etc/modprobe.d/nvidia.conf", 0o666)
    (site.root / "etc/modprobe.d/evil.conf").write_text("install nvidia /bin/sh\n")
    f = _run(site.root, **_conf(site))
    assert f.status is Status.FAIL and f.gating
    assert "2 change(s)" in f.summary and "/etc/modprobe.d/evil.conf" in f.summary
    assert {c["kind"] for c in f.evidence["changes"]} == {"added", "mode"}
    assert f.remedy and "integrity seal" in f.remedy


@pytest.mark.parametrize(
    ("edit", "status", "words"),
    [
        (lambda s: s.manifest.unlink(), Status.UNKNOWN, "no such manifest"),
        (lambda s: s.trust.unlink(), Status.UNKNOWN, "no trusted keys"),
        (lambda s: s.trust.write_text(""), Status.UNKNOWN, "no trusted keys"),
        (
            lambda s: s.manifest.write_bytes(s.manifest.read_bytes()[:-100]),
            Status.FAIL,
            "does not verify",
        ),
        (lambda s: (s.manifest.unlink(), os.mkfifo(s.manifest)), Status.UNKNOWN, "FIFO"),
    ],
    ids=["no manifest", "no trust file", "empty trust file", "truncated", "fifo"],
)
def test_absence_is_unknown_and_a_broken_seal_fails(
    site: Site, edit, status: Status, words: str
) -> None:  # type: ignore[no-untyped-def]
    edit(site)
    f = _run(site.root, **_conf(site))
    assert f.status is status and words in f.summary, f.summary


def test_a_manifest_of_another_root_is_unknown(site: Site, tmp_path: Path) -> None:
    other = tmp_path / "other"
    other.mkdir()
    f = _run(other, **_conf(site))
    assert f.status is Status.UNKNOWN and "nothing to compare" in f.summary

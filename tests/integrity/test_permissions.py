"""Missing permission: a seal refuses (exit 3) rather than write a manifest with holes; a
verify names what it could not read as unverified (exit 2), never as removed or intact.

Root reads anything, so as root the command runs without CAP_DAC_OVERRIDE and
CAP_DAC_READ_SEARCH (setpriv): the kernel then applies the mode bits to root too.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from tests.integrity.roots import MODULES, make_site
from tests.report.contract import assert_valid

_DROP = "-dac_override,-dac_read_search"


def _unprivileged(*argv: str, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    cmd = [sys.executable, "-m", "dolmen.cli.main", *argv]
    if os.geteuid() == 0:
        if shutil.which("setpriv") is None:
            pytest.skip("setpriv (util-linux) is needed to drop root's DAC override")
        cmd = ["setpriv", f"--inh-caps={_DROP}", f"--bounding-set={_DROP}", *cmd]
    return subprocess.run(cmd, capture_output=True, text=True, env=env, timeout=120, check=False)


def test_seal_refuses_and_verify_names_unreadable_files(tmp_path: Path) -> None:
    site = make_site(tmp_path)
    secret = site.root / "boot/efi/EFI/BOOT/BOOTX64.EFI"
    folder = site.root / MODULES / "kernel/drivers/video"
    secret.chmod(0)
    folder.chmod(0)
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)}
    key = ["--key", str(site.key)]
    out = tmp_path / "m"
    denied = _unprivileged(
        "integrity", "seal", "-o", str(out), "--root", str(site.root), *key, env=env
    )
    assert denied.returncode == 3, denied.stderr
    line = denied.stderr.splitlines()[0]
    assert line.startswith("dolmen: error: cannot read 2 file(s) to seal") and "no manifest" in line
    assert not out.exists()

    site.seal()  # as root: readable
    trust = ["--trusted-keys", str(site.trust)]
    inc = _unprivileged(
        "integrity", "verify", str(site.manifest), *trust, "--full", "--json", env=env
    )
    doc = assert_valid(json.loads(inc.stdout))
    assert inc.returncode == 2 and doc["changes"] == []  # the folder's files are not "removed"
    assert [u["path"] for u in doc["unverified"]] == [
        "/boot/efi/EFI/BOOT/BOOTX64.EFI",
        f"/{MODULES}/kernel/drivers/video",
    ]
    assert all(u["reason"].startswith("insufficient permissions") for u in doc["unverified"])
    folder.chmod(0o755)  # let pytest clean up

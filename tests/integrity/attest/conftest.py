"""A software TPM for the attestation tests: ``swtpm socket --tpm2`` on two free loopback
ports with a private state folder, started once per session and stopped by its PID."""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import socket
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from dolmen.host.live import LiveHost
from dolmen.integrity.attest import tpm
from tests.integrity.attest import ima_writer
from tests.integrity.attest.cli_run import NONCE, PCRS, run
from tests.integrity.attest.eventlog_writer import server_boot
from tests.report.contract import assert_valid


def _free_ports(n: int) -> list[int]:
    socks = [socket.socket() for _ in range(n)]
    try:
        for s in socks:
            s.bind(("127.0.0.1", 0))
        return [s.getsockname()[1] for s in socks]
    finally:
        for s in socks:
            s.close()


def _port_pair() -> tuple[int, int]:
    """Two free consecutive ports: tpm2-tools' swtpm TCTI reaches the control channel at
    the command port plus one."""
    for _ in range(50):
        (port,) = _free_ports(1)
        try:
            with socket.socket() as s:
                s.bind(("127.0.0.1", port + 1))
        except OSError:
            continue
        return port, port + 1
    raise RuntimeError("no two free consecutive ports on 127.0.0.1")


def _answers(port: int) -> bool:
    try:
        with socket.create_connection(("127.0.0.1", port), timeout=0.2):
            return True
    except OSError:
        return False


@pytest.fixture(scope="session")
def swtpm(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """The TCTI of a fresh TPM (TPM2TOOLS_TCTI set to it for the session)."""
    for tool in ("swtpm", "tpm2_quote", "tpm2_createak"):
        if shutil.which(tool) is None:
            pytest.skip(f"{tool} is not installed (swtpm, tpm2-tools)")
    state = tmp_path_factory.mktemp("swtpm")
    server, ctrl = _port_pair()
    proc = subprocess.Popen(
        ["swtpm", "socket", "--tpm2", "--tpmstate", f"dir={state}",
         "--server", f"type=tcp,port={server},bindaddr=127.0.0.1",
         "--ctrl", f"type=tcp,port={ctrl},bindaddr=127.0.0.1",
         "--flags", "not-need-init,startup-clear"],
        stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
    )  # fmt: skip
    deadline = time.monotonic() + 10
    while not _answers(server):
        if proc.poll() is not None or time.monotonic() > deadline:
            proc.kill()
            pytest.fail(f"swtpm did not start: {proc.communicate()[1].decode()[-500:]}")
        time.sleep(0.02)
    tcti = f"swtpm:host=127.0.0.1,port={server}"
    before = os.environ.get("TPM2TOOLS_TCTI")
    os.environ["TPM2TOOLS_TCTI"] = tcti
    try:
        yield tcti
    finally:
        if before is None:
            os.environ.pop("TPM2TOOLS_TCTI", None)
        else:
            os.environ["TPM2TOOLS_TCTI"] = before
        os.kill(proc.pid, 15)
        try:
            proc.wait(5)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()


@pytest.fixture(scope="session")
def ak(swtpm: str, tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    """An AK in the session's TPM: its context file and its PEM public key."""
    return tpm.create_ak(LiveHost(), tmp_path_factory.mktemp("ak"), swtpm)


@pytest.fixture(scope="session")
def node(swtpm: str, ak: tuple[Path, Path], tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A node booted as server_boot() logs it, with an IMA list: the TPM extended to match,
    the log and list written as securityfs shows them."""
    folder = tmp_path_factory.mktemp("node")
    host = LiveHost()
    log = server_boot(locality=0)
    entries = ima_writer.boot_list()
    ima = [
        (
            10,
            {
                b: b"\xff" * n if data is None else hashlib.new(b, data).digest()
                for b, n in (("sha1", 20), ("sha256", 32))
            },
        )
        for _, data in entries
    ]
    tpm.extend(host, log.extends() + ima, swtpm)
    (folder / "eventlog").write_bytes(log.bytes())
    (folder / "ima").write_text("\n".join(line for line, _ in entries) + "\n")
    return folder


@pytest.fixture(scope="session")
def quoted(node: Path, ak: tuple[Path, Path], swtpm: str) -> Path:
    out = node / "quote.json"
    rc, text = run(
        "quote",
        "--ak-context",
        str(ak[0]),
        "--pcrs",
        PCRS,
        "--nonce",
        NONCE,
        "-o",
        str(out),
        "--json",
    )
    assert rc == 0, text
    assert_valid(json.loads(text))
    return out

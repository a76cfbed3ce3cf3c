"""Bearer tokens with roles, stored hashed; writes need operator and are audit events with
the token's principal; TLS and mutual TLS with certificates made in the test."""

from __future__ import annotations

import datetime as dt
import json
import ssl
from pathlib import Path
from typing import Any

import httpx
import pytest

from dolmen.compat import UTC
from dolmen.serve.auth import Authenticator, TokenFile, allows
from tests.report.contract import assert_valid
from tests.serve.conftest import dolmen


def _token(home: Path, name: str, role: str) -> str:
    r = dolmen(home, "serve", "token", "add", name, "--role", role)
    assert r.returncode == 0, r.stderr
    return r.stdout.strip()


def test_tokens_are_stored_hashed_and_listed_without_secrets(home: Path) -> None:
    secret = _token(home, "alice", "operator")
    assert secret.startswith("dlm_")
    stored = (home / "state" / "serve" / "tokens.json").read_text()
    assert secret not in stored and secret.split("_", 2)[2] not in stored
    assert (home / "state" / "serve" / "tokens.json").stat().st_mode & 0o777 == 0o600
    listed = dolmen(home, "serve", "token", "list", "--json")
    doc = json.loads(listed.stdout)
    assert_valid(doc)  # dolmen schema serve.tokens
    (row,) = doc["tokens"]
    assert row["principal"] == "alice" and row["role"] == "operator" and "sha256" not in row
    gone = dolmen(home, "serve", "token", "revoke", row["id"])
    assert gone.returncode == 0 and "revoked" in gone.stdout
    assert json.loads(dolmen(home, "serve", "token", "list", "--json").stdout)["tokens"] == []
    bad = dolmen(home, "serve", "token", "revoke", "nosuch")
    assert bad.returncode == 2 and "no token" in bad.stderr
    worse = dolmen(home, "serve", "token", "add", "a b", "--role", "viewer")
    assert worse.returncode == 2 and "principal" in worse.stderr
    (home / "elsewhere").write_text("a file where the state folder should be")
    nowhere = dolmen(home, "serve", "--state", str(home / "elsewhere"), "token", "add", "bob")
    assert nowhere.returncode == 2 and "a regular file, not a folder" in nowhere.stderr


@pytest.mark.parametrize(
    "header",
    [None, "", "Bearer", "Bearer ", "Basic dXNlcjpwYXNz", "Bearer dlm_", "Bearer dlm_zz_yy",
     "bearer dlm_x", "Bearer " + "A" * 5000, "Bearer dlm_\x00_\x00"],
)  # fmt: skip
def test_malformed_or_unknown_bearer_values_are_nobody(tmp_path: Path, header: str | None) -> None:
    tokens = TokenFile(tmp_path / "tokens.json")
    _row, good = tokens.add("bob", "viewer")
    auth = Authenticator(tokens)
    assert auth.check(header) is None
    assert auth.check(f"Bearer {good}") is not None
    assert auth.check(f"Bearer {good}x") is None


def test_role_order() -> None:
    assert allows("admin", "operator") and allows("operator", "viewer")
    assert not allows("viewer", "operator") and not allows("nobody", "viewer")


def test_writes_need_operator_and_are_audited_with_the_principal(
    serve: Any, home: Path, xid79: Path
) -> None:
    viewer = _token(home, "vic", "viewer")
    operator = _token(home, "alice", "operator")
    admin = _token(home, "root-admin", "admin")
    s = serve("--from", str(xid79), "--interval", "1h")
    s.wait()
    assert s.client.post("/v1/node/resume").status_code == 401
    as_viewer = s.client.post("/v1/node/resume", headers={"Authorization": f"Bearer {viewer}"})
    assert as_viewer.status_code == 403 and as_viewer.json()["needs"] == "operator"
    # reads are open on loopback; the token list is admin's
    assert (
        s.client.get("/v1/tokens", headers={"Authorization": f"Bearer {operator}"}).status_code
        == 403
    )
    listed = s.client.get("/v1/tokens", headers={"Authorization": f"Bearer {admin}"}).json()
    assert {r["principal"] for r in listed["items"]} == {"vic", "alice", "root-admin"}

    op = {"Authorization": f"Bearer {operator}"}
    refused = s.client.post("/v1/node/drain", headers=op, json={"reason": "dolmen: fake"})
    assert refused.status_code == 400 and "dolmen:" in refused.json()["error"]
    # no Slurm on this machine: the drain fails after its intent, and both are recorded
    drained = s.client.post("/v1/node/drain", headers=op, json={"reason": "bad fan, ticket 42"})
    assert drained.status_code in (503, 400), drained.text
    unknown_job = s.client.post("/v1/jobs/12345/cancel", headers=op)
    assert unknown_job.status_code == 400
    applied = s.client.post("/v1/tune/apply", headers=op, json={"profile": "no-such-profile"})
    assert applied.status_code == 400
    assert s.client.post("/v1/tune/apply", headers=op, content=b"{").status_code == 400

    events = s.client.get("/v1/audit", params={"action": "serve.node.*"}).json()["items"]
    mine = [e for e in events if e["event"]["action"] == "serve.node.drain"]  # ECS lines
    assert [e["event"]["outcome"] for e in mine] == ["unknown", "failure"]
    assert {e["user"]["name"] for e in mine} == {"serve:alice"}
    assert mine[1]["dolmen"]["details"]["reason"] == "bad fan, ticket 42"
    adds = s.client.get("/v1/audit", params={"action": "serve.token.add", "limit": 2}).json()
    assert len(adds["items"]) == 2 and adds["next"] is not None


def test_reads_need_a_viewer_when_not_open(serve: Any, home: Path, xid79: Path) -> None:
    (home / "config" / "dolmen.toml").write_text("[serve]\nopen_reads = false\n")
    viewer = _token(home, "vic", "viewer")
    (home / "fleet").mkdir()
    s = serve("--from", str(xid79), "--interval", "1h", "--fleet", str(home / "fleet"))
    s.wait()
    assert s.client.get("/metrics").status_code == 401
    assert s.client.get("/v1/verdicts").status_code == 401
    # the dashboard shows verdicts and jobs: closed with the reads, every page of it
    for page in ("/fleet/", "/fleet/jobs", "/fleet/node/n1", "/fleet/audit"):
        assert s.client.get(page).status_code == 401, page
    as_viewer = {"Authorization": f"Bearer {viewer}"}
    assert s.client.get("/fleet/", headers=as_viewer).status_code == 200
    ok = s.client.get("/metrics", headers=as_viewer)
    assert ok.status_code == 200 and "dolmen_agent_up 1" in ok.text
    revoked = dolmen(home, "serve", "token", "revoke", _only_id(home))
    assert revoked.returncode == 0
    assert (
        s.client.get("/metrics", headers={"Authorization": f"Bearer {viewer}"}).status_code == 401
    )


def _only_id(home: Path) -> str:
    rows = json.loads(dolmen(home, "serve", "token", "list", "--json").stdout)["tokens"]
    return str(rows[0]["id"])


# --- TLS ------------------------------------------------------------------------------
def _pki(root: Path) -> dict[str, Path]:
    """A CA, a server certificate for 127.0.0.1 and a client certificate, all PEM."""
    from cryptography import x509
    from cryptography.hazmat.primitives import hashes, serialization
    from cryptography.hazmat.primitives.asymmetric import ec
    from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID

    now = dt.datetime.now(UTC)

    def name(cn: str) -> x509.Name:
        return x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, cn)])

    def write(key: Any, cert: x509.Certificate, stem: str) -> None:
        (root / f"{stem}.key").write_bytes(
            key.private_bytes(
                serialization.Encoding.PEM,
                serialization.PrivateFormat.PKCS8,
                serialization.NoEncryption(),
            )
        )
        (root / f"{stem}.pem").write_bytes(cert.public_bytes(serialization.Encoding.PEM))

    ca_key = ec.generate_private_key(ec.SECP256R1())
    ca = (
        x509.CertificateBuilder().subject_name(name("dolmen test CA")).issuer_name(name("dolmen test CA"))
        .public_key(ca_key.public_key()).serial_number(x509.random_serial_number())
        .not_valid_before(now - dt.timedelta(minutes=5)).not_valid_after(now + dt.timedelta(days=1))
        .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
        .add_extension(x509.SubjectKeyIdentifier.from_public_key(ca_key.public_key()), critical=False)
        .add_extension(
            x509.KeyUsage(
                digital_signature=True, content_commitment=False, key_encipherment=False,
                data_encipherment=False, key_agreement=False, key_cert_sign=True,
                crl_sign=True, encipher_only=False, decipher_only=False,
            ),
            critical=True,
        )
        .sign(ca_key, hashes.SHA256())
    )  # fmt: skip
    write(ca_key, ca, "ca")
    for stem, usage, alt in (
        ("server", ExtendedKeyUsageOID.SERVER_AUTH, True),
        ("client", ExtendedKeyUsageOID.CLIENT_AUTH, False),
    ):
        key = ec.generate_private_key(ec.SECP256R1())
        builder = (
            x509.CertificateBuilder().subject_name(name(stem)).issuer_name(ca.subject)
            .public_key(key.public_key()).serial_number(x509.random_serial_number())
            .not_valid_before(now - dt.timedelta(minutes=5)).not_valid_after(now + dt.timedelta(days=1))
            .add_extension(x509.ExtendedKeyUsage([usage]), critical=False)
            .add_extension(  # Python 3.13's strict verification wants it
                x509.AuthorityKeyIdentifier.from_issuer_public_key(ca_key.public_key()),
                critical=False,
            )
        )  # fmt: skip
        if alt:
            import ipaddress

            builder = builder.add_extension(
                x509.SubjectAlternativeName([x509.IPAddress(ipaddress.ip_address("127.0.0.1"))]),
                critical=False,
            )
        write(key, builder.sign(ca_key, hashes.SHA256()), stem)
    return {n: root / n for n in ("ca.pem", "server.pem", "server.key", "client.pem", "client.key")}


def test_tls_and_mutual_tls(serve: Any, home: Path, xid79: Path) -> None:
    pki = _pki(home)
    ca = ssl.create_default_context(cafile=str(pki["ca.pem"]))
    s = serve("--from", str(xid79), "--interval", "1h", "--tls-cert", str(pki["server.pem"]),
              "--tls-key", str(pki["server.key"]), scheme="https", verify=ca)  # fmt: skip
    assert s.wait("/healthz").json() == {"status": "alive"}

    mutual = ssl.create_default_context(cafile=str(pki["ca.pem"]))
    mutual.load_cert_chain(str(pki["client.pem"]), str(pki["client.key"]))
    m = serve("--from", str(xid79), "--interval", "1h", "--tls-cert", str(pki["server.pem"]),
              "--tls-key", str(pki["server.key"]), "--tls-client-ca", str(pki["ca.pem"]),
              scheme="https", verify=mutual)  # fmt: skip
    assert m.wait("/healthz").status_code == 200
    with pytest.raises(httpx.TransportError):  # no client certificate: the handshake fails
        httpx.get(f"{m.url}/healthz", verify=ca, timeout=5).raise_for_status()


def test_half_a_tls_setup_is_refused_before_listening(home: Path, xid79: Path) -> None:
    r = dolmen(home, "serve", "--from", str(xid79), "--tls-cert", str(home / "x.pem"))
    assert r.returncode == 2 and "--tls-cert and --tls-key go together" in r.stderr
    r = dolmen(home, "serve", "--listen", "nowhere")
    assert r.returncode == 2 and "HOST:PORT" in r.stderr


def test_junk_or_mismatched_tls_files_are_refused_before_listening(home: Path, xid79: Path) -> None:
    """A PEM file that is not one, a key of another certificate, a CA file of junk: one
    line naming the flags (it was an SSLError from inside uvicorn, exit 70)."""
    pki = _pki(home)
    junk = home / "junk.pem"
    junk.write_bytes(b"\xff\xfenot PEM")
    base = ["serve", "--from", str(xid79), "--listen", "127.0.0.1:1"]
    for cert, key, ca, words in (
        (junk, junk, None, "not a PEM certificate and its private key"),
        (pki["server.pem"], pki["client.key"], None, "not a PEM certificate and its private"),
        (pki["server.pem"], pki["server.key"], junk, "--tls-client-ca"),
        (home, pki["server.key"], None, "not a regular file"),
    ):
        args = [*base, "--tls-cert", str(cert), "--tls-key", str(key)]
        r = dolmen(home, *args, *(["--tls-client-ca", str(ca)] if ca else []))
        assert r.returncode == 2 and words in r.stderr, r.stderr
        assert "internal error" not in r.stderr


def test_a_port_in_use_is_one_line_before_the_banner(home: Path, xid79: Path) -> None:
    """uvicorn logged 'ERROR: [Errno 98] error while attempting to bind' after dolmen's
    banner had said it served there."""
    import socket

    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        r = dolmen(home, "serve", "--from", str(xid79), "--listen", f"127.0.0.1:{port}")
    assert r.returncode == 3, r.stderr
    assert (
        r.stderr.splitlines()[0]
        == f"dolmen: error: --listen 127.0.0.1:{port}: the address is in use"
    )
    r = dolmen(home, "serve", "--from", str(xid79), "--listen", "192.0.2.1:9405")
    assert r.returncode == 2 and "not an address of this host" in r.stderr

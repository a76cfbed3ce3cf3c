"""The transit connection of the vault provider: one hvac client, its settings checked,
and every failure turned into one KeyProblem naming the address and the fix."""

from __future__ import annotations

import base64
import ipaddress
from collections.abc import Callable
from typing import Any

from dolmen.errors import ConfigError
from dolmen.keys import KeyProblem, PublicKey
from dolmen.keys.file import read_secret_line
from dolmen.keys.settings import KeySettings
from dolmen.values.url import split_url


def b64(data: bytes) -> str:
    """Base64 text, as transit takes its inputs."""
    return base64.b64encode(data).decode("ascii")


def _loopback(host: str) -> bool:
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


class Transit:
    """A transit mount of one Vault/OpenBao server, reached with the token of a file."""

    def __init__(self, settings: KeySettings) -> None:
        if not settings.vault_address:
            raise KeyProblem(
                "[keys] provider is vault but vault_address is not set",
                hint='set [keys] vault_address = "https://<server>:8200" in dolmen.toml',
            )
        parts = split_url(settings.vault_address)
        if parts is None or parts.scheme not in ("http", "https") or not parts.hostname:
            raise ConfigError(
                f"[keys] vault_address {settings.vault_address!r} is not an http(s) URL",
                hint='set [keys] vault_address = "https://<server>:8200" in dolmen.toml',
            )
        if parts.scheme != "https" and not _loopback(parts.hostname or ""):
            raise KeyProblem(
                f"refusing the plain-http Vault address {settings.vault_address}: the token and "
                "the data keys would cross the network in clear",
                hint="use https:// (with [keys] vault_ca_cert for a private CA)",
            )
        if settings.vault_token_file is None:
            raise KeyProblem(
                "[keys] provider is vault but vault_token_file is not set",
                hint="write the token to a file of mode 0600 and set [keys] vault_token_file",
            )
        self.settings = settings
        self.address = settings.vault_address
        self.mount = settings.vault_mount
        token = read_secret_line(settings.vault_token_file, "Vault token")
        import hvac  # only a host on this provider needs it

        cert = None
        if settings.vault_client_cert and settings.vault_client_key:
            cert = (str(settings.vault_client_cert), str(settings.vault_client_key))
        self.client = hvac.Client(
            url=self.address,
            token=token,
            verify=str(settings.vault_ca_cert) if settings.vault_ca_cert else True,
            cert=cert,
            timeout=settings.timeout,
            namespace=settings.vault_namespace or None,
        )

    def call(self, what: str, fn: Callable[[], Any]) -> Any:
        """One transit call; every failure becomes one KeyProblem naming the address."""
        import hvac.exceptions as hx
        import requests

        try:
            return fn()
        except hx.VaultDown as e:
            raise KeyProblem(
                f"the Vault server {self.address} is sealed ({what})",
                hint=f"unseal it (bao operator unseal, against {self.address}), then retry",
            ) from e
        except (hx.Forbidden, hx.Unauthorized) as e:
            raise KeyProblem(
                f"the Vault server {self.address} refused the token ({what}): permission denied",
                hint=f"renew the token in {self.settings.vault_token_file}, or grant its policy "
                f"access to {self.mount}/",
            ) from e
        except hx.InvalidPath as e:
            raise KeyProblem(
                f"{self.address}: no transit key or mount at {self.mount}/ ({what})",
                hint=f"bao secrets enable -path={self.mount} transit; then dolmen keys rotate",
            ) from e
        except hx.InvalidRequest as e:
            raise KeyProblem(f"{self.address} refused {what}: {first_line(e)}") from e
        except hx.VaultError as e:
            raise KeyProblem(f"{self.address} failed {what}: {first_line(e)}") from e
        except requests.exceptions.SSLError as e:
            raise KeyProblem(
                f"TLS to the Vault server {self.address} failed ({what}): {first_line(e)}",
                hint="set [keys] vault_ca_cert to the CA that signed the server's certificate",
            ) from e
        except (requests.exceptions.RequestException, OSError) as e:
            raise KeyProblem(
                f"the Vault server {self.address} does not answer ({what}): {first_line(e)}",
                hint=f"start it or fix [keys] vault_address (now {self.address})",
            ) from e

    @property
    def api(self) -> Any:
        """hvac's transit API."""
        return self.client.secrets.transit

    def poster(self, path: str, body: dict[str, Any]) -> Callable[[], Any]:
        """A POST of ``body`` to ``path`` (for endpoints hvac has no method for), to call."""
        return lambda: self.client.adapter.post(path, json=body)

    def read_key(self, name: str) -> dict[str, Any]:
        """The description of one transit key (versions, derived, public keys)."""
        data = self.call(
            f"reading {self.mount}/keys/{name}",
            lambda: self.api.read_key(name, mount_point=self.mount),
        )
        return dict(data["data"])


class VaultSigner:
    """A Signer backed by one version of an ed25519 transit key (its epoch)."""

    def __init__(self, transit: Transit, name: str, version: int, key: PublicKey) -> None:
        self._transit, self._name, self._version, self._key = transit, name, version, key

    @property
    def public_key(self) -> PublicKey:
        """The public half, as the server published it."""
        return self._key

    @property
    def epoch(self) -> int:
        """The transit key version."""
        return self._version

    def sign(self, message: bytes) -> bytes:
        """An ed25519 signature made by the server with this exact version."""
        p = self._transit
        r = p.call(
            f"signing with {p.mount}/keys/{self._name}",
            lambda: p.api.sign_data(
                self._name,
                hash_input=b64(message),
                key_version=self._version,
                mount_point=p.mount,
            ),
        )
        sig: str = r["data"]["signature"]
        return base64.b64decode(sig.split(":", 2)[2])


def first_line(e: BaseException) -> str:
    """The first line of an exception, bounded (hvac appends the URL; requests, a novel)."""
    return (str(e).splitlines() or [type(e).__name__])[0][:200]

"""The ``vault`` key provider: HashiCorp Vault or OpenBao transit, through hvac.

The KEK is a transit key created *derived* (``derived=true``): the server derives a
key per context (HKDF over the node or volume id), so a blob wrapped for one volume
does not unwrap under another's context, and a token that may decrypt one context
still cannot open another's blobs by relabelling them. The KEK never leaves the
server; the data key does, at unwrap (a key release, audited by the caller).
Versions, rotation, rewrap (server-side: the data key is not sent back) and
``min_decryption_version`` are transit's own. Signatures come from an ed25519
transit key; its public half is read from the server and verified locally.

The token is read from a file only its owner may read (never a command line or an
environment variable another process could see in /proc). A plain http:// address
is refused unless it is the loopback (the token and data keys would cross the wire
in clear).
"""

from __future__ import annotations

import base64
import binascii
import time
from collections.abc import Callable

from dolmen.keys import (
    ED25519,
    KeyProblem,
    KeyRelease,
    KeyVersions,
    ProviderStatus,
    PublicKey,
    Signer,
    WrappedKey,
    report_release,
)
from dolmen.keys.settings import KeySettings
from dolmen.keys.vault_transit import Transit, VaultSigner, b64

DEFAULT_CONTEXT = "dolmen"  # transit refuses an empty context for a derived key


def ciphertext_version(ciphertext: str) -> int:
    """The key version of a transit ciphertext or signature ``vault:v<N>:<base64>``."""
    parts = ciphertext.split(":")
    if len(parts) != 3 or parts[0] != "vault" or not parts[1][1:].isdigit() or parts[1][0] != "v":
        raise KeyProblem(f"not a transit ciphertext: {ciphertext[:24]!r}")
    return int(parts[1][1:])


class VaultProvider:
    """The ``vault`` KeyProvider (see module docstring)."""

    name = "vault"

    def __init__(
        self, settings: KeySettings, *, on_release: Callable[[KeyRelease], None] | None = None
    ) -> None:
        self.settings = settings
        self.transit = Transit(settings)
        self.address, self.mount = self.transit.address, self.transit.mount
        self.key = settings.vault_key
        self._on_release = on_release
        self._checked: set[str] = set()

    def _ensure(self, name: str, key_type: str) -> bool:
        """Create the transit key on first use; refuse a wrapping key that is not derived
        (transit would ignore the context, and with it the per-volume binding)."""
        if name in self._checked:
            return False
        import hvac.exceptions as hx

        created = False
        try:
            info = dict(self.transit.api.read_key(name, mount_point=self.mount)["data"])
        except hx.InvalidPath:
            self.transit.call(
                f"creating {self.mount}/keys/{name}",
                lambda: self.transit.api.create_key(
                    name,
                    key_type=key_type,
                    derived=key_type != ED25519,
                    mount_point=self.mount,
                ),
            )
            info = self.transit.read_key(name)
            created = True
        except Exception:
            info = self.transit.read_key(name)  # the same call, its error named by _call
        if key_type != ED25519 and not info.get("derived"):
            raise KeyProblem(
                f"the transit key {self.mount}/keys/{name} at {self.address} is not derived: "
                "it would ignore the node or volume context",
                hint=f"set [keys] vault_key to a key made with derived=true (not {name})",
            )
        self._checked.add(name)
        return created

    @staticmethod
    def _context(context: str) -> str:
        return b64((context or DEFAULT_CONTEXT).encode())

    # -- KeyProvider ------------------------------------------------------------------
    def new_data_key(self, *, context: str = "") -> tuple[bytes, WrappedKey]:
        """A data key from the server's random source, and its wrapped form."""
        self._ensure(self.key, "aes256-gcm96")
        r = self.transit.call(
            f"a data key from {self.mount}/datakey/plaintext/{self.key}",
            lambda: self.transit.api.generate_data_key(
                self.key,
                key_type="plaintext",
                context=self._context(context),
                mount_point=self.mount,
            ),
        )
        data = r["data"]
        wrapped = self._wrapped(data["ciphertext"], context)
        return base64.b64decode(data["plaintext"]), wrapped

    def _wrapped(self, ciphertext: str, context: str) -> WrappedKey:
        return WrappedKey(
            self.name, self.key, ciphertext_version(ciphertext), context, ciphertext.encode()
        )

    def wrap(self, data_key: bytes, *, context: str = "") -> WrappedKey:
        """``data_key`` encrypted by the newest version of the derived transit key."""
        self._ensure(self.key, "aes256-gcm96")
        r = self.transit.call(
            f"encrypting with {self.mount}/keys/{self.key}",
            lambda: self.transit.api.encrypt_data(
                self.key, b64(data_key), context=self._context(context), mount_point=self.mount
            ),
        )
        return self._wrapped(r["data"]["ciphertext"], context)

    def _check(self, wrapped: WrappedKey) -> str:
        if wrapped.provider != self.name:
            raise KeyProblem(
                f"this key was wrapped by the {wrapped.provider} provider, not by vault",
                hint=f"set [keys] provider = {wrapped.provider!r} to unwrap it",
            )
        try:
            ciphertext = wrapped.blob.decode("ascii")
        except UnicodeDecodeError:
            raise KeyProblem("the wrapped key is not a transit ciphertext (not text)") from None
        if ciphertext_version(ciphertext) != wrapped.version:
            raise KeyProblem(
                f"the wrapped key says version {wrapped.version} but its ciphertext "
                f"v{ciphertext_version(ciphertext)}: tampered"
            )
        return ciphertext

    def unwrap(self, wrapped: WrappedKey, *, purpose: str) -> bytes:
        """The data key, released by the server; reported to ``on_release``."""
        ciphertext = self._check(wrapped)
        r = self.transit.call(
            f"decrypting with {self.mount}/keys/{wrapped.key_ref} (version {wrapped.version})",
            lambda: self.transit.api.decrypt_data(
                wrapped.key_ref,
                ciphertext,
                context=self._context(wrapped.context),
                mount_point=self.mount,
            ),
        )
        try:
            key = base64.b64decode(r["data"]["plaintext"], validate=True)
        except (binascii.Error, ValueError, KeyError, TypeError) as e:
            raise KeyProblem(f"{self.address} answered a decrypt without a key") from e
        report_release(self._on_release, self.name, wrapped, purpose)
        return key

    def rewrap(self, wrapped: WrappedKey) -> WrappedKey:
        """Transit's rewrap: the server re-encrypts; the data key never comes back."""
        ciphertext = self._check(wrapped)
        r = self.transit.call(
            f"rewrapping with {self.mount}/keys/{wrapped.key_ref}",
            lambda: self.transit.api.rewrap_data(
                wrapped.key_ref,
                ciphertext,
                context=self._context(wrapped.context),
                mount_point=self.mount,
            ),
        )
        new = r["data"]["ciphertext"]
        return WrappedKey(
            self.name, wrapped.key_ref, ciphertext_version(new), wrapped.context, new.encode()
        )

    def rotate(self) -> int:
        """A new version of the wrapping key; returns it (1 when the key is made now)."""
        if self._ensure(self.key, "aes256-gcm96"):
            return 1
        self.transit.call(
            f"rotating {self.mount}/keys/{self.key}",
            lambda: self.transit.api.rotate_key(self.key, mount_point=self.mount),
        )
        return int(self.transit.read_key(self.key)["latest_version"])

    def set_min_decryption_version(self, version: int) -> None:
        """Retire the versions below ``version``: transit refuses to decrypt with them."""
        self.transit.call(
            f"setting min_decryption_version of {self.mount}/keys/{self.key}",
            lambda: self.transit.api.update_key_configuration(
                self.key, min_decryption_version=version, mount_point=self.mount
            ),
        )

    def signer(self) -> Signer:
        """The ed25519 transit key's newest version (created on first use)."""
        name = self.settings.vault_signing_key
        self._ensure(name, ED25519)
        info = self.transit.read_key(name)
        version = int(info["latest_version"])
        try:
            raw = base64.b64decode(info["keys"][str(version)]["public_key"], validate=True)
        except (KeyError, TypeError, binascii.Error, ValueError) as e:
            raise KeyProblem(f"{self.mount}/keys/{name} at {self.address} is not ed25519") from e
        return VaultSigner(self.transit, name, version, PublicKey(ED25519, raw))

    def rotate_signer(self) -> Signer:
        """A new version of the signing key; the older ones are trimmed from the server
        (min encryption and decryption versions raised, then ``trim``): they never sign
        again. The token's policy needs update on ``<mount>/keys/<name>/config`` and
        ``/trim``."""
        name = self.settings.vault_signing_key
        self._ensure(name, ED25519)
        self.transit.call(
            f"rotating {self.mount}/keys/{name}",
            lambda: self.transit.api.rotate_key(name, mount_point=self.mount),
        )
        latest = int(self.transit.read_key(name)["latest_version"])
        limits = {"min_encryption_version": latest, "min_decryption_version": latest}
        for path, body in (("config", limits), ("trim", {"min_available_version": latest})):
            self.transit.call(
                f"retiring the older versions of {self.mount}/keys/{name} ({path})",
                self.transit.poster(f"/v1/{self.mount}/keys/{name}/{path}", body),
            )
        return self.signer()

    def status(self) -> ProviderStatus:
        """Whether the server answers (and how fast), and the versions of both keys; a key
        not made yet is named in ``detail`` (it is made at the first wrap or signature)."""
        import hvac.exceptions as hx

        start = time.perf_counter()
        keys: list[KeyVersions] = []
        missing: list[str] = []
        try:
            for name, purpose in ((self.key, "wrap"), (self.settings.vault_signing_key, "sign")):
                try:
                    info = dict(self.transit.api.read_key(name, mount_point=self.mount)["data"])
                except hx.InvalidPath:
                    missing.append(f"no {purpose} key {self.mount}/keys/{name} yet")
                    continue
                except Exception:
                    info = self.transit.read_key(name)  # again, its failure named in one line
                keys.append(
                    KeyVersions(
                        name,
                        purpose,
                        int(info["latest_version"]),
                        max(1, int(info.get("min_decryption_version") or 1)),
                        tuple(sorted(int(v) for v in info.get("keys", {}))),
                    )
                )
        except KeyProblem as e:
            return ProviderStatus(
                self.name, self.address, False, _ms(start), tuple(keys), e.message
            )
        detail = "; ".join(missing)
        return ProviderStatus(self.name, self.address, True, _ms(start), tuple(keys), detail)


def _ms(start: float) -> float:
    return (time.perf_counter() - start) * 1000

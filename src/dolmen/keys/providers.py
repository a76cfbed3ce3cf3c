"""Open the key provider the site configured (``[keys] provider``), loaded lazily.

hvac and python-pkcs11 are imported only by the provider that needs them, so a host
on the file provider needs neither.
"""

from __future__ import annotations

from collections.abc import Callable

from dolmen.keys import PROVIDERS, KeyProblem, KeyProvider, KeyRelease
from dolmen.keys.settings import KeySettings

OnRelease = Callable[[KeyRelease], None]


def open_provider(settings: KeySettings, *, on_release: OnRelease | None = None) -> KeyProvider:
    """The provider of ``settings``; ``on_release`` is called at every unwrap (a key
    release) so the caller can audit it. Opening does not contact a server: a dead one
    is a KeyProblem at the first call, naming the address and the fix."""
    name = settings.provider
    if name == "file":
        from dolmen.keys.filekek import FileProvider

        return FileProvider(settings.kek_path, settings.signing_key_path, on_release=on_release)
    if name == "vault":
        from dolmen.keys.vault import VaultProvider

        return VaultProvider(settings, on_release=on_release)
    if name == "pkcs11":
        from dolmen.keys.hsm import Pkcs11Provider

        return Pkcs11Provider(settings, on_release=on_release)
    raise KeyProblem(
        f"unknown key provider {name!r}; known: {', '.join(PROVIDERS)}",
        hint="set [keys] provider in dolmen.toml",
    )

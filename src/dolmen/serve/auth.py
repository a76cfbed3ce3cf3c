"""Bearer tokens with roles, stored hashed in the state folder (``serve/tokens.json``).

A token is ``dlm_<id>_<secret>``: the id names its row (so a check is one look-up and one
constant-time compare), the secret is 32 random bytes. Only the SHA-256 of the whole token
is stored: with that much entropy a slow password hash adds nothing, and the file leaks
no usable token. Roles are ordered: viewer (reads) < operator (writes: drain, resume,
job cancel, tune apply) < admin (the token list). The file is written atomically, mode
0600; ``dolmen serve token add|list|revoke`` manages it and each change is an audit event.
"""

from __future__ import annotations

import hashlib
import hmac
import json
import secrets
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import Any

from dolmen.compat import UTC
from dolmen.errors import EnvironmentProblem, InputError, UsageError
from dolmen.fsutil import atomic_write, read_regular

ROLES = ("viewer", "operator", "admin")
TOKENS_MAX = 1 << 20
PREFIX = "dlm_"


@dataclass(frozen=True)
class Token:
    """One stored token (never the secret)."""

    id: str
    principal: str
    role: str
    sha256: str
    created: str

    def public(self) -> dict[str, str]:
        """The row ``token list`` and ``GET /v1/tokens`` show."""
        return {
            "id": self.id,
            "principal": self.principal,
            "role": self.role,
            "created": self.created,
        }


def allows(role: str, needed: str) -> bool:
    """Whether ``role`` is at least ``needed``."""
    return role in ROLES and ROLES.index(role) >= ROLES.index(needed)


def _digest(token: str) -> str:
    return hashlib.sha256(token.encode()).hexdigest()


class TokenFile:
    """The tokens of one state folder."""

    def __init__(self, path: Path) -> None:
        self.path = path

    def load(self) -> list[Token]:
        """Every token; none without a file. A malformed file is an InputError (the server
        refuses to start rather than run with no tokens, which would lock operators out)."""
        try:
            raw = read_regular(self.path, TOKENS_MAX)
        except FileNotFoundError:
            return []
        except OSError as e:
            raise EnvironmentProblem(
                f"cannot read the token file {self.path}: {e.strerror or e}",
                hint="check the state folder (--state) and its permissions",
            ) from None
        try:
            doc = json.loads(raw)
            return [Token(**row) for row in doc["tokens"]]
        except (ValueError, KeyError, TypeError) as e:
            raise InputError(
                f"malformed token file: {e}",
                path=str(self.path),
                hint="restore it, or remove it and add the tokens again",
            ) from None

    def _save(self, tokens: list[Token]) -> None:
        doc = {"schema": "dolmen.serve.tokens/1", "tokens": [t.__dict__ for t in tokens]}
        try:
            atomic_write(self.path, (json.dumps(doc, indent=2) + "\n").encode(), mode=0o600)
        except OSError as e:
            raise EnvironmentProblem(
                f"cannot write the token file {self.path}: {e.strerror or e}",
                hint="run it as the user dolmen serve runs as (root), or give --state",
            ) from None

    def add(self, principal: str, role: str) -> tuple[Token, str]:
        """A new token for ``principal``; returns its row and the token (shown once)."""
        if role not in ROLES:
            raise UsageError(f"unknown role {role!r}; valid roles: {', '.join(ROLES)}")
        if not principal or not all(c.isalnum() or c in "-_.@" for c in principal):
            raise UsageError(
                f"principal {principal!r}: letters, digits and - _ . @ only",
                hint="it is the actor of the audit events this token's writes make",
            )
        tokens = self.load()
        tid = secrets.token_hex(4)
        while any(t.id == tid for t in tokens):
            tid = secrets.token_hex(4)
        secret = f"{PREFIX}{tid}_{secrets.token_urlsafe(32)}"
        now = datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
        row = Token(tid, principal, role, _digest(secret), now)
        self._save([*tokens, row])
        return row, secret

    def revoke(self, token_id: str) -> Token:
        """Remove one token by id; UsageError naming the ids when there is no such one."""
        tokens = self.load()
        gone = [t for t in tokens if t.id == token_id]
        if not gone:
            known = ", ".join(t.id for t in tokens) or "none"
            raise UsageError(f"no token {token_id!r}", hint=f"token ids: {known}")
        self._save([t for t in tokens if t.id != token_id])
        return gone[0]


class Authenticator:
    """Checks ``Authorization: Bearer`` values against the token file (reread when it
    changes, so a revoke takes effect without a restart)."""

    def __init__(self, tokens: TokenFile) -> None:
        self.tokens = tokens
        self._stamp: tuple[int, int] | None = None
        self._by_id: dict[str, Token] = {}
        self._refresh()

    def _refresh(self) -> None:
        try:
            st = self.tokens.path.stat()
            stamp = (st.st_mtime_ns, st.st_size)
        except OSError:
            stamp = (0, 0)  # load() says what is wrong, or finds no file
        if stamp != self._stamp:
            self._by_id = {t.id: t for t in self.tokens.load()}
            self._stamp = stamp

    def check(self, header: str | None) -> Token | None:
        """The token an Authorization header carries, or None (absent, unknown, wrong)."""
        if not header or not header.startswith("Bearer "):
            return None
        value = header[len("Bearer ") :].strip()
        if not value.startswith(PREFIX) or len(value) > 200:
            return None
        tid = value[len(PREFIX) :].split("_", 1)[0]
        try:
            self._refresh()
        except (InputError, EnvironmentProblem):
            return None  # a file broken while running: nobody gets in until it is fixed
        token = self._by_id.get(tid)
        if token is None or not hmac.compare_digest(token.sha256, _digest(value)):
            return None
        return token


def public_rows(tokens: list[Token]) -> list[dict[str, Any]]:
    """The rows of ``token list --json``."""
    return [t.public() for t in tokens]

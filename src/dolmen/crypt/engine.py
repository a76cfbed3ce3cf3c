"""Plan, then apply with a way back: every change to a LUKS header runs through here.

A plan (``Plan``) is pure: what a command would do to which device, shown by the dry run
(the default) and by ``--json``. Applying one records an audit *intent* first (an audit log
that cannot be written refuses the change before the device is touched), takes a
``luksHeaderBackup`` into the state folder, runs the steps, and on any failure puts the
header back (``luksHeaderRestore``) and records the failure with ``rolled_back``. The
backup stays (mode 0400) so a person can restore it too; it holds the keyslots as they
were, so delete it once the change is verified (docs/crypt.md).
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from dolmen.audit import record_event
from dolmen.errors import EnvironmentProblem
from dolmen.host.command import CommandResult
from dolmen.host.cryptsetup import Cryptsetup
from dolmen.paths import state_dir

ACTIONS = ("crypt.enrol", "crypt.unlock", "crypt.rotate", "crypt.recovery_key")


@dataclass(frozen=True)
class Plan:
    """What one crypt command will do (pure; the dry run prints it)."""

    action: str  # one of ACTIONS
    device: str
    uuid: str
    steps: tuple[str, ...]
    changes_header: bool = True  # unlock does not: no backup, no restore
    details: Mapping[str, Any] = field(default_factory=dict)

    @property
    def target(self) -> str:
        """The audit target: ``luks:<uuid>``."""
        return f"luks:{self.uuid}"

    def to_json(self) -> dict[str, Any]:
        """The plan as JSON (schema dolmen.crypt.plan/1)."""
        return {
            "schema": "dolmen.crypt.plan/1",
            "action": self.action,
            "device": self.device,
            "uuid": self.uuid,
            "changes_header": self.changes_header,
            "steps": list(self.steps),
            "details": dict(self.details),
        }


class CryptFailed(EnvironmentProblem):
    """A cryptsetup step failed; the header was put back when the step changed it."""


def check(result: CommandResult, what: str) -> CommandResult:
    """``result`` when it succeeded, else CryptFailed naming the step and cryptsetup's line."""
    if result.ok:
        return result
    first = (result.stderr.strip() or result.reason).splitlines()[:1]
    raise CryptFailed(f"{what}: {first[0] if first else result.describe()}")


def backup_path(uuid: str, action: str, root: Path | None = None) -> Path:
    """Where the header backup of this change goes: a new file, never an existing one."""
    folder = (root or state_dir()) / "crypt" / uuid
    stamp = time.strftime("%Y%m%dT%H%M%SZ", time.gmtime())
    return folder / f"{stamp}-{action.removeprefix('crypt.')}-{os.getpid()}.header"


def apply(
    plan: Plan,
    body: Callable[[], Mapping[str, Any]],
    *,
    cryptsetup: Cryptsetup,
    backup: Path | None = None,
) -> dict[str, Any]:
    """Run ``body`` (the steps) under an audit intent, a header backup and a rollback.

    Returns the result details (the body's, plus ``backup``). Raises what the body raised,
    after the header was restored; a restore that fails too says so in the message.
    """
    record_event(plan.action, plan.target, outcome="unknown", details=_intent(plan))
    done: dict[str, Any] = {"device": plan.device}
    if plan.changes_header:
        backup = backup or backup_path(plan.uuid, plan.action)
        try:
            backup.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
        except OSError as e:
            _failed(plan, done, f"cannot create {backup.parent}: {e.strerror}")
            raise EnvironmentProblem(f"{backup.parent}: cannot create it ({e.strerror})") from e
        result = cryptsetup.header_backup(plan.device, str(backup))
        if not result.ok:
            _failed(plan, done, result.describe())
            check(result, "luksHeaderBackup")
        done["backup"] = str(backup)
    try:
        done.update(body())
    except BaseException as e:
        if plan.changes_header and backup is not None:
            back = cryptsetup.header_restore(plan.device, str(backup))
            done["rolled_back"] = back.ok
            _failed(plan, done, str(e) or e.__class__.__name__)
            if not back.ok:
                raise CryptFailed(
                    f"{e}; and the header restore failed too: {back.describe()}",
                    hint=f"restore it by hand: cryptsetup luksHeaderRestore "
                    f"--header-backup-file {backup} {plan.device}",
                ) from e
            if isinstance(e, Exception):
                raise CryptFailed(
                    f"{e}; the header was restored from {backup}", hint=getattr(e, "hint", None)
                ) from e
        else:
            _failed(plan, done, str(e) or e.__class__.__name__)
        raise
    details = {"phase": "result", **_public(done)}
    record_event(plan.action, plan.target, outcome="success", details=details)
    return done


def _intent(plan: Plan) -> dict[str, Any]:
    return {"phase": "intent", "device": plan.device, **_public(plan.details)}


def _failed(plan: Plan, done: Mapping[str, Any], why: str) -> None:
    details = {"phase": "result", **_public(done), "error": why}
    record_event(plan.action, plan.target, outcome="failure", details=details)


def _public(details: Mapping[str, Any]) -> dict[str, Any]:
    """Details without secrets (keys are never in details; a recovery key never leaves the
    process except on the terminal)."""
    return {k: v for k, v in details.items() if not k.startswith("_")}

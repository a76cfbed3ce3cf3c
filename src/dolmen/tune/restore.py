"""Rollback: put back every original a journal saved, newest first, and prove it.

First the temporaries a process killed inside an atomic write left (``.<name>.dolmen-
tmp-<pid>``): a folder apply created cannot be removed while one sits in it. Then, for
each saved step in reverse: read what is there now (reporting values someone else
changed since), restore the original, and read it back. A file is back when its bytes
and mode are the saved ones, or, when it was absent, when it and every folder apply
created for it are gone; a kernel value, a unit or a GPU mode when it reads as it did
before. Only then is the step journaled ``reverted`` with ``exact: true``; the
journal's ``end`` comes only when every step is, so a rollback that could not put
everything back stays open, and its rerun retries what is not back. Restoring is
idempotent: a rollback killed halfway simply runs again.

The journal lines are written best effort: on a full state disk the restore goes on
from the records in memory (``Journal.records``) and ``journal_lost`` says so.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from typing import Any

from dolmen.host import Host
from dolmen.tune.crash import CrashPoints
from dolmen.tune.journal import Journal
from dolmen.tune.journal_view import JournalView
from dolmen.tune.model import ApplyFailed, Change
from dolmen.tune.results import Restored, RollbackResult
from dolmen.tune.settings import SETTINGS
from dolmen.tune.settings.base import Setting, saved_bytes


def restore(host: Host, view: JournalView, journal: Journal, reason: str) -> RollbackResult:
    """Restore and verify every original ``view`` saved (module docstring)."""
    if view.rollback is None:
        journal.append({"type": "rollback", "reason": reason}, best_effort=True)
    crash = CrashPoints("rollback")
    crash.at(0)
    res = RollbackResult(view.path, view.profile)
    remove_stray_temporaries(host, [view.changes[i] for i in view.saved])
    for n, i in enumerate(sorted(view.saved, reverse=True)):
        if view.reverted.get(i, {}).get("exact") is True:
            continue
        change = view.changes[i]
        setting = SETTINGS[change.target.setting]
        found = setting.read(host, change.target).value
        had_set = view.done.get(i, {}).get("after")
        before = view.before.get(i)
        by_others = (
            i in view.done
            and not same(setting, found, had_set)
            and not same(setting, found, before)
        )
        error = ""
        try:
            setting.revert(host, change, view.saved[i])
        except (OSError, ApplyFailed) as e:
            error = describe(e)
        restored = setting.read(host, change.target).value
        differs = "" if error else not_back(host, setting, change, view.saved[i], before)
        crash.at(n + 1)
        if not error:
            record = {"type": "reverted", "step": i, "found": found, "restored": restored}
            record |= {"by_others": by_others, "exact": not differs}
            journal.append(record, best_effort=True)
        res.restored.append(
            Restored(
                change,
                found,
                had_set,
                before,
                restored,
                by_others,
                not (error or differs),
                error or differs,
            )
        )
    res.complete = not res.not_back
    if res.complete:
        journal.append({"type": "end", "state": "rolled-back"}, best_effort=True)
    res.journal_lost = journal.lost
    return res


def not_back(
    host: Host, setting: Setting, change: Change, saved: Mapping[str, Any], before: str | None
) -> str:
    """'' when the original reads back as saved; otherwise what still differs."""
    path = str(saved.get("path", ""))
    if path and ("b64" in saved or saved.get("absent")) and not path.startswith(("proc/", "sys/")):
        return _file_not_back(host, path, saved)
    now = setting.read(host, change.target).value
    if same(setting, now, before):
        return ""
    return f"reads {setting.show(now)} after the restore; the original was {setting.show(before)}"


def _file_not_back(host: Host, path: str, saved: Mapping[str, Any]) -> str:
    want = saved_bytes(saved)
    if want is None:
        if os.path.lexists(host.path_nofollow(path)):
            return f"/{path} was absent before the apply and is still there"
        for folder in saved.get("missing_dirs", []):
            if os.path.lexists(host.path_nofollow(str(folder))):
                held = ", ".join(host.listdir(str(folder))[:3]) or "nothing"
                return (
                    f"folder /{folder}, which the apply created, is still there (it holds {held})"
                )
        return ""
    try:
        got = host.read_bytes(path)
    except OSError as e:
        return f"/{path} cannot be read back ({e.strerror})"
    if got != want:
        return f"/{path} does not hold its original bytes"
    mode = saved.get("mode")
    if isinstance(mode, int) and host.mode(path) != mode:
        return f"/{path} has mode {host.mode(path):o}, not its original {mode:o}"
    return ""


def same(setting: Any, a: str | None, b: str | None) -> bool:
    """Whether two read values are equal, as the setting compares them."""
    if a is None or b is None:
        return a is b
    return bool(setting.same(a, b)) or a == b


def remove_stray_temporaries(host: Host, changes: list[Change]) -> None:
    """A process killed inside an atomic write leaves ``.<name>.dolmen-tmp-<pid>``: remove it.

    Only dolmen's own temporaries of the files this journal changes are touched, under
    the tune lock, so none of them belongs to a write still running.
    """
    for c in changes:
        path = c.target.path
        if not path or path.startswith(("proc/", "sys/")):
            continue
        folder, _, name = path.rpartition("/")
        for tmp in host.glob(
            f"{folder}/.{name}.dolmen-tmp-*" if folder else f".{name}.dolmen-tmp-*"
        ):
            host.remove(tmp)


def summary(res: RollbackResult) -> dict[str, Any]:
    """The audit event's account of a rollback."""
    return {
        "restored": len(res.restored),
        "changed_by_others": [r.change.target.name for r in res.restored if r.by_others],
        "not_exact": [r.change.target.name for r in res.not_back],
        "complete": res.complete,
        "journal_lost": res.journal_lost,
    }


def describe(e: BaseException) -> str:
    """An OSError or a setting's failure in one phrase."""
    if isinstance(e, OSError) and e.strerror:
        return f"{e.strerror} (errno {e.errno})"
    return str(e) or e.__class__.__name__

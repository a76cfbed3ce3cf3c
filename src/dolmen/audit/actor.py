"""Who is acting: the real user behind sudo (or a login session), and the effective user.

auditd's answer to "who did it" is the login uid (``auid``): the kernel sets it at
login and keeps it across ``sudo`` and ``su``. dolmen takes, in order: sudo's
``SUDO_USER``/``SUDO_UID`` (sudo sets them; only the invoking user can fake them,
and it is still the effective uid that acts), then ``/proc/self/loginuid`` read
through the host, then the effective user itself. The effective uid is always
recorded beside it.
"""

from __future__ import annotations

import os
import pwd
from collections.abc import Mapping

from dolmen.audit.event import Actor
from dolmen.host import Host

UNSET_LOGINUID = 4294967295  # (uid_t)-1: no login session (daemons, early boot)


def parse_loginuid(text: str | None) -> int | None:
    """The login uid from the text of /proc/self/loginuid; None when unset or unreadable."""
    if text is None:
        return None
    text = text.strip()
    if not text.isdigit():
        return None
    uid = int(text)
    return None if uid == UNSET_LOGINUID else uid


def user_name(uid: int) -> str | None:
    """The account name of ``uid`` (through NSS), or None when it has none."""
    try:
        return pwd.getpwuid(uid).pw_name
    except (KeyError, OverflowError):
        return None


def resolve_actor(
    environ: Mapping[str, str],
    loginuid: int | None,
    euid: int,
    principal: str | None = None,
) -> Actor:
    """The actor from what the process knows (pure but for the NSS name look-ups)."""
    eff_name, eff_id = user_name(euid), str(euid)
    if principal:
        return Actor(principal, None, eff_name, eff_id)
    sudo_user, sudo_uid = environ.get("SUDO_USER"), environ.get("SUDO_UID")
    if sudo_user and euid == 0:
        # sudo runs the command as root; SUDO_* from a non-root process proves nothing.
        return Actor(sudo_user, sudo_uid if (sudo_uid or "").isdigit() else None, eff_name, eff_id)
    if loginuid is not None:
        return Actor(user_name(loginuid) or str(loginuid), str(loginuid), eff_name, eff_id)
    return Actor(eff_name or str(euid), eff_id, eff_name, eff_id)


def current_actor(host: Host, principal: str | None = None) -> Actor:
    """The actor of this process on ``host`` (the live host in practice)."""
    loginuid = parse_loginuid(host.read_value("proc/self/loginuid"))
    return resolve_actor(os.environ, loginuid, os.geteuid(), principal)

"""``[docker]``: keys of Docker's ``/etc/docker/daemon.json``, merged into the file.

    [docker]
    "default-shm-size" = "1G"

DGX OS starts dockerd with ``--default-shm-size=1G`` (nv-docker-options): Docker's own
default /dev/shm of 64 MB is outgrown by PyTorch's DataLoader workers and NCCL's
shared-memory transport in containers started without ``--ipc=host``. dolmen sets the
same through daemon.json, the file dockerd and ``nvidia-ctk runtime configure`` share:
the key is merged into what is there and every other key is kept (the file is
rewritten with 4-space indentation, as nvidia-ctk writes it). Refused, with the reason,
when the file is not a JSON object (or repeats a key: dockerd would read one of them),
and when dockerd's unit already passes the same option as a flag: dockerd refuses to
start when an option is both a flag and in daemon.json. The original bytes are
journaled and come back exactly at rollback; a daemon.json that is a symbolic link is
refused (``base.link_refusal``): a write through it would outlive the rollback. Takes
effect when docker restarts (``systemctl restart docker``; running containers stop unless
``live-restore`` is on).
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from typing import Any

from dolmen.host import Host
from dolmen.tune.model import ApplyFailed, Change, Effect, Reading, Target
from dolmen.tune.settings.base import Entry, Setting, link_refusal
from dolmen.tune.settings.limits import UNIT_DIRS

DAEMON_JSON = "etc/docker/daemon.json"
UNIT = "docker.service"
# Docker's RAMInBytes (go-units): a number, an optional unit, an optional i and b.
_SIZE = re.compile(r"^\d+(\.\d+)?\s?[kKmMgGtTpP]?[iI]?[bB]?$")
KEYS: Mapping[str, re.Pattern[str]] = {"default-shm-size": _SIZE}


class NotAnObject(ValueError):
    """daemon.json holds something dockerd would refuse."""


def load(text: str) -> dict[str, Any]:
    """daemon.json as a dict; NotAnObject naming the line, a repeated key or a non-object."""

    def pairs(items: list[tuple[str, Any]]) -> dict[str, Any]:
        seen: dict[str, Any] = {}
        for k, v in items:
            if k in seen:
                raise NotAnObject(f"key {k!r} appears twice")
            seen[k] = v
        return seen

    if not text.strip():
        return {}  # dockerd reads an empty file as no options
    try:
        data = json.loads(text, object_pairs_hook=pairs)
    except json.JSONDecodeError as e:
        raise NotAnObject(f"not JSON (line {e.lineno}, column {e.colno}: {e.msg})") from None
    if not isinstance(data, dict):
        raise NotAnObject(f"a JSON {type(data).__name__}, not an object")
    return data


def merged(text: str, key: str, value: str) -> str:
    """daemon.json with ``key`` set to ``value``, every other key kept in its place."""
    data = load(text)
    data[key] = value
    out = json.dumps(data, indent=4) + "\n"
    if json.loads(out) != data:  # the bytes written must read back as the merge
        raise NotAnObject("the merged file does not read back")
    return out


def unit_flag(host: Host, key: str) -> str | None:
    """The unit file or drop-in that passes ``--<key>`` to dockerd, if any."""
    files = [f"{d}/{UNIT}" for d in UNIT_DIRS] + host.glob(f"etc/systemd/system/{UNIT}.d/*.conf")
    for path in files:
        if re.search(rf"^\s*ExecStart=.*--{re.escape(key)}\b", host.read_opt(path) or "", re.M):
            return f"/{path}"
    return None


class Docker(Setting):
    """daemon.json keys (module docstring)."""

    section = "docker"
    keys = KEYS
    title = "Docker daemon options (daemon.json)"
    persists = True  # daemon.json
    effect = Effect.RESTART

    def validate(self, key: str, value: Any, fields: Mapping[str, Any]) -> str:
        if not isinstance(value, str) or not KEYS[key].match(value):
            raise ValueError(f'{key} is a size as Docker writes it ("1G", "512m"), not {value!r}')
        return value

    def targets(self, host: Host, entry: Entry) -> list[Target] | str:
        if not host.is_dir("etc/docker") and not any(host.exists(f"{d}/{UNIT}") for d in UNIT_DIRS):
            return "Docker is not installed here (no /etc/docker, no docker.service)"
        return [
            Target(
                self.section,
                entry.key,
                f"docker {entry.key}",
                entry.value,
                DAEMON_JSON,
                entry.origin,
                entry.source,
                {"restart": UNIT},
            )
        ]

    def read(self, host: Host, target: Target) -> Reading:
        flag = unit_flag(host, target.key)
        if flag:
            return Reading(
                None,
                skip=f"{flag} passes --{target.key} to dockerd, which refuses to start when an"
                " option is both a flag and in daemon.json: set it in one place",
            )
        if why := link_refusal(host, target.path):
            return Reading(None, skip=why)
        try:
            text = host.read(target.path)
        except FileNotFoundError:
            return Reading(None, notes=(f"/{target.path} is created",))
        except OSError as e:
            return Reading(None, skip=f"/{target.path} unreadable: {e.strerror or e}")
        try:
            value = load(text).get(target.key)
        except NotAnObject as e:
            return Reading(None, skip=f"/{target.path} is {e}: fix it first; dolmen merges only")
        note = f"takes effect when {UNIT} restarts (running containers stop unless live-restore)"
        return Reading(None if value is None else str(value), notes=(note,))

    def same(self, current: str, desired: str) -> bool:
        return current.strip().lower() == desired.lower()

    def apply(self, host: Host, change: Change) -> None:
        try:
            text = host.read(change.target.path)
        except FileNotFoundError:
            text = ""
        try:
            body = merged(text, change.target.key, change.target.desired)
        except NotAnObject as e:
            raise ApplyFailed(f"/{change.target.path} is {e}") from None
        host.write(change.target.path, body)  # keeps the mode; 0644 for a new file

"""``[limits]``: memlock, stack and nofile limits for logins and container runtimes.

``memlock = "unlimited"`` writes ``/etc/security/limits.d/90-dolmen-memlock.conf``
(pam_limits: new logins) and, for each container runtime unit on the host
(docker, containerd), a systemd drop-in ``LimitMEMLOCK=infinity`` (the
runtime's next restart; containers inherit it). RDMA and GPUDirect need
locked memory; NCCL and PyTorch data loaders need open files; NVIDIA sets the
same for dockerd/containerd (nv-docker-options, nvidia-gb200-performance).
Sizes take a unit (``"64MiB"``) because limits.conf counts KiB and systemd
counts bytes; dolmen converts for each.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

from dolmen.host import Host
from dolmen.tune.model import Change, Effect, Reading, Target
from dolmen.tune.settings.base import Entry
from dolmen.tune.settings.dropin import HEADER, DropIn

ITEMS = {"memlock": "LimitMEMLOCK", "stack": "LimitSTACK", "nofile": "LimitNOFILE"}
RUNTIMES = ("docker.service", "containerd.service")
UNIT_DIRS = ("etc/systemd/system", "usr/lib/systemd/system", "lib/systemd/system")
LIMITS_D = "etc/security/limits.d"
_SIZE = re.compile(r"^(\d+)\s*(B|KiB|MiB|GiB)$")
_UNIT_BYTES = {"B": 1, "KiB": 1024, "MiB": 1024**2, "GiB": 1024**3}
NOFILE_MAX = 1 << 30  # fs.nr_open cannot exceed this (Documentation/admin-guide/sysctl/fs.rst)


def size_bytes(value: Any) -> int | None:
    """Bytes of a size with a unit (``"64MiB"``: B, KiB, MiB, GiB), or None when it is not one."""
    m = _SIZE.match(value) if isinstance(value, str) else None
    return None if m is None else int(m.group(1)) * _UNIT_BYTES[m.group(2)]


def limits_conf(item: str, value: str) -> str:
    """The limits.d file for one item. ``*`` does not match root in pam_limits, so root too."""
    v = value if value == "unlimited" or item == "nofile" else str(int(value) // 1024)
    lines = [
        f"{who:<6} {kind:<5} {item:<8} {v}" for who in ("*", "root") for kind in ("soft", "hard")
    ]
    return HEADER + "\n".join(lines) + "\n"


def unit_dropin(item: str, value: str) -> str:
    """The systemd drop-in for one item (bytes, or infinity)."""
    v = "infinity" if value == "unlimited" else value
    return HEADER + f"[Service]\n{ITEMS[item]}={v}\n"


class Limits(DropIn):
    """Resource limits of logins (limits.d) and container runtimes (systemd drop-ins)."""

    section = "limits"
    keys = ITEMS
    persists = True
    title = "memlock/stack/nofile limits (limits.d, container runtimes)"
    effect = Effect.RESTART

    def validate(self, key: str, value: Any, fields: Mapping[str, Any]) -> str:
        if key == "nofile":
            if (
                isinstance(value, bool)
                or not isinstance(value, int)
                or not 1 <= value <= NOFILE_MAX
            ):
                raise ValueError(f"nofile is a count 1..{NOFILE_MAX}, not {value!r}")
            return str(value)
        if value == "unlimited":
            return "unlimited"
        size = size_bytes(value)
        if size is None:
            raise ValueError(f'{key} is "unlimited" or a size with a unit ("64MiB"), not {value!r}')
        if size < 1024:
            raise ValueError(f"{key} below 1 KiB makes no sense: {value!r}")
        return str(size)

    def targets(self, host: Host, entry: Entry) -> list[Target] | str:
        out: list[Target] = []
        name = f"90-dolmen-{entry.key}.conf"
        if host.exists(LIMITS_D) or host.exists("etc/security/limits.conf"):
            out.append(
                Target(
                    self.section,
                    entry.key,
                    f"{entry.key} for logins",
                    limits_conf(entry.key, entry.value),
                    f"{LIMITS_D}/{name}",
                    entry.origin,
                    entry.source,
                    {"restart": "new logins"},
                )
            )
        for unit in RUNTIMES:
            if any(host.exists(f"{d}/{unit}") for d in UNIT_DIRS):
                out.append(
                    Target(
                        self.section,
                        entry.key,
                        f"{entry.key} for {unit}",
                        unit_dropin(entry.key, entry.value),
                        f"etc/systemd/system/{unit}.d/{name}",
                        entry.origin,
                        entry.source,
                        {"restart": unit},
                    )
                )
        return out or "no pam_limits configuration and no container runtime unit here"

    def read(self, host: Host, target: Target) -> Reading:
        got = super().read(host, target)
        notes = [f"takes effect for {target.extra.get('restart', 'new processes')}"]
        if target.path.startswith(LIMITS_D):
            notes.extend(_later_limits(host, target))
        return Reading(got.value, got.skip, notes=tuple(notes))

    def apply(self, host: Host, change: Change) -> None:
        super().apply(host, change)
        if host.kind == "live" and not change.target.path.startswith(LIMITS_D):
            host.run(["systemctl", "daemon-reload"], timeout=60)

    def revert(self, host: Host, change: Change, saved: Mapping[str, Any]) -> None:
        super().revert(host, change, saved)
        if host.kind == "live" and not change.target.path.startswith(LIMITS_D):
            host.run(["systemctl", "daemon-reload"], timeout=60)


def _later_limits(host: Host, target: Target) -> list[str]:
    """Files read after ours that set the same item for everyone: they may win."""
    ours = target.path.rsplit("/", 1)[-1]
    notes = []
    for path in host.glob(f"{LIMITS_D}/*.conf"):
        if path.rsplit("/", 1)[-1] <= ours:
            continue
        for n, line in enumerate((host.read_opt(path) or "").splitlines(), 1):
            parts = line.split("#", 1)[0].split()
            if len(parts) == 4 and parts[0] in ("*", "root") and parts[2] == target.key:
                notes.append(f"/{path}:{n} also sets {target.key} ({parts[3]}) and is read later")
    return notes

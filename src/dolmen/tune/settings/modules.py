"""``[modules]``: kernel module options (modprobe.d) and modules loaded at boot (modules-load.d).

    "nvidia-peermem" = "load"          # etc/modules-load.d/90-dolmen-nvidia-peermem.conf
    "nvidia.NVreg_EnableGpuFirmware" = 1   # etc/modprobe.d/90-dolmen-nvidia-NVreg_...conf

One drop-in per entry, so each comes back on its own at rollback. A module option holds
from the module's next load (a reboot, or unloading the driver); a module to load, from
the next boot (systemd-modules-load) or a ``modprobe`` by hand. Until then the plan says
``pending`` and names what the running kernel has: ``/sys/module/<name>`` for a loaded
module, ``/sys/module/<name>/parameters/<param>`` for the value it loaded with (NVIDIA's
``NVreg_*`` parameters are there once nvidia.ko is loaded). modprobe reads every
modprobe.d file (/etc, /run, /usr/lib, /lib) in name order and the last ``options`` of a
parameter wins, so a file read after ours that sets the same parameter is named.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

from dolmen.host import Host
from dolmen.tune.model import Action, Change, Effect, Reading, Target
from dolmen.tune.settings.base import Entry, choice_error
from dolmen.tune.settings.dropin import HEADER, DropIn

MODPROBE_D = ("etc/modprobe.d", "run/modprobe.d", "usr/lib/modprobe.d", "lib/modprobe.d")
_MODULE = re.compile(r"^[a-z0-9][a-z0-9_\-]*$")
_PARAM = re.compile(r"^[A-Za-z0-9_]+$")
_VALUE = re.compile(r'^[A-Za-z0-9_.,:;=+\-"/]+$')  # one modprobe word: no blanks, no '#'
LOAD = "load"


def sysfs_name(module: str) -> str:
    """modprobe treats - and _ alike; /sys/module spells the name with _."""
    return module.replace("-", "_")


def split_key(key: str) -> tuple[str, str | None]:
    """``nvidia.NVreg_X`` -> (nvidia, NVreg_X); ``nvidia-peermem`` -> (nvidia-peermem, None)."""
    module, _, param = key.partition(".")
    return module, param or None


class Modules(DropIn):
    """Module options and boot-time loads as drop-ins (module docstring)."""

    section = "modules"
    title = "kernel module options and loads (modprobe.d, modules-load.d)"
    persists = True  # modprobe.d and modules-load.d files
    effect = Effect.REBOOT

    def key(self, raw: str) -> str:
        module, param = split_key(raw)
        if not _MODULE.match(module) or (param is not None and not _PARAM.match(param)):
            raise ValueError(
                f"{raw!r} is not a module (nvidia-peermem) or module.parameter "
                "(nvidia.NVreg_EnablePCIERelaxedOrderingMode)"
            )
        return raw

    def validate(self, key: str, value: Any, fields: Mapping[str, Any]) -> str:
        if split_key(key)[1] is None:
            if value != LOAD:
                raise choice_error(f"[modules] {key}", value, [LOAD])
            return LOAD
        if isinstance(value, bool) or not isinstance(value, (int, str)):
            raise ValueError(f"the value of {key} is a number or one word")
        text = str(value)
        if not _VALUE.match(text):
            raise ValueError(f"the value of {key} is one word without blanks or '#': {text!r}")
        return text

    def targets(self, host: Host, entry: Entry) -> list[Target]:
        module, param = split_key(entry.key)
        if param is None:
            path = f"etc/modules-load.d/90-dolmen-{module}.conf"
            body = f"{module}\n"
        else:
            path = f"etc/modprobe.d/90-dolmen-{module}-{param}.conf"
            body = f"options {module} {param}={entry.value}\n"
        name = entry.key if param else f"{module} loaded at boot"
        extra = {"module": module, "param": param or "", "value": entry.value}
        return [
            Target(
                self.section,
                entry.key,
                name,
                HEADER + body,
                path,
                entry.origin,
                entry.source,
                extra,
            )
        ]

    def read(self, host: Host, target: Target) -> Reading:
        got = super().read(host, target)
        if got.skip:
            return got
        module, param = split_key(target.key)
        loaded = host.is_dir(f"sys/module/{sysfs_name(module)}")
        if not param:
            running = "loaded" if loaded else "not loaded"
        elif not loaded:
            running = f"{module} not loaded"
        else:
            now = host.read_value(f"sys/module/{sysfs_name(module)}/parameters/{param}")
            running = f"{param}={now}" if now is not None else f"{param} not shown by {module}"
        notes = [f"running kernel: {running}", *_later_options(host, target)]
        return Reading(got.value, staged=running, notes=tuple(notes))

    def plan(self, target: Target, reading: Reading) -> Change:
        change = super().plan(target, reading)
        if change.action is not Action.OK:
            return change
        module, param = split_key(target.key)
        value = target.extra.get("value", "")
        in_effect = (
            reading.staged == "loaded" if not param else reading.staged == f"{param}={value}"
        )
        if in_effect:
            return change
        when = f"modprobe {module} or a reboot" if not param else f"{module} loads again (reboot)"
        return Change(
            target,
            reading.value,
            Action.PENDING,
            self.effect,
            f"in place; takes effect when {when}",
            change.notes,
        )


def _later_options(host: Host, target: Target) -> list[str]:
    """modprobe.d files read after ours that set the same parameter: the last one wins."""
    module, param = split_key(target.key)
    if not param:
        return []
    ours = target.path.rsplit("/", 1)[-1]
    spelled = "[-_]".join(re.escape(part) for part in re.split(r"[-_]", module))
    pattern = re.compile(rf"^\s*options\s+{spelled}\s.*\b{re.escape(param)}=(\S+)", re.M)
    notes = []
    for folder in MODPROBE_D:
        for path in host.glob(f"{folder}/*.conf"):
            name = path.rsplit("/", 1)[-1]
            if path == target.path or name <= ours:
                continue
            m = pattern.search(host.read_opt(path) or "")
            if m:
                notes.append(f"/{path} sets {param}={m.group(1)} and is read later: it wins")
    return notes

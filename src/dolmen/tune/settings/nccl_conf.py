"""``[nccl]``: NCCL's files, whole: /etc/nccl.conf and the NCCL_TOPO_FILE it names.

Written by ``dolmen nccl env --write`` (not a profile section: the content is computed
from the host's fabric, ``dolmen.nccl``), through the journaled engine like every
other change: the plan shows the new text against the old, apply journals the original
bytes (or that the file was absent) before writing, rollback puts them back.

``plan_files`` is that plan: the topology XML (left out, and NCCL_TOPO_FILE with it,
where the tree cannot give one: the reason is a note of the plan) and nccl.conf, the
site's file merged with this fabric's values (``nccl.conf.merged``).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from dolmen.errors import EnvironmentProblem
from dolmen.host import Host
from dolmen.nccl import NCCL_CONF, TOPO_FILE
from dolmen.tune.model import Action, Plan, Target
from dolmen.tune.settings.base import Entry
from dolmen.tune.settings.dropin import DropIn

FILES = (NCCL_CONF, TOPO_FILE)


class NcclFiles(DropIn):
    """The files NCCL reads at init; ``key`` is the file, ``desired`` its whole text."""

    section = "nccl"
    title = "NCCL configuration files"
    persists = True  # files under /etc

    def key(self, raw: str) -> str:
        if raw not in FILES:
            raise ValueError(f"[nccl] key {raw!r} is not valid; valid: {', '.join(FILES)}")
        return raw

    def validate(self, key: str, value: Any, fields: Mapping[str, Any]) -> str:
        if not isinstance(value, str):
            raise ValueError(f"[nccl] {key} must be the file's text")
        return value

    def targets(self, host: Host, entry: Entry) -> list[Target] | str:
        return [Target(self.section, entry.key, f"/{entry.key}", entry.value, entry.key)]


PROFILE = "nccl env"


def plan_files(host: Host) -> tuple[Plan, dict[str, str]]:
    """The plan and the text planned for each file (key: its path in the host)."""
    # Here, not at the top: the settings registry loads with every tune command.
    from dolmen.nccl.conf import merged
    from dolmen.nccl.site import compute
    from dolmen.nccl.xml import XmlGap, topo_xml

    tree, env = compute(host, topo_file=f"/{TOPO_FILE}", inventory=True)
    notes: list[str] = []
    texts: dict[str, str] = {}
    try:
        texts[TOPO_FILE], left = topo_xml(tree)
        notes += left
    except XmlGap as e:
        notes.append(f"no NCCL_TOPO_FILE: {e}")
        tree, env = compute(host, tree)
    values = env.values()
    if TOPO_FILE not in texts:
        values.pop("NCCL_TOPO_FILE", None)
    why = {v.name: v.why for v in env.variables}
    texts[NCCL_CONF] = merged(host.read_opt(NCCL_CONF), values, why)
    setting = NcclFiles()
    changes = []
    for rel, text in texts.items():
        target = Target("nccl", rel, f"/{rel}", text, rel, origin="dolmen nccl env --write")
        change = setting.plan(target, setting.read(host, target))
        if change.action is Action.SKIP:  # the two files go together: one left is no write
            raise EnvironmentProblem(
                f"/{rel}: {change.reason.removeprefix('unreadable: ')}; nothing was written",
                hint=f"move {host.path(rel)} aside (nccl env --write writes regular files only)",
            )
        changes.append(change)
    return Plan(PROFILE, host.hostname, tuple(changes), tuple(notes)), texts

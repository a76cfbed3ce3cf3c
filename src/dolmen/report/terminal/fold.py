"""Cascades folded under their root cause: a pure function over findings.

When the driver does not answer, every GPU check says "unknown" for the same reason; when
one GPU is lost, eighteen checks of that GPU say so. Printed one by one they bury the one
finding that matters. ``fold`` groups the ``unknown`` and ``skip`` findings that share one
cause into one ``Group``, and places each group right after the finding of its cause.

A finding's cause is, first, a root check its summary or remedy names ("See gpu.lost: ...")
when that check has a problem (fail, warn, unknown or error) on the same subject or on the
host as a whole; followed to the end of a chain (gpu.lost unknown because of
gpu.driver.responds). Without a named root, the cause is the finding's summary itself:
findings of one status and word for word the same summary share it, the subject's own bus
id aside ("the GPU's PCI function <its bus id> is not in sysfs", once per GPU). Advisory
findings (``gating`` False) fold only with advisory ones: they never decide the verdict.

Failures, warnings and errors never fold: each one is something to act on. Subjects are
compared as written, whatever their spelling (``gpu:<bus id>`` or another), so the grouping
holds while subjects change; ``gpu_label`` turns a GPU subject into "GPU 3" when the
verdict's inventory knows its index.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from dolmen.checks.model import Finding, Status
from dolmen.report.terminal.gpus import subject_bus
from dolmen.values.busid import BusId

FOLDABLE = (Status.UNKNOWN, Status.SKIP)
PROBLEM = (Status.FAIL, Status.WARN, Status.UNKNOWN, Status.ERROR)
# A check id as reasons name it: category.name[.signal], lower case.
_CHECK_ID = re.compile(r"\b[a-z][a-z0-9_]*(?:\.[a-z0-9_]+)+\b")
MIN_GROUP = 2  # one finding alone is printed as itself
HOST = "host"
# A PCI bus id in a summary, in the spellings checks write (sysfs, nvidia-smi, NVRM).
_BUS = re.compile(r"\b(?:PCI:)?(?:[0-9a-fA-F]{4,8}:)?[0-9a-fA-F]{2}:[0-9a-fA-F]{2}(?:\.[0-7])?\b")
ITS_BUS = "<its bus id>"


@dataclass(frozen=True)
class Group:
    """Findings of one status that share one cause, printed as one line.

    ``root`` and ``root_subject`` name the finding of the cause (None for a shared summary
    alone); ``summary`` is the members' reason when they all give the same one, else None.
    """

    status: Status
    root: str | None
    root_subject: str | None
    summary: str | None
    members: tuple[Finding, ...]

    @property
    def checks(self) -> tuple[str, ...]:
        """The members' check ids, each once, in order."""
        return tuple(dict.fromkeys(f.check for f in self.members))

    @property
    def subjects(self) -> tuple[str, ...]:
        """The members' subjects, each once, in order."""
        return tuple(dict.fromkeys(f.subject for f in self.members))

    @property
    def gating(self) -> bool:
        """A group of advisory findings only is advisory itself."""
        return any(f.gating for f in self.members)


Item = Finding | Group


def fold(findings: Sequence[Finding], *, min_group: int = MIN_GROUP) -> list[Item]:
    """``findings`` in their order, with each group of ``min_group`` or more members in place
    of its members: after its root's finding, or where its first member was."""
    problems: dict[str, list[Finding]] = {}
    for f in findings:
        if f.status in PROBLEM:
            problems.setdefault(f.check, []).append(f)
    keys: dict[int, tuple[object, ...]] = {}
    members: dict[tuple[object, ...], list[Finding]] = {}
    for i, f in enumerate(findings):
        if f.status not in FOLDABLE:
            continue
        root = _root(f, problems)
        key: tuple[object, ...] = (
            (f.status, f.gating, root.check, root.subject)
            if root is not None
            else (f.status, f.gating, None, None, generic(f.summary, f.subject))
        )
        keys[i] = key
        members.setdefault(key, []).append(f)
    groups = {k: _group(k, m) for k, m in members.items() if len(m) >= min_group}
    out: list[Item] = []
    placed: set[tuple[object, ...]] = set()
    after: dict[tuple[str, str], list[Group]] = {}
    for g in groups.values():
        if g.root is not None and g.root_subject is not None:
            after.setdefault((g.root, g.root_subject), []).append(g)

    def place(item: Item) -> None:
        out.append(item)
        for f in item.members if isinstance(item, Group) else (item,):
            for g in after.pop((f.check, f.subject), ()):
                place(g)

    for i, f in enumerate(findings):
        mine = keys.get(i)
        group = groups.get(mine) if mine is not None else None
        if mine is None or group is None:
            place(f)
        elif group.root is None and mine not in placed:
            placed.add(mine)
            place(group)
    for pending in list(after.values()):  # a cycle of roots: the cascade follows the list
        out.extend(pending)
    return out


def _root(f: Finding, problems: Mapping[str, list[Finding]]) -> Finding | None:
    """The finding at the end of the chain of root checks ``f`` names, or None."""
    seen = {f.check}
    root: Finding | None = None
    current = f
    while True:
        nxt = _named_root(current, problems, seen)
        if nxt is None:
            return root
        seen.add(nxt.check)
        root = current = nxt


def _named_root(
    f: Finding, problems: Mapping[str, list[Finding]], seen: set[str]
) -> Finding | None:
    """The problem finding of a check ``f``'s summary or remedy names, on ``f``'s subject or
    on ``host`` (a host-wide cause explains any subject). A problem of that check on another
    device is no cause: a remedy that says "see gpu.row_remap" for every GPU must not fold
    GPU 5's unknown under GPU 3's failure."""
    for check_id in _CHECK_ID.findall(f"{f.summary} {f.remedy or ''}"):
        if check_id in seen:
            continue
        rows = problems.get(check_id, ())
        cause = [r for r in rows if r.subject == f.subject] or [
            r for r in rows if r.subject == HOST
        ]
        if cause:
            return cause[0]
    return None


def generic(summary: str, subject: str) -> str:
    """``summary`` with the subject's own bus id written ``<its bus id>``: the same reason
    for each GPU reads as one reason."""
    own = subject_bus(subject)
    if own is None:
        return summary
    return _BUS.sub(lambda m: ITS_BUS if BusId.parse(m[0]) == own else m[0], summary)


def _group(key: tuple[object, ...], members: list[Finding]) -> Group:
    summaries = {generic(f.summary, f.subject) for f in members}
    status = members[0].status
    root, root_subject = (key[2], key[3]) if key[2] is not None else (None, None)
    return Group(
        status=status,
        root=root if isinstance(root, str) else None,
        root_subject=root_subject if isinstance(root_subject, str) else None,
        summary=summaries.pop() if len(summaries) == 1 else None,
        members=tuple(members),
    )


def describe(group: Group, gpu_label: Mapping[str, str] | None = None) -> str:
    """The group's line: "18 checks of GPU 3 not read: the GPU is lost (gpu.lost)"."""
    labels = gpu_label or {}
    checks, subjects = group.checks, group.subjects
    verb = "not read" if group.status is Status.UNKNOWN else "skipped"
    if len(checks) == 1:
        who = f"{checks[0]} on {len(subjects)} subjects"
    elif subjects == ("host",):
        who = f"{len(group.members)} checks"
    elif len(subjects) == 1:
        who = f"{len(group.members)} checks of {labels.get(subjects[0], subjects[0])}"
    else:
        who = f"{len(group.members)} checks on {len(subjects)} subjects"
    reason = group.summary if group.summary is not None else "reasons differ (-v lists them)"
    line = f"{who} {verb}: {reason}"
    if group.root is not None:
        line += f" (see {group.root})"
    return line

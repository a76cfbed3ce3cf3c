"""Terminal renderings of plans, applies, rollbacks, verifications and profiles (rich).

JSON renderings are the ``to_json`` methods of the objects; these are the
tables a person reads. Values are shown through their setting's ``show``
(a drop-in file as its first line, a bracketed choice as the chosen word).
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence

from rich.console import Console
from rich.table import Table

from dolmen.tune.model import Action, Change, Effect, Plan
from dolmen.tune.profile import Profile
from dolmen.tune.results import ApplyResult, RollbackResult
from dolmen.tune.settings import SETTINGS

STYLE = {
    Action.OK: "green",
    Action.CHANGE: "yellow",
    Action.SKIP: "dim",
    Action.PENDING: "cyan",
}
WIDTH = 44


def _cell(value: str | None, setting: str) -> str:
    text = SETTINGS[setting].show(value).replace("\t", " ")
    return text if len(text) <= WIDTH else text[: WIDTH - 1] + "…"


def _when(c: Change) -> str:
    if c.effect is Effect.REBOOT:
        return "reboot"
    if c.effect is Effect.RESTART:
        return "restart"
    return "now"


_NUMBERED = re.compile(r"^(\D*?)(\d+)(\D.*)?$")


def _grouped(changes: Iterable[Change]) -> list[tuple[Change, str]]:
    """Changes with their shown target; rows that differ only by a number in the target
    (cpu0 governor ... cpu223 governor, one IRQ per queue) fold into one: cpu0-223 governor."""
    rows: dict[tuple[object, ...], tuple[Change, str, str, list[int]]] = {}
    for c in changes:
        m = _NUMBERED.match(c.target.name)
        if m is None:
            rows[(id(c),)] = (c, c.target.name, "", [])
            continue
        prefix, number, suffix = m[1], int(m[2]), m[3] or ""
        key = (
            c.target.setting,
            prefix,
            suffix,
            c.current,
            c.target.desired,
            c.action,
            c.effect,
            c.reason,
            c.notes,
        )
        first = rows.setdefault(key, (c, prefix, suffix, []))
        first[3].append(number)
    out = []
    for c, prefix, suffix, numbers in rows.values():
        out.append((c, f"{prefix}{_ranges(sorted(numbers))}{suffix}" if numbers else prefix))
    return out


def _ranges(values: list[int]) -> str:
    parts: list[str] = []
    start = prev = values[0]
    for v in [*values[1:], None]:
        if v is not None and v == prev + 1:
            prev = v
            continue
        parts.append(str(start) if start == prev else f"{start}-{prev}")
        if v is not None:
            start = prev = v
    return ",".join(parts)


def change_rows(changes: Iterable[Change], *, verify: bool = False) -> Table:
    """A table of changes: setting, target, current, desired, action, when, note."""
    table = Table(show_edge=False, pad_edge=False, header_style="bold")
    for col in ("setting", "target", "current", "desired", "drift" if verify else "action"):
        table.add_column(col)
    table.add_column("when")
    table.add_column("note", overflow="fold")
    for c, shown in _grouped(changes):
        label = c.action.value
        if verify:
            label = {Action.CHANGE: "DRIFT", Action.OK: "in sync"}.get(c.action, label)
        note = "; ".join([c.reason, *c.notes] if c.reason else c.notes)
        table.add_row(
            c.target.setting,
            shown,
            _cell(c.current, c.target.setting),
            _cell(c.target.desired, c.target.setting),
            f"[{STYLE[c.action]}]{label}[/]",
            _when(c),
            note,
        )
    return table


def render_plan(plan: Plan, console: Console, *, header: Sequence[str] = ()) -> None:
    """The plan table and its summary."""
    for line in header:
        console.print(line)
    console.print(change_rows(plan.changes))
    counts = {a: sum(1 for c in plan.changes if c.action is a) for a in Action}
    reboot = any(c.effect is Effect.REBOOT and c.acts for c in plan.changes)
    console.print(
        f"{plan.profile} on {plan.host}: {counts[Action.CHANGE]} to change, "
        f"{counts[Action.OK]} already set, {counts[Action.PENDING]} pending, "
        f"{counts[Action.SKIP]} skipped" + ("; a reboot is needed" if reboot else "")
    )
    for note in plan.notes:
        console.print(f"[yellow]note:[/] {note}")


def render_apply(res: ApplyResult, console: Console) -> None:
    """What an apply did, and the rollback that followed a failure."""
    for s in res.steps:
        mark = {"done": "[green]set[/]", "skipped": "[dim]skipped[/]", "failed": "[red]FAILED[/]"}
        extra = f" ({s.note})" if s.note else ""
        console.print(f"{mark[s.status]} {s.change.target.name}{extra}")
    if res.ok:
        held = [s for s in res.steps if s.status == "done" and not s.held]
        console.print(f"{res.profile} applied; journal {res.journal}")
        for s in held:
            console.print(f"[yellow]not held:[/] {s.change.target.name}: {s.note}")
        return
    console.print(f"[red]apply stopped:[/] {res.error}")
    if res.rollback is not None:
        render_rollback(res.rollback, console)


def render_rollback(res: RollbackResult, console: Console) -> None:
    """What a rollback restored; values others changed since are called out."""
    table = Table(show_edge=False, pad_edge=False, header_style="bold")
    for col in ("target", "found", "dolmen had set", "restored", "note"):
        table.add_column(col)
    for r in res.restored:
        s = r.change.target.setting
        note = []
        if r.by_others:
            note.append("[yellow]changed by someone else since the apply[/]")
        if r.error:
            note.append(f"[red]not back: {r.error}[/]")
        elif not r.exact:
            note.append(f"[red]not the original ({_cell(r.before, s)})[/]")
        table.add_row(
            r.change.target.name,
            _cell(r.found, s),
            _cell(r.had_set, s) if r.had_set is not None else "-",
            _cell(r.restored, s),
            "; ".join(note),
        )
    console.print(table)
    if res.journal_lost:
        console.print(f"[red]journal not written[/] ({res.journal_lost}): restored from memory")
    if res.complete:
        n = len(res.restored)
        console.print(f"{res.profile} rolled back: {n} originals restored and read back")
        return
    bad = res.not_back
    console.print(
        f"[red]rollback incomplete[/]: {len(bad)} of {len(res.restored)} originals are not "
        f"back ({bad[0].change.target.name}: {bad[0].error or 'differs'}); the journal stays "
        "open: fix the cause, then `dolmen tune recover --rollback` retries them"
    )


def render_profile(profile: Profile, console: Console) -> None:
    """A merged profile: each value with the file and line it came from, and its source."""
    console.print(f"[bold]{profile.name}[/] ({profile.path})")
    if profile.description:
        console.print(profile.description)
    if profile.includes:
        console.print(f"includes: {', '.join(profile.includes)}")
    console.print(f"persist at boot: {'yes' if profile.persist else 'no'}")
    table = Table(show_edge=False, pad_edge=False, header_style="bold")
    for col in ("setting", "key", "value", "from", "source"):
        table.add_column(col, overflow="fold")
    for e in profile.entries:
        value = e.value + (f" (only {'/'.join(e.arch)})" if e.arch else "")
        table.add_row(e.setting, e.key, value, e.origin.rsplit("/", 1)[-1], e.source)
    console.print(table)
    for r in profile.removed:
        why = f": {r.why}" if r.why else ""
        console.print(f"removed [{r.setting}] {r.key} at {r.origin.rsplit('/', 1)[-1]}{why}")

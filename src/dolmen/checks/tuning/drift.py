"""``tuning.drift``: the host still holds the profile ``dolmen tune apply`` put in force."""

from __future__ import annotations

from dolmen.checks.context import Context
from dolmen.checks.model import Level, Outcome, check, passed, skipped, unknown, warned
from dolmen.host import NOT_IN_BUNDLE
from dolmen.tune.model import Action
from dolmen.tune.verify import tune_status, verify_journal

_NO_JOURNAL = f"the host's own tune journal is {NOT_IN_BUNDLE}"


@check(
    "tuning.drift",
    title="The active tuning profile still holds and no apply was left half done",
    level=Level.STANDARD,
    remedy=(
        "See what changed with `dolmen tune verify`; re-apply the profile with "
        "`dolmen tune apply <profile>`, or find what reset it (a sysctl.d file, tuned, a script)."
    ),
    gating=False,
)
def drift(ctx: Context) -> list[Outcome]:
    """Reads dolmen's tune journal for this host and re-reads every target it applied."""
    st = tune_status(ctx.host)
    if st.interrupted and st.journal is not None:
        return [
            warned(
                "host",
                f"an apply of {st.journal.profile} was interrupted ({st.journal.progress}): "
                "the host is partly tuned",
                remedy="Run `dolmen tune recover` to roll it back or complete it.",
                journal=str(st.journal.path),
            )
        ]
    if st.journal is None or st.active is None:
        if ctx.host.kind == "live":
            return [skipped("host", "no dolmen tune profile is active on this host")]
        # A bundle never holds the host's own tune journal: only this tree's is known.
        return [skipped("host", f"no dolmen tune profile applied to this tree ({_NO_JOURNAL})")]
    v = verify_journal(ctx.host, st.journal)
    gone = [r for r in v.rows if r.action is Action.SKIP]
    out: list[Outcome] = []
    if v.drift:
        shown = ", ".join(
            f"{r.target.name} is {r.current} (profile: {r.target.desired})" for r in v.drift[:5]
        )
        out.append(
            warned(
                "host",
                f"{len(v.drift)} value(s) of {v.profile} drifted: {shown}",
                drifted=[r.target.name for r in v.drift],
                profile=v.profile,
            )
        )
    if gone:
        out.append(
            unknown(
                "host",
                f"{len(gone)} target(s) of {v.profile} can no longer be read: {gone[0].reason}",
                targets=[r.target.name for r in gone],
            )
        )
    if not out:
        pending = v.count(Action.PENDING)
        tail = f"; {pending} wait for a reboot or restart" if pending else ""
        out.append(passed("host", f"{v.profile} holds ({v.count(Action.OK)} values){tail}"))
    return out

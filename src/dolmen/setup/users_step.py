"""The users step: the users, groups and GPU quotas asked for, through the job backend's
quota store (``dolmen users add`` / ``dolmen quota set``: each change audited there)."""

from __future__ import annotations

from dolmen.setup.model import Context, Status, StepPlan, StepResult


class UsersStep:
    """Add users and set quotas; nothing asked is a skip that says how to ask."""

    name = "users"
    title = "Users and GPU quotas (dolmen users, dolmen quota)"

    def plan(self, ctx: Context) -> StepPlan:
        """One line per user and quota; names and figures refused here, before any change."""
        from dolmen.jobs.quota import check_gpus, check_name

        o = ctx.options
        if not o.users and not o.quotas:
            return StepPlan(
                (
                    "nothing asked: pass --user NAME[:GROUP,...] and --quota user:NAME=GPUS, "
                    "or run `dolmen users add` and `dolmen quota set` later",
                ),
                status=Status.SKIPPED,
            )
        lines = []
        for name, groups in o.users:
            check_name("user", name)
            for grp in groups:
                check_name("group", grp)
            lines.append(f"add user {name} (groups: {', '.join(groups) or 'none'})")
        for kind, name, gpus in o.quotas:
            check_name(kind, name)
            check_gpus(gpus)
            lines.append(f"quota {kind} {name}: at most {gpus} GPUs")
        return StepPlan(tuple(lines), changes=True)

    def apply(self, ctx: Context, plan: StepPlan) -> StepResult:
        """Through the store the CLI made for the chosen backend."""
        from dolmen.jobs.quota import Kind, Subject, add_user, set_quota

        o = ctx.options
        assert o.quota_store is not None, "the CLI gives the quota store"
        store = o.quota_store()
        for name, groups in o.users:
            add_user(store, name, groups)
        for kind, name, gpus in o.quotas:
            set_quota(store, Subject(Kind(kind), name), gpus)
        return StepResult(self.name, Status.DONE, (*plan.lines, f"backend: {store.backend}"))

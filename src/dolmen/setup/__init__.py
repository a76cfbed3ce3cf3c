"""``dolmen setup``: a guided first-steps flow for a new GPU node, planned before it runs.

Steps, in order (``flow.STEPS``): validate, stack, tune, containers, scheduler, users.
Each step plans first (pure reads: what ``--dry-run`` prints), then applies through the
path that already owns the change: the tune engine (journal, rollback, audit), the
quota stores (audited), ``writes.write_with_backup`` for the scheduler's files (atomic,
a backup, audit intent and result). The flow's own state is one JSON file per host in
the state folder (``state.py``), written atomically after each step, so a run that was
stopped resumes where it stopped. docs/setup.md is the user's page.
"""

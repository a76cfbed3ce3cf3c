"""A local job's whole process tree, from any process (issue 9 case 6).

Killing the supervisor used to orphan the ranks' children (data-loader workers,
shell wrappers) on GPUs the store then counted as free, and ``cancel`` could not
reach them. Every rank now carries the job's marker in its environment
(``MARKER_ENV``, a random token stored with the job) and, where the machine allows,
joins the job's cgroup v2 folder; ``tree(job)`` finds and kills all of it, for the
supervisor, for ``cancel`` and for ``status`` (a job whose supervisor died).
"""

from __future__ import annotations

import secrets

from dolmen.host.process import JobTree
from dolmen.jobs.local.store import JobRow

MARKER_ENV = "DOLMEN_JOB_MARKER"


def new_marker(job_hint: str = "") -> str:
    """A marker no other job has (also the job's cgroup folder name)."""
    return f"job{job_hint}-{secrets.token_hex(8)}"


def tree(job: JobRow) -> JobTree | None:
    """The job's process tree; None for a job stored before markers existed."""
    marker = job.options.get("marker")
    return JobTree(MARKER_ENV, str(marker)) if marker else None

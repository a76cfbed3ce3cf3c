"""A job starting or ending on a host: one atomic batch of set-element updates.

The ``slots`` set says which slot holds which job (element ``K``, comment
``job:<id>``). Starting claims the lowest free slot with ``create element`` in the same
batch that fills the slot's member and port sets, so two prologs racing for one slot
cannot both win: the loser's whole batch is refused, changing nothing, and it tries the
next free slot. Ending flushes the slot's sets and frees it, in one batch. Neither
touches a rule, so the cost does not grow with the number of jobs.
"""

from __future__ import annotations

import json

from dolmen.host import Host, RunStatus
from dolmen.net.model import JobAccess
from dolmen.net.nft import FAMILY, TABLE, JobUpdate, NftError
from dolmen.net.nft_compile import job_commands, release_commands
from dolmen.tune.settings.nft_io import NFT_TIMEOUT, nft_missing, nft_run

_TRIES = 4  # slots lost to racing prologs before giving up
_PREFIX = "job:"


def slots_in_use(host: Host) -> dict[int, str]:
    """Slot -> job id, from the live ``slots`` set ({} when there is no table)."""
    res = host.run(["nft", "-j", "list", "set", FAMILY, TABLE, "slots"], timeout=NFT_TIMEOUT)
    if res.status is RunStatus.MISSING:
        raise nft_missing()
    if not res.ok:
        if "No such file or directory" in res.stderr:
            return {}
        raise NftError(f"nft list set {FAMILY} {TABLE} slots: {res.stderr.strip()[:300]}")
    return parse_slots(res.stdout)


def parse_slots(text: str) -> dict[int, str]:
    """Slot -> job id from ``nft -j list set`` output; elements without a job comment are
    skipped (they cannot be told apart from damage, and hold no job)."""
    try:
        items = json.loads(text)["nftables"]
    except (ValueError, KeyError, TypeError):
        raise NftError("nft -j list set printed something that is not its JSON") from None
    out: dict[int, str] = {}
    for obj in items if isinstance(items, list) else []:
        s = obj.get("set") if isinstance(obj, dict) else None
        for e in s.get("elem", []) if isinstance(s, dict) else []:
            el = e.get("elem") if isinstance(e, dict) else None
            if not isinstance(el, dict) or not isinstance(el.get("val"), int):
                continue
            comment = str(el.get("comment", ""))
            if comment.startswith(_PREFIX):
                out[int(el["val"])] = comment[len(_PREFIX) :]
    return out


def start(host: Host, access: JobAccess, max_jobs: int) -> JobUpdate:
    """Give ``access`` a slot (module docstring); NftError when none is free."""
    for _ in range(_TRIES):
        used = slots_in_use(host)
        held = [k for k, job in used.items() if job == access.job_id]
        if held:  # a prolog run twice: refresh the members in the slot it holds
            cmds = job_commands(access, held[0])[1:]
            batch = {"nftables": cmds}
            nft_run(host, batch)
            return JobUpdate(access.job_id, held[0], "started", batch)
        free = next((k for k in range(max_jobs) if k not in used), None)
        if free is None:
            raise NftError(
                f"all {max_jobs} job slots of this host are in use: job {access.job_id} "
                "gets no isolation entry and must not start",
                hint="raise [policy] max_jobs, or end the jobs that died (dolmen net gc)",
            )
        batch = {"nftables": job_commands(access, free)}
        try:
            nft_run(host, batch)
        except NftError as e:
            if "File exists" in e.message:  # another prolog took the slot first
                continue
            raise
        return JobUpdate(access.job_id, free, "started", batch)
    raise NftError(f"job {access.job_id}: slots kept being taken by others ({_TRIES} tries)")


def end(host: Host, job_id: str) -> JobUpdate:
    """Empty and free the job's slot; ``absent`` when it holds none."""
    used = slots_in_use(host)
    held = [k for k, job in used.items() if job == job_id]
    if not held:
        return JobUpdate(job_id, None, "absent")
    cmds = [c for k in held for c in release_commands(k)]
    batch = {"nftables": cmds}
    nft_run(host, batch)
    return JobUpdate(job_id, held[0], "ended", batch)

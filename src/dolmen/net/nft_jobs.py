"""A job starting or ending on a host: one atomic batch of set-element updates.

The ``slots`` set says which slot holds which job (element ``K``, comment
``job:<id>``), and ``owners`` tags it with the job (``K . tag``). Starting claims the
lowest free slot with ``create element`` in the same batch that fills the slot's pair
sets, so two prologs racing for one slot cannot both win: the loser's whole batch is
refused, changing nothing, and it tries the next free slot. Ending deletes the job's tag,
flushes the slot's sets and frees it, in one batch: if the slot was freed and taken by
another job since it was read, the tag is not there and nothing changes (a collection
racing a new job's start never empties that job's slot). Neither touches a rule, so the
cost does not grow with the number of jobs.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping

from dolmen.host import Host, RunStatus
from dolmen.net.model import JobAccess
from dolmen.net.nft import FAMILY, TABLE, JobUpdate, NftError
from dolmen.net.nft_compile import fill_commands, job_commands, release_commands
from dolmen.tune.settings.nft_io import NFT_TIMEOUT, nft_failed, nft_missing, nft_run

_TRIES = 4  # slots lost to racing prologs before giving up
_NOT_THERE = "No such file or directory"
_PREFIX = "job:"


def slots_in_use(host: Host) -> dict[int, str]:
    """Slot -> job id, from the live ``slots`` set ({} when there is no table)."""
    res = host.run(["nft", "-j", "list", "set", FAMILY, TABLE, "slots"], timeout=NFT_TIMEOUT)
    if res.status is RunStatus.MISSING:
        raise nft_missing()
    if not res.ok:
        if _NOT_THERE in res.stderr:
            return {}
        raise nft_failed(f"nft list set {FAMILY} {TABLE} slots", res.stderr, res.failure())
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


def start(host: Host, access: JobAccess, pool: range) -> JobUpdate:
    """Give ``access`` a slot of ``pool`` (module docstring); NftError when none is free."""
    job_commands(access, pool.start)  # a network among the members: ValueError, nothing run
    for _ in range(_TRIES):
        used = slots_in_use(host)
        held = [k for k, job in used.items() if job == access.job_id]
        if held:  # a prolog run twice: refresh the members in the slot it holds
            batch = {"nftables": fill_commands(access, held[0])}
            nft_run(host, batch)
            return JobUpdate(access.job_id, held[0], "started", batch)
        free = next((k for k in pool if k not in used), None)
        if free is None:
            raise NftError(
                f"all {len(pool)} job slots of this host are in use: job {access.job_id} "
                "gets no isolation entry and must not start",
                hint="raise [policy] max_jobs, or end the jobs that died "
                "(`dolmen net verify` lists them)",
            )
        batch = {"nftables": job_commands(access, free)}
        try:
            nft_run(host, batch)
        except NftError as e:
            if "File exists" in e.message:  # another prolog took the slot first
                continue
            if _NOT_THERE in e.message:
                raise NftError(
                    f"job {access.job_id}: this host has no inet dolmen table with job slot "
                    f"{free} (nothing changed): the job must not start",
                    hint="apply the policy first: dolmen net apply --policy FILE",
                ) from None
            raise
        return JobUpdate(access.job_id, free, "started", batch)
    raise NftError(f"job {access.job_id}: slots kept being taken by others ({_TRIES} tries)")


def end(host: Host, job_id: str) -> JobUpdate:
    """Empty and free the job's slot; ``absent`` when it holds none (or lost it to
    another job between the read and the batch: nothing changed)."""
    held = [k for k, job in slots_in_use(host).items() if job == job_id]
    if not held:
        return JobUpdate(job_id, None, "absent")
    batch = release_batch({k: job_id for k in held})
    try:
        nft_run(host, batch)
    except NftError as e:
        if _NOT_THERE in e.message and job_id not in slots_in_use(host).values():
            return JobUpdate(job_id, None, "absent")  # another end freed it first
        raise
    return JobUpdate(job_id, held[0], "ended", batch)


def release_batch(slots: Mapping[int, str]) -> dict[str, list[dict[str, object]]]:
    """One batch that empties and frees every slot of ``slots`` (slot -> the job that
    must still hold it); pure."""
    return {"nftables": [c for k, job in sorted(slots.items()) for c in release_commands(k, job)]}


def release_many(
    host: Host, pick: Callable[[Mapping[int, str]], Mapping[int, str]]
) -> dict[int, str]:
    """Free, in ONE batch, the live slots ``pick`` chooses (slot -> job); the slots freed.
    A batch refused because one of them changed hands since the read is read and tried
    again (nothing had changed); NftError when nft refuses it otherwise."""
    for _ in range(_TRIES):
        chosen = dict(pick(slots_in_use(host)))
        if not chosen:
            return {}
        try:
            nft_run(host, release_batch(chosen))
        except NftError as e:
            if _NOT_THERE in e.message:
                continue
            raise
        return chosen
    raise NftError(f"job slots kept changing hands while they were collected ({_TRIES} tries)")

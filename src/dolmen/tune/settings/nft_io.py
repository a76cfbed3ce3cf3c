"""nft's JSON API driven through the host (``nft -j``), and the one way tables compare.

``nft_run`` sends one batch: nft applies it as one transaction, all of it or nothing.
``nft_list`` reads a table back; ``add_form`` turns a listing into the objects that would
recreate it (no handles, counters zeroed), and ``canonical`` is what two tables are
compared as: sets and chains by name, rules in chain order, elements sorted, and the
elements of *runtime* sets (job slots the scheduler fills) left out.

The JSON API and not Python's ``nftables`` module: Debian's python3-nftables exists for
the system Python only, and ``nft -j`` is the same library behind a stable command line.
"""

from __future__ import annotations

import json
import os
import secrets
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from dolmen.errors import EnvironmentProblem
from dolmen.host import Host, RunStatus

Json = dict[str, Any]
NFT_TIMEOUT = 60.0
# An argv string is capped at 128 KiB (MAX_ARG_STRLEN); larger batches go through a file.
_ARGV_MAX = 96 << 10
_NOT_THERE = "No such file or directory"


class NftError(EnvironmentProblem):
    """nft refused a batch or a listing; a refused batch changed nothing (atomic)."""


class NftMissing(NftError):
    """This host has no ``nft`` (the Debian/Ubuntu package ``nftables``)."""


def nft_missing() -> NftMissing:
    """The one line a host without nft gets."""
    return NftMissing(
        "nft not found: this host has no nftables",
        hint="install it (apt-get install nftables) or run dolmen on a host that has it",
    )


def nft_failed(what: str, stderr: str, failure: str) -> NftError:
    """The one line for an nft command that failed: its first error line, and the fix
    when nft was not allowed to talk to the kernel (not root, no CAP_NET_ADMIN)."""
    line = _first_error(stderr) or failure
    if "Operation not permitted" in stderr:
        return NftError(
            f"{what}: nft was not permitted ({line})",
            hint="run it as root (nftables needs CAP_NET_ADMIN)",
        )
    return NftError(f"{what}: {line}")


def nft_run(host: Host, batch: Mapping[str, Any]) -> None:
    """Run one JSON batch (``{"nftables": [...]}``) as one transaction; NftError if refused."""
    text = json.dumps(batch, separators=(",", ":"))
    if len(text) <= _ARGV_MAX:
        res = host.run(["nft", "-j", text], timeout=NFT_TIMEOUT, key="nft -j")
    else:
        rel = f"tmp/dolmen-nft-{os.getpid()}-{secrets.token_hex(4)}.json"
        host.write(rel, text)
        try:
            res = host.run(["nft", "-j", "-f", "/" + rel], timeout=NFT_TIMEOUT, key="nft -j -f")
        finally:
            host.remove(rel)
    if res.status is RunStatus.MISSING:
        raise nft_missing()
    if not res.ok:
        raise nft_failed("nft refused the batch (nothing changed)", res.stderr, res.failure())


def nft_list(host: Host, family: str, table: str) -> list[Json] | None:
    """A table as ``nft -j list table`` prints it, None when there is none."""
    res = host.run(["nft", "-j", "list", "table", family, table], timeout=NFT_TIMEOUT)
    if res.status is RunStatus.MISSING:
        raise nft_missing()
    if not res.ok:
        if _NOT_THERE in res.stderr:
            return None
        raise nft_failed(f"nft list table {family} {table}", res.stderr, res.failure())
    try:
        items = json.loads(res.stdout)["nftables"]
    except (ValueError, KeyError, TypeError) as e:
        raise NftError(f"nft -j list printed something that is not its JSON: {e}") from None
    return [o for o in items if isinstance(o, dict) and "metainfo" not in o]


def add_form(listing: Iterable[Json]) -> list[Json]:
    """The objects that recreate a listed table: handles dropped, counters zeroed."""
    out = []
    for obj in listing:
        ((kind, body),) = obj.items()
        body = {k: v for k, v in body.items() if k != "handle"}
        if kind == "rule":
            body["expr"] = [
                {"counter": None} if isinstance(e, dict) and "counter" in e else e
                for e in body.get("expr", [])
            ]
        out.append({kind: body})
    return out


def counters(listing: Iterable[Json]) -> list[tuple[str, str, int, int]]:
    """(chain, rule comment, packets, bytes) of every counted rule, in order."""
    out = []
    for obj in listing:
        rule = obj.get("rule")
        if not isinstance(rule, dict):
            continue
        for e in rule.get("expr", []):
            c = e.get("counter") if isinstance(e, dict) else None
            if isinstance(c, dict):
                out.append(
                    (
                        str(rule.get("chain")),
                        str(rule.get("comment", "")),
                        int(c.get("packets", 0)),
                        int(c.get("bytes", 0)),
                    )
                )
    return out


def canonical(objects: Iterable[Json], runtime: Sequence[str] = ()) -> list[Json]:
    """A table as it is compared (module docstring): order and runtime state removed."""
    tables, sets, chains, rules = [], [], [], []
    for obj in add_form(objects):
        ((kind, body),) = obj.items()
        if kind == "set":
            body = dict(body)
            if body.get("name") in runtime or not body.get("elem"):
                body.pop("elem", None)
            else:
                body["elem"] = sorted(body["elem"], key=lambda e: json.dumps(e, sort_keys=True))
            sets.append({kind: body})
        elif kind == "table":
            tables.append(obj)
        elif kind == "chain":
            chains.append(obj)
        else:
            rules.append({kind: body})
    by_name = lambda o: str(next(iter(o.values())).get("name"))  # noqa: E731
    rules.sort(key=lambda o: str(o["rule"].get("chain")))  # stable: chain order kept
    return tables + sorted(sets, key=by_name) + sorted(chains, key=by_name) + rules


def with_live_runtime(
    objects: Iterable[Json], runtime: Sequence[str], live: Sequence[Json] | None
) -> list[Json]:
    """``objects`` with each runtime set holding the elements it has live (the jobs that
    run now keep their entries through a reload or a rollback)."""
    now = {}
    for obj in live or ():
        s = obj.get("set")
        if isinstance(s, dict) and s.get("name") in runtime:
            now[s["name"]] = (s.get("type"), s.get("elem"))
    out = []
    for obj in objects:
        s = obj.get("set")
        if isinstance(s, dict) and s.get("name") in now and now[s["name"]][0] == s.get("type"):
            s = {k: v for k, v in s.items() if k != "elem"}
            if now[s["name"]][1]:
                s["elem"] = now[s["name"]][1]
            obj = {"set": s}
        out.append(obj)
    return out


def replace_table(family: str, table: str, objects: Sequence[Json]) -> Json:
    """One batch that makes ``family table`` exactly ``objects`` (none: no table): the
    table is added first so that deleting it never fails, all in one transaction."""
    ident = {"family": family, "name": table}
    cmds: list[Json] = [{"add": {"table": ident}}, {"delete": {"table": ident}}]
    cmds += [{"add": o} for o in objects]
    return {"nftables": cmds}


def _first_error(stderr: str) -> str:
    lines = [ln.strip() for ln in stderr.splitlines() if "Error" in ln]
    return (lines[0] if lines else stderr.strip().splitlines()[0] if stderr.strip() else "")[:300]

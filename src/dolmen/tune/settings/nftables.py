"""``[nftables]``: one nftables table, whole, as one setting (``dolmen net``'s target).

The key is ``"<family> <table>"`` (``inet dolmen``); the value is the compiled table as
JSON: ``{"objects": [...], "runtime_sets": [...]}`` (dolmen.net.nft builds it). The
engine journals the whole live table before the apply (``capture``), the apply replaces
the table in one nft transaction (atomic: a refused batch changed nothing), and a
rollback puts the saved table back the same way. Runtime sets (job slots) are the
scheduler's: they are not compared, and every replace carries their live elements over,
so a reload never grants an ended job access again nor cuts a running one off.

Not a profile section (``dolmen tune`` profiles cannot name it): ``dolmen net`` builds
its target from a policy.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from dolmen.host import Host
from dolmen.tune.model import ApplyFailed, Change, Reading, Target
from dolmen.tune.settings.base import Entry, Setting
from dolmen.tune.settings.nft_io import (
    NftError,
    NftMissing,
    add_form,
    canonical,
    nft_list,
    nft_run,
    replace_table,
    with_live_runtime,
)


class Nftables(Setting):
    """A whole nftables table (module docstring)."""

    section = "nftables"
    persists = False  # the kernel's ruleset (dolmen net's own journal)
    title = "nftables table"

    def key(self, raw: str) -> str:
        family, _, table = raw.partition(" ")
        if family not in ("inet", "ip", "ip6") or not table or " " in table:
            raise ValueError(f"nftables key {raw!r}: write '<family> <table>' (inet dolmen)")
        return raw

    def validate(self, key: str, value: Any, fields: Mapping[str, Any]) -> str:
        try:
            doc = json.loads(value) if isinstance(value, str) else value
            objects, runtime = doc["objects"], doc.get("runtime_sets", [])
            if not isinstance(objects, list) or not isinstance(runtime, list):
                raise TypeError("objects and runtime_sets must be lists")
        except (ValueError, KeyError, TypeError) as e:
            raise ValueError(f"nftables {key}: not a compiled table ({e})") from None
        return json.dumps({"objects": objects, "runtime_sets": runtime}, sort_keys=True)

    def targets(self, host: Host, entry: Entry) -> list[Target] | str:
        return [
            Target(
                self.section,
                entry.key,
                f"nftables table {entry.key}",
                entry.value,
                origin=entry.origin,
                source=entry.source,
            )
        ]

    def read(self, host: Host, target: Target) -> Reading:
        try:
            live = nft_list(host, *_ident(target))
        except NftMissing as e:
            return Reading(None, skip=e.message)
        if live is None:
            return Reading(None)
        return Reading(json.dumps({"objects": add_form(live)}, sort_keys=True))

    def same(self, current: str, desired: str) -> bool:
        runtime = _runtime(desired)
        return _canon(current, runtime) == _canon(desired, runtime)

    def show(self, value: str | None) -> str:
        if value is None:
            return "(no table)"
        objects = json.loads(value).get("objects", [])
        kinds = [next(iter(o)) for o in objects]
        return (
            f"{kinds.count('set')} sets, {kinds.count('chain')} chains, {kinds.count('rule')} rules"
        )

    def capture(self, host: Host, change: Change) -> dict[str, Any]:
        live = nft_list(host, *_ident(change.target))
        return {"absent": True} if live is None else {"objects": add_form(live)}

    def apply(self, host: Host, change: Change) -> None:
        doc = json.loads(change.target.desired)
        self._replace(host, change.target, doc["objects"], doc.get("runtime_sets", []))

    def revert(self, host: Host, change: Change, saved: Mapping[str, Any]) -> None:
        objects = [] if saved.get("absent") else list(saved.get("objects", []))
        self._replace(host, change.target, objects, _runtime(change.target.desired))

    def _replace(self, host: Host, target: Target, objects: list[Any], runtime: list[str]) -> None:
        family, table = _ident(target)
        try:
            live = nft_list(host, family, table)
            # No objects: the table was absent before, and the batch only deletes it.
            nft_run(host, replace_table(family, table, with_live_runtime(objects, runtime, live)))
        except NftError as e:
            raise ApplyFailed(e.message) from None


def _ident(target: Target) -> tuple[str, str]:
    family, _, table = target.key.partition(" ")
    return family, table


def _runtime(desired: str) -> list[str]:
    return [str(n) for n in json.loads(desired).get("runtime_sets", [])]


def _canon(value: str, runtime: list[str]) -> list[Any]:
    return canonical(json.loads(value).get("objects", []), runtime)

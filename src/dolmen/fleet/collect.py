"""``dolmen fleet collect``: verdicts from files, folders and agents into the store.

A source is a file (one verdict), a folder (its ``*.json`` files, not recursive) or an
agent URL: ``http://host:9405`` reads ``GET /v1/verdict/latest`` (``dolmen serve``), a
URL with a path is read as given; an agent's ``GET /v1/jobs`` is read too, into the
manifest (the dashboard's jobs page), a failure there noted beside a stored verdict. Each
source that fails says so in one line and the
others are still collected: a dead agent, a cut-off file, junk, a node seen twice. Bytes
that are not a verdict are kept under ``rejected/``; a node seen twice is stored twice
(``-2``), the later ``started`` being its latest. The collection's manifest records all
of it.
"""

from __future__ import annotations

import hashlib
import json
import urllib.parse
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from dolmen.errors import InputError
from dolmen.fleet.doc import NotAVerdict, parse_verdict
from dolmen.fleet.store import MAX_VERDICT_BYTES, FleetStore, collection_id
from dolmen.fsutil import read_regular
from dolmen.values.url import split_url

AGENT_PATH = "/v1/verdict/latest"
JOBS_PATH = "/v1/jobs?limit=500"  # the API's largest page
TIMEOUT_S = 10.0


@dataclass
class Item:
    """What became of one input: stored as ``node`` in ``file``, or ``error``."""

    source: str
    node: str | None = None
    file: str | None = None
    error: str | None = None
    started: str | None = None
    sha256: str | None = None  # of the stored bytes: the audit page checks the file still is
    jobs: list[dict[str, Any]] | None = None  # an agent's /v1/jobs rows
    jobs_error: str | None = None  # why they could not be read

    def line(self) -> str:
        """The one line ``collect`` prints for it."""
        if self.error:
            return f"{self.source}: {self.error}"
        return f"{self.source}: {self.node} ({self.started or 'no start time'})"


@dataclass
class Collection:
    """One run of collect: its id and every item; ``notes`` are extra lines (duplicates)."""

    id: str
    items: list[Item] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    actions: list[dict[str, Any]] = field(default_factory=list)
    docs: dict[str, dict[str, Any]] = field(default_factory=dict)  # source -> parsed verdict

    @property
    def stored(self) -> list[Item]:
        """Items that became store files."""
        return [i for i in self.items if i.file]

    @property
    def failed(self) -> list[Item]:
        """Items that did not."""
        return [i for i in self.items if i.error]

    def manifest(self, extra: dict[str, Any] | None = None) -> dict[str, Any]:
        """The manifest body (FleetStore.write_manifest)."""
        return {
            "items": [vars(i) for i in self.items],
            "notes": self.notes,
            "actions": self.actions,
            **(extra or {}),
        }


Fetch = Callable[[str], bytes]


def agent_url(source: str) -> str:
    """``http://h:9405`` -> ``http://h:9405/v1/verdict/latest``; a URL with a path as given."""
    parts = urllib.parse.urlsplit(source)
    if parts.path in ("", "/"):
        return urllib.parse.urlunsplit(parts._replace(path=AGENT_PATH))
    return source


def fetch_url(url: str) -> bytes:
    """GET ``url`` (bounded in time and size); OSError with a one-line reason otherwise."""
    import urllib.error
    import urllib.request  # 0.2 s to import: only when an agent is asked

    req = urllib.request.Request(url, headers={"Accept": "application/json"})
    try:
        with urllib.request.urlopen(req, timeout=TIMEOUT_S) as resp:
            data: bytes = resp.read(MAX_VERDICT_BYTES + 1)
    except urllib.error.HTTPError as e:
        body = e.read(300).decode("utf-8", "replace").strip().replace("\n", " ")
        raise OSError(f"the agent answered HTTP {e.code} {e.reason}: {body[:200]}") from None
    except urllib.error.URLError as e:
        why = getattr(e.reason, "strerror", None) or e.reason
        raise OSError(f"no answer ({why}): is `dolmen serve` running there?") from None
    except TimeoutError:
        raise OSError(f"no answer within {TIMEOUT_S:g} s") from None
    if len(data) > MAX_VERDICT_BYTES:
        raise OSError(f"answer over {MAX_VERDICT_BYTES >> 20} MiB: not a verdict")
    return data


def expand(sources: Sequence[str]) -> list[tuple[str, str | Path | None, str | None]]:
    """Each input as (label, URL or file, None) or (label, None, why it is not one)."""
    out: list[tuple[str, str | Path | None, str | None]] = []
    for src in sources:
        parts = split_url(src)
        if parts is None and "://" in src:
            out.append((src, None, "not a URL (a port from 1 to 65535, brackets closed)"))
            continue
        scheme = parts.scheme if parts is not None else ""
        if scheme in ("http", "https"):
            out.append((src, agent_url(src), None))
            continue
        if "://" in src:
            out.append((src, None, f"unsupported URL scheme {scheme!r} (http or https)"))
            continue
        path = Path(src)
        if path.is_dir():
            files = sorted(p for p in path.glob("*.json") if not p.is_dir())
            if not files:
                out.append((src, None, "a folder without *.json files"))
            out.extend((str(p), p, None) for p in files)
        elif path.exists() or path.is_symlink():
            out.append((src, path, None))
        else:
            out.append((src, None, "no such file, folder or URL"))
    return out


def collect(
    sources: Sequence[str],
    store: FleetStore,
    *,
    fetch: Fetch = fetch_url,
    collection: str | None = None,
) -> Collection:
    """Read every source into a new collection of ``store`` and write its manifest."""
    if not sources:
        raise InputError("no sources", hint="give verdict files, folders or agent URLs")
    run = Collection(collection or collection_id())
    for label, target, why in expand(sources):
        item = Item(label)
        run.items.append(item)
        if why or target is None:
            item.error = why
            continue
        try:
            data = fetch(target) if isinstance(target, str) else _read(target)
        except OSError as e:
            item.error = str(e)
            continue
        add_bytes(run, store, item, data)
        if item.file and isinstance(target, str) and target != label:  # an agent's base URL
            _agent_jobs(item, target.removesuffix(AGENT_PATH) + JOBS_PATH, fetch)
    seen: dict[str, list[str]] = {}
    for i in run.stored:
        seen.setdefault(str(i.node), []).append(i.source)
    for node, where in seen.items():
        if len(where) > 1:
            run.notes.append(
                f"node {node} came {len(where)} times ({', '.join(where)}): every copy is "
                "stored; the latest start time is its verdict"
            )
    store.write_manifest(run.id, run.manifest())
    return run


def add_bytes(
    run: Collection, store: FleetStore, item: Item, data: bytes, node: str | None = None
) -> None:
    """Parse ``data``; store it as the node's verdict (``node``, default the verdict's
    host name), or keep it under rejected/."""
    try:
        doc = parse_verdict(data)
    except NotAVerdict as e:
        kept = store.reject(run.id, len(run.items), data)
        item.error = f"not a verdict: {e} (kept as {kept.name})"
        return
    run.docs[item.source] = doc
    item.node, item.started = node or doc["host"], str(doc.get("started") or "") or None
    item.sha256 = hashlib.sha256(data).hexdigest()
    item.file = str(store.add(run.id, item.node, data).relative_to(store.root))


def _agent_jobs(item: Item, url: str, fetch: Fetch) -> None:
    """The agent's jobs (``dolmen serve``'s ``/v1/jobs`` page) onto the item, or why not:
    the verdict is stored either way."""
    try:
        doc = json.loads(fetch(url))
        rows = doc["items"]
        if not isinstance(rows, list):
            raise TypeError("items is not a list")
    except OSError as e:
        item.jobs_error = f"{url}: {e}"
    except (ValueError, KeyError, TypeError) as e:
        item.jobs_error = f"{url}: not a page of jobs ({e.__class__.__name__}: {e})"
    else:
        item.jobs = [r for r in rows if isinstance(r, dict)]


def _read(path: Path) -> bytes:
    try:
        return read_regular(path, MAX_VERDICT_BYTES)
    except OSError as e:
        raise OSError(f"unreadable ({e.strerror or e})") from None

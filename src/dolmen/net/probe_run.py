"""The I/O of ``net prove``: listeners in every target, probers in every source.

Each endpoint's commands run through its ``enter`` prefix (``ip netns exec NS`` in the
tests, ``ssh NODE`` on a cluster), so this module never knows how a node is reached.
The listeners are long-lived processes (``host.process.spawn``, their output to a log
file this run owns, killed with the kernel's parent-death signal if ``prove`` dies, and
bounded by ``--max-seconds`` where that signal cannot reach: over ssh); the probers are
commands that answer and exit (``Host.run``), one per source, all sources at once.
"""

from __future__ import annotations

import json
import os
import signal
import sys
import tempfile
import time
from collections.abc import Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path

from dolmen.host import Host
from dolmen.host.process import Child, SpawnError, spawn
from dolmen.net.prove import (
    Endpoint,
    Expect,
    Listener,
    Observation,
    Probe,
    judge,
    plan_probes,
    sample_ports,
)

AGENT = ("-m", "dolmen.net.agent")


@dataclass(frozen=True)
class RunOptions:
    """How long things may take. ``timeout``: one probe (all of a source's run at once);
    ``ready_within``: a listener's start (a Python start on a busy node, through ssh);
    ``python``: the interpreter that has dolmen where the agents run."""

    timeout: float = 1.0
    ready_within: float = 20.0
    python: str = sys.executable


@dataclass(frozen=True)
class RunResult:
    """What the probes returned (probe id -> the agent's result), what each listener
    said, why a source's prober gave nothing, and how long the whole run took."""

    results: Mapping[str, Mapping[str, object]]
    listeners: Mapping[str, Listener]
    missing: Mapping[str, str]
    seconds: float


def run_probes(
    probes: Sequence[Probe], endpoints: Sequence[Endpoint], host: Host, opts: RunOptions
) -> RunResult:
    """Start the listeners, run every source's probes at once, stop the listeners."""
    started = time.monotonic()
    by_name = {e.name: e for e in endpoints}
    wanted: dict[str, dict[str, set[int]]] = {}
    for p in probes:
        wanted.setdefault(p.target, {"tcp": set(), "udp": set()})[p.proto].add(p.port)
    with tempfile.TemporaryDirectory(prefix="dolmen-prove-") as tmp:
        children: dict[str, tuple[Child | None, Path, str]] = {}
        try:
            for i, (name, ports) in enumerate(sorted(wanted.items())):
                log = Path(tmp) / f"listen-{i}.log"
                children[name] = _listen(by_name[name], ports, log, opts)
            ready = _wait_ready(children, opts.ready_within)
            by_source: dict[str, list[Probe]] = {}
            for p in probes:
                by_source.setdefault(p.source, []).append(p)
            results: dict[str, Mapping[str, object]] = {}
            missing: dict[str, str] = {}
            with ThreadPoolExecutor(max_workers=max(len(by_source), 1)) as pool:
                futures = {
                    src: pool.submit(_probe, by_name[src], ps, by_name, host, opts)
                    for src, ps in by_source.items()
                }
                for src, fut in futures.items():
                    got, why = fut.result()
                    results.update(got)
                    if why:
                        missing[src] = why
            alive = {n: c is not None and c.poll() is None for n, (c, _, _) in children.items()}
        finally:
            _stop([child for child, _, _ in children.values()])
        listeners = {
            n: _listener(n, log, ready.get(n, False), alive.get(n, False), problem)
            for n, (_, log, problem) in children.items()
        }
    return RunResult(results, listeners, missing, time.monotonic() - started)


def _listen(
    ep: Endpoint, ports: Mapping[str, set[int]], log: Path, opts: RunOptions
) -> tuple[Child | None, Path, str]:
    budget = opts.ready_within + 4 * opts.timeout + 60.0  # outlives the run, never for ever
    argv = [
        *ep.enter,
        opts.python,
        *AGENT,
        "listen",
        "--name",
        ep.name,
        "--tcp",
        ",".join(map(str, sorted(ports["tcp"]))),
        "--udp",
        ",".join(map(str, sorted(ports["udp"]))),
        "--max-seconds",
        f"{budget:g}",
        "--bind",  # its own address only: two endpoints may share a namespace (127.0.0.x)
        str(ep.address),
    ]
    try:
        return spawn(argv, env=dict(os.environ), log=log), log, ""
    except SpawnError as e:
        log.touch()
        return None, log, f"could not start the listener: {e.strerror or e}"


def _wait_ready(
    children: Mapping[str, tuple[Child | None, Path, str]], within: float
) -> dict[str, bool]:
    """Wait until every listener printed its ready line, ended, or ``within`` passed."""
    deadline = time.monotonic() + within
    ready: dict[str, bool] = {}
    while True:
        for name, (child, log, _) in children.items():
            if name not in ready and _lines(log, "ready"):
                ready[name] = True
            elif name not in ready and (child is None or child.poll() is not None):
                ready[name] = False
        if len(ready) == len(children) or time.monotonic() >= deadline:
            return ready
        time.sleep(0.02)


def _probe(
    src: Endpoint,
    probes: Sequence[Probe],
    by_name: Mapping[str, Endpoint],
    host: Host,
    opts: RunOptions,
) -> tuple[dict[str, Mapping[str, object]], str]:
    argv = [*src.enter, opts.python, *AGENT, "probe", "--name", src.name]
    argv += ["--timeout", f"{opts.timeout:g}"]
    for p in probes:
        argv += ["--probe", f"{p.id},{p.proto},{by_name[p.target].address},{p.port}"]
    res = host.run(argv, timeout=opts.ready_within + 2 * opts.timeout + 5.0, key="net-prove")
    if not res.ok:  # not res.failure(): the argv holds every probe
        last = (res.stderr.strip().splitlines() or [res.reason or res.status.value])[-1]
        return {}, f"the prober in {src.name} failed ({res.status.value}): {last[:200]}"
    for line in reversed(res.stdout.splitlines()):
        try:
            doc = json.loads(line)
        except ValueError:
            continue
        if isinstance(doc, dict) and isinstance(doc.get("results"), dict):
            got: dict[str, Mapping[str, object]] = {
                str(k): v for k, v in doc["results"].items() if isinstance(v, dict)
            }
            return got, ""
    return {}, f"the prober in {src.name} printed no results"


def _stop(children: Sequence[Child | None]) -> None:
    """SIGTERM to every listener at once (each then tells what it still has), SIGKILL
    to one still there after 3 s."""
    live = [c for c in children if c is not None]
    for child in live:
        child.signal(signal.SIGTERM)
    deadline = time.monotonic() + 3.0
    for child in live:
        if child.wait(max(deadline - time.monotonic(), 0.0)) is None:
            child.signal(signal.SIGKILL)
            child.wait(2.0)


def _lines(log: Path, key: str) -> list[dict[str, object]]:
    try:
        text = log.read_text(errors="replace")
    except OSError:
        return []
    found = []
    for line in text.splitlines():
        try:
            doc = json.loads(line)
        except ValueError:
            continue
        if isinstance(doc, dict) and key in doc:
            found.append(doc)
    return found


def _listener(name: str, log: Path, ready: bool, alive: bool, problem: str) -> Listener:
    head = _lines(log, "ready")
    bound: set[tuple[str, int]] = set()
    failed: dict[str, str] = {}
    if head:
        raw = head[0].get("bound")
        if isinstance(raw, dict):
            for proto, ports in raw.items():
                bound.update((str(proto), int(p)) for p in ports if isinstance(p, int))
        raw_failed = head[0].get("failed")
        if isinstance(raw_failed, dict):
            failed = {str(k): str(v) for k, v in raw_failed.items()}
    seen: dict[str, str] = {}
    for doc in _lines(log, "seen"):
        rec = doc["seen"]
        if isinstance(rec, dict) and rec.get("nonce"):
            seen[str(rec["nonce"])] = str(rec.get("peer", ""))
    if not problem and not ready:
        tail = log.read_text(errors="replace").strip().splitlines()[-1:] if log.exists() else []
        problem = f"never became ready: {tail[0][:200] if tail else 'no output'}"
    elif not problem and not alive:
        problem = "it ended before the probes did"
    return Listener(name, ready, frozenset(bound), failed, alive and ready, seen, problem)


@dataclass(frozen=True)
class Proof:
    """A whole ``net prove`` run: the observations, the listeners, the ports probed."""

    observations: Sequence[Observation]
    run: RunResult
    ports: tuple[int, ...]
    sample: tuple[int, ...]


def prove_matrix(
    endpoints: Sequence[Endpoint],
    expect: Expect,
    policy_ports: Sequence[int],
    host: Host,
    *,
    sample: int = 8,
    seed: int = 0,
    opts: RunOptions | None = None,
) -> Proof:
    """Plan, run and judge the full matrix (prove.py's module docstring)."""
    others = sample_ports(policy_ports, sample, seed)
    ports = tuple(sorted(set(policy_ports))) + others
    probes = plan_probes(endpoints, ports, expect)
    run = run_probes(probes, endpoints, host, opts or RunOptions())
    observations = judge(probes, run.results, run.listeners, run.missing)
    return Proof(observations, run, tuple(sorted(set(policy_ports))), others)

"""``dolmen net prove``: the policy checked by active probes, not assumed from the rules.

Plan, then run, then judge, each its own step:

- ``plan_probes`` (pure): every ordered pair of distinct endpoints (so both directions),
  TCP and UDP, on the policy's ports and on a sample of other ports; each probe carries
  what the policy expects (allow or deny) and why (the rule, or the default deny).
- ``dolmen.net.probe_run.run_probes`` (the I/O): a listener in every target, all the
  probes of one source at once in that source, each bounded in time (agent.py).
- ``judge`` (pure): the prober's outcome and the listener's own record of what reached
  it (the second witness, which tells a dropped datagram from a lost reply) make one
  observation per probe: reached, not reached, or unknown (the listener could not hold
  the port, or died, or the prober gave no answer: absence of an answer is not evidence
  of a block). Then: a denied probe that reached is a ``leak``, an allowed probe that did
  not is a ``block``.
"""

from __future__ import annotations

import random
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from ipaddress import IPv4Address, IPv6Address, ip_address

PROTOS = ("tcp", "udp")
# Ports a probe samples besides the policy's: services an isolation policy must not open
# by accident (ssh, http, https, NFS, slurmctld/slurmd, the kubelet, a common dev port).
WELL_KNOWN = (22, 80, 443, 2049, 6817, 6818, 10250, 8080)
VERDICTS = ("ok", "leak", "block", "unknown")

# (source, target, proto, port) -> (allowed, why)
Expect = Callable[[str, str, str, int], tuple[bool, str]]


@dataclass(frozen=True)
class Endpoint:
    """A node to probe from and to: its name as the policy knows it, the address probes
    go to, and the argv prefix that runs a command there (``ip netns exec NS``, ``ssh
    NODE``; empty for this machine)."""

    name: str
    address: IPv4Address | IPv6Address
    enter: tuple[str, ...] = ()

    @classmethod
    def parse(cls, name: str, address: str, enter: Sequence[str] = ()) -> Endpoint:
        """An endpoint from text; ValueError names a malformed address."""
        return cls(name, ip_address(address), tuple(enter))


@dataclass(frozen=True)
class Probe:
    """One connection attempt the plan asks for, with the policy's expectation."""

    id: str
    source: str
    target: str
    proto: str
    port: int
    allowed: bool
    why: str


@dataclass(frozen=True)
class Listener:
    """What a target's listener said: the ports it holds, those it could not bind (with
    the reason), whether it was still alive when the probes ended, and what reached it
    (nonce -> peer address)."""

    name: str
    ready: bool
    bound: frozenset[tuple[str, int]] = frozenset()
    failed: Mapping[str, str] = field(default_factory=dict)
    alive: bool = False
    seen: Mapping[str, str] = field(default_factory=dict)
    problem: str = ""


@dataclass(frozen=True)
class Observation:
    """A probe, what happened to it, and the verdict."""

    probe: Probe
    outcome: str  # agent.py's outcome, or one-way / dropped (UDP) / unknown
    reached: bool | None  # None: cannot tell
    witnessed: bool  # the target's listener saw this probe
    detail: str
    ms: float
    verdict: str


def sample_ports(policy_ports: Iterable[int], count: int, seed: int) -> tuple[int, ...]:
    """The other ports to probe: the well-known ones the policy does not name, then
    ``count`` random unprivileged ports (``seed`` makes a run repeatable)."""
    taken = set(policy_ports)
    ports = [p for p in WELL_KNOWN if p not in taken]
    want = len(ports) + count
    rng = random.Random(seed)
    while len(ports) < want and len(taken) + len(ports) < 64511:
        p = rng.randint(1024, 65535)
        if p not in taken and p not in ports:
            ports.append(p)
    return tuple(ports)


def plan_probes(endpoints: Sequence[Endpoint], ports: Sequence[int], expect: Expect) -> list[Probe]:
    """Every ordered pair of distinct endpoints x TCP and UDP x ``ports``."""
    probes: list[Probe] = []
    for src in endpoints:
        for dst in endpoints:
            if src.name == dst.name:
                continue
            for proto in PROTOS:
                for port in ports:
                    allowed, why = expect(src.name, dst.name, proto, port)
                    pid = f"p{len(probes)}"
                    probes.append(Probe(pid, src.name, dst.name, proto, port, allowed, why))
    return probes


def judge(
    probes: Sequence[Probe],
    results: Mapping[str, Mapping[str, object]],
    listeners: Mapping[str, Listener],
    missing: Mapping[str, str] | None = None,
) -> list[Observation]:
    """One observation per probe (module docstring). ``results``: probe id -> the
    agent's result; ``missing``: source -> why its prober gave no results."""
    out = []
    for probe in probes:
        res = results.get(probe.id)
        lis = listeners.get(probe.target) or Listener(probe.target, False, problem="no listener")
        if res is None:
            why = (missing or {}).get(probe.source) or "the prober gave no result for it"
            out.append(_observe(probe, "unknown", None, False, why, 0.0))
            continue
        outcome, reached, detail = _reach(probe, res, lis)
        ms = res.get("ms")
        witnessed = probe.id in lis.seen
        took = float(ms) if isinstance(ms, (int, float)) else 0.0
        out.append(_observe(probe, outcome, reached, witnessed, detail, took))
    return out


def _reach(probe: Probe, res: Mapping[str, object], lis: Listener) -> tuple[str, bool | None, str]:
    outcome = str(res.get("outcome", "error"))
    detail = str(res.get("detail", ""))
    seen = probe.id in lis.seen
    held = lis.ready and lis.alive and (probe.proto, probe.port) in lis.bound
    if outcome == "open":
        echo = str(res.get("echo_from", ""))
        if echo != probe.target:
            return outcome, True, f"answered by {echo!r}, not {probe.target!r}"
        return outcome, True, detail
    if outcome == "no-echo":
        return outcome, True, detail
    if seen:  # the listener got it, the source heard nothing back: the way in is open
        return "one-way", True, f"{detail}; the listener saw it (the reply was lost)"
    if not held:
        return "unknown", None, f"{outcome}, but the listener did not hold it: {_why(lis, probe)}"
    if outcome == "silent":
        return "dropped", False, f"{detail}; the listener never saw it"
    if outcome in ("refused", "unreachable"):
        return outcome, False, f"{detail}: a reject rule (our listener holds the port)"
    return "unknown", None, detail or "the probe failed"


def _why(lis: Listener, probe: Probe) -> str:
    if not lis.ready:
        return lis.problem or "it never became ready"
    failed = lis.failed.get(f"{probe.proto}/{probe.port}")
    if failed:
        return f"could not bind {probe.proto}/{probe.port}: {failed}"
    if not lis.alive:
        return lis.problem or "it died before the probes ended"
    return "not asked to"


def _observe(
    probe: Probe, outcome: str, reached: bool | None, witnessed: bool, detail: str, ms: float
) -> Observation:
    if reached is None:
        verdict = "unknown"
    elif reached and not probe.allowed:
        verdict = "leak"
    elif not reached and probe.allowed:
        verdict = "block"
    else:
        verdict = "ok"
    return Observation(probe, outcome, reached, witnessed, detail, ms, verdict)


def counts(observations: Iterable[Observation]) -> dict[str, int]:
    """How many probes got each verdict, plus the total."""
    tally = dict.fromkeys(VERDICTS, 0)
    total = 0
    for obs in observations:
        tally[obs.verdict] += 1
        total += 1
    return {"probes": total, **tally}

"""The pure steps of ``net prove``: the plan, the sample, and the judge's table of cases."""

from __future__ import annotations

from ipaddress import ip_address

import pytest

from dolmen.net.prove import (
    WELL_KNOWN,
    Endpoint,
    Listener,
    Probe,
    counts,
    judge,
    plan_probes,
    sample_ports,
)

EPS = [Endpoint("a", ip_address("10.0.0.1")), Endpoint("b", ip_address("10.0.0.2"))]


def test_plan_is_every_ordered_pair_both_protocols_every_port() -> None:
    eps = [*EPS, Endpoint("c", ip_address("10.0.0.3"))]
    probes = plan_probes(eps, (22, 29500), lambda s, d, p, port: (port == 29500, "rule"))
    assert len(probes) == 3 * 2 * 2 * 2
    pairs = {(p.source, p.target) for p in probes}
    assert pairs == {(s, d) for s in "abc" for d in "abc" if s != d}  # both directions
    assert len({p.id for p in probes}) == len(probes)
    assert all(p.allowed == (p.port == 29500) for p in probes)


def test_sample_leaves_out_policy_ports_and_repeats_with_its_seed() -> None:
    one = sample_ports([22, 29500], 10, seed=7)
    assert 22 not in one and 29500 not in one
    assert len(one) == len(WELL_KNOWN) - 1 + 10 and len(set(one)) == len(one)
    assert one == sample_ports([22, 29500], 10, seed=7)
    assert one != sample_ports([22, 29500], 10, seed=8)
    assert all(1024 <= p <= 65535 for p in one[len(WELL_KNOWN) - 1 :])


def _probe(proto: str = "udp", allowed: bool = False) -> Probe:
    return Probe("p0", "a", "b", proto, 29500, allowed, "default deny" if not allowed else "job")


HELD = Listener("b", True, frozenset({("udp", 29500), ("tcp", 29500)}), {}, True, {})
SAW = Listener("b", True, frozenset({("udp", 29500), ("tcp", 29500)}), {}, True, {"p0": "10.0.0.1"})
NOT_BOUND = Listener("b", True, frozenset(), {"udp/29500": "Address in use"}, True, {})
DEAD = Listener("b", True, frozenset({("udp", 29500)}), {}, False, {}, "it ended early")
NEVER = Listener("b", False, problem="never became ready: ip: permission denied")


def res(outcome: str, echo: str = "") -> dict[str, object]:
    return {"outcome": outcome, "detail": outcome, "echo_from": echo, "ms": 3.0}


# (proto, allowed, agent result, listener) -> (outcome, reached, verdict)
CASES = [
    ("udp", False, res("open", "b"), SAW, ("open", True, "leak")),
    ("udp", True, res("open", "b"), SAW, ("open", True, "ok")),
    ("udp", False, res("silent"), HELD, ("dropped", False, "ok")),
    ("udp", True, res("silent"), HELD, ("dropped", False, "block")),
    # the reply was lost but the request went through: still a leak
    ("udp", False, res("silent"), SAW, ("one-way", True, "leak")),
    ("udp", False, res("refused"), HELD, ("refused", False, "ok")),
    ("tcp", False, res("unreachable"), HELD, ("unreachable", False, "ok")),
    ("tcp", False, res("no-echo"), HELD, ("no-echo", True, "leak")),
    # answered by someone else on that address: reached, whoever it was
    ("tcp", False, res("open", "c"), HELD, ("open", True, "leak")),
    # silence means nothing when our listener did not hold the port, or died, or never ran
    ("udp", False, res("silent"), NOT_BOUND, ("unknown", None, "unknown")),
    ("udp", True, res("silent"), DEAD, ("unknown", None, "unknown")),
    ("udp", False, res("refused"), NEVER, ("unknown", None, "unknown")),
    ("tcp", False, res("error"), HELD, ("unknown", None, "unknown")),
    ("tcp", False, {"junk": 1}, HELD, ("unknown", None, "unknown")),
]


@pytest.mark.parametrize(("proto", "allowed", "result", "listener", "want"), CASES)
def test_judge(
    proto: str,
    allowed: bool,
    result: dict[str, object],
    listener: Listener,
    want: tuple[str, bool | None, str],
) -> None:
    probe = _probe(proto, allowed)
    [obs] = judge([probe], {"p0": result}, {"b": listener})
    assert (obs.outcome, obs.reached, obs.verdict) == want, obs.detail


def test_a_probe_without_a_result_is_unknown_with_the_reason() -> None:
    [obs] = judge([_probe()], {}, {"b": HELD}, {"a": "the prober in a failed: timeout"})
    assert obs.verdict == "unknown" and "timeout" in obs.detail
    [obs] = judge([_probe()], {"p0": res("silent")}, {})
    assert obs.verdict == "unknown" and "no listener" in obs.detail


def test_counts() -> None:
    obs = judge(
        [_probe(), Probe("p1", "a", "b", "udp", 29500, True, "job")],
        {"p0": res("open", "b"), "p1": res("open", "b")},
        {"b": SAW},
    )
    assert counts(obs) == {"probes": 2, "ok": 1, "leak": 1, "block": 0, "unknown": 0}


def test_the_report_matches_its_schema_and_says_the_count() -> None:
    from jsonschema import Draft202012Validator

    from dolmen.errors import ExitCode
    from dolmen.net.prove_report import exit_code, render_text, to_json
    from dolmen.report import schemas

    cases = [(i, c) for i, c in enumerate(CASES)]
    probes = [Probe(f"p{i}", "a", "b", c[0], 29500 + i, c[1], "why") for i, c in cases]
    results = {f"p{i}": c[2] for i, c in cases}
    lis = Listener(
        "b",
        True,
        frozenset((c[0], 29500 + i) for i, c in cases),
        {},
        True,
        {f"p{i}": "10.0.0.1" for i, c in cases if c[3] is SAW},
    )
    obs = judge(probes, results, {"b": lis})
    doc = to_json(
        obs,
        EPS,
        {"b": lis},
        policy="p.toml",
        ports=[29500],
        sample=[80],
        seed=0,
        timeout_s=1.0,
        seconds=1.5,
    )
    Draft202012Validator(schemas.load("net.prove")).validate(doc)
    assert doc["counts"]["probes"] == len(CASES)
    text = render_text(obs, 1.5)
    assert text.splitlines()[-1].startswith(f"{len(CASES)} probes in 1.5 s:")
    assert "LEAK (connected, the policy denies it)" in text
    assert exit_code(obs) is ExitCode.UNHEALTHY
    clean = [o for o in obs if o.verdict == "ok"]
    assert exit_code(clean) is ExitCode.OK
    assert exit_code([o for o in obs if o.verdict in ("ok", "unknown")]) is ExitCode.UNDECIDED
    assert exit_code([]) is ExitCode.UNDECIDED  # no probe proves nothing
    assert render_text(clean, 0.2).endswith("0 leaks, 0 blocks, 0 unknown\n")

"""``dolmen validate --level quick`` answered by the warm agent: the same stdout and exit
code as a cold run, the verdict's age on stderr, and a cold run whenever the agent cannot
answer for exactly that invocation."""

from __future__ import annotations

import json
import socket
import time
from pathlib import Path
from typing import Any

import pytest

from dolmen.serve.answer import parse_request
from dolmen.serve.client import ask, decode, encode, request_for, socket_path
from dolmen.serve.unixsock import frame
from tests.serve.conftest import dolmen

AGE_LINE = "answered by the local agent"


def _quick(home: Path, tree: Path, *flags: str, **env: str) -> Any:
    return dolmen(home, "validate", "--level", "quick", "--from", str(tree), *flags, **env)


@pytest.mark.parametrize(
    "flags", [("--npd",), ("--json",), (), ("-v",)], ids=["npd", "json", "text", "verbose"]
)
def test_warm_answer_is_the_cold_output(
    serve: Any, home: Path, xid79: Path, flags: tuple[str, ...]
) -> None:
    s = serve("--from", str(xid79), "--interval", "1h")
    s.wait()
    warm = _quick(home, xid79, *flags)
    cold = _quick(home, xid79, *flags, DOLMEN_AGENT="off")
    assert warm.returncode == cold.returncode == 1
    assert AGE_LINE in warm.stderr and AGE_LINE not in cold.stderr
    if flags == ("--json",):  # one run's clock differs from the other's, nothing else
        a, b = json.loads(warm.stdout), json.loads(cold.stdout)
        assert {k: v for k, v in a.items() if k not in ("started", "duration_s")} == {
            k: v for k, v in b.items() if k not in ("started", "duration_s")
        }
    elif flags == ("--npd",):
        assert warm.stdout == cold.stdout and warm.stdout.startswith("dolmen: unhealthy")
    else:  # the text report prints the run's duration in its header
        strip = lambda t: [ln for ln in t.splitlines() if " s)" not in ln and "took" not in ln]  # noqa: E731
        assert strip(warm.stdout) == strip(cold.stdout)


def test_healthy_host_exits_0_through_the_agent(serve: Any, home: Path, healthy: Path) -> None:
    s = serve("--from", str(healthy), "--interval", "1h")
    s.wait()
    warm = _quick(home, healthy, "--npd")
    cold = _quick(home, healthy, "--npd", DOLMEN_AGENT="off")
    assert (warm.returncode, warm.stdout) == (cold.returncode, cold.stdout)
    assert warm.returncode in (0, 2) and AGE_LINE in warm.stderr


def test_the_agent_refuses_what_it_cannot_answer_and_validate_runs_cold(
    serve: Any, home: Path, xid79: Path, healthy: Path
) -> None:
    s = serve("--from", str(xid79), "--interval", "1h")
    s.wait()
    # another host than the agent's: cold, the healthy tree's verdict
    other = _quick(home, healthy, "--npd")
    assert AGE_LINE not in other.stderr and not other.stdout.startswith("dolmen: unhealthy")
    # a verdict older than the caller accepts: cold
    time.sleep(1.2)
    stale = _quick(home, xid79, "--npd", DOLMEN_AGENT_MAX_AGE="1s")
    assert stale.returncode == 1 and AGE_LINE not in stale.stderr
    # file outputs and filters are the cold run's (the agent does not write files)
    prom = home / "q.prom"
    filed = _quick(home, xid79, "--npd", "--prometheus", str(prom))
    assert AGE_LINE not in filed.stderr and prom.is_file()
    # a bad --timeout: the cold run's usage error, exit 2
    bad = _quick(home, xid79, "--npd", "--timeout", "soon")
    assert bad.returncode == 2 and "--timeout" in bad.stderr


def test_no_agent_means_a_cold_run(home: Path, xid79: Path) -> None:
    assert not Path(socket_path(str(home / "state"))).exists()
    r = _quick(home, xid79, "--npd")
    assert r.returncode == 1 and AGE_LINE not in r.stderr


def test_a_dead_agents_socket_file_means_a_cold_run(home: Path, xid79: Path) -> None:
    path = Path(socket_path(str(home / "state")))
    path.parent.mkdir(parents=True)
    with socket.socket(socket.AF_UNIX) as s:
        s.bind(str(path))  # bound, never listening: connect is refused
    r = _quick(home, xid79, "--npd")
    assert r.returncode == 1 and AGE_LINE not in r.stderr


def test_junk_on_the_socket_is_refused_and_the_agent_goes_on(
    serve: Any, home: Path, xid79: Path
) -> None:
    s = serve("--from", str(xid79), "--interval", "1h")
    s.wait()
    path = socket_path(str(home / "state"))
    for junk in (b"not json\n", b"[1,2]\n", b'{"mode": "html"}\n', b"x" * 70000 + b"\n", b""):
        with socket.socket(socket.AF_UNIX) as c:
            c.settimeout(5)
            c.connect(path)
            c.sendall(junk)
            c.shutdown(socket.SHUT_WR)
            answer = c.recv(1 << 20)
            assert answer.startswith(b"refused bad request"), (junk[:20], answer)
    assert ask({"mode": "npd", "source": str(xid79)}, path)["rc"] == 1


REQUESTS = [
    ({"mode": "npd"}, None),
    ({"mode": "json", "source": "/x", "slurm": True}, None),
    ({"mode": "text", "timeout": "30s", "max_age": "2m"}, None),
    ([], "a request is a JSON object"),
    ({"mode": "html"}, "mode must be"),
    ({"mode": "npd", "source": 3}, "source must be"),
    ({"mode": "npd", "timeout": "soon"}, "timeout"),
    ({"mode": "npd", "max_age": 5}, "max_age must be a duration text"),
    ({"mode": "npd", "max_age": "-1s"}, "max_age"),
]


@pytest.mark.parametrize(("doc", "error"), REQUESTS)
def test_parse_request(doc: Any, error: str | None) -> None:
    if error is None:
        assert parse_request(doc).mode == doc["mode"]
    else:
        with pytest.raises(ValueError, match=error):
            parse_request(doc)


def _args(**kw: Any) -> dict[str, Any]:
    base: dict[str, Any] = {
        "level": "quick", "source": None, "config_path": None, "baseline_path": None,
        "only": (), "as_json": False, "junit_path": None, "prom_path": None, "npd": True,
        "slurm": False, "timeout": None, "verbose": False, "list_checks": False,
        "matrix": False, "statuses": None, "gpu": None, "device": None, "force": False,
    }  # fmt: skip
    return base | kw


@pytest.mark.parametrize(
    ("kw", "asks"),
    [
        ({}, True),
        ({"slurm": True, "npd": False}, True),
        ({"level": "standard"}, False),
        ({"only": ("gpu",)}, False),
        ({"config_path": "/etc/x.toml"}, False),
        ({"junit_path": "j.xml"}, False),
        ({"matrix": True, "npd": False}, False),
        ({"npd": True, "slurm": True}, False),
        ({"npd": True, "as_json": True}, False),
    ],
)
def test_which_invocations_ask_the_agent(
    kw: dict[str, Any], asks: bool, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("DOLMEN_AGENT", raising=False)
    assert (request_for(_args(**kw)) is not None) is asks
    monkeypatch.setenv("DOLMEN_AGENT", "off")
    assert request_for(_args(**kw)) is None


@pytest.mark.parametrize(
    "data",
    [
        b"", b"ok", b"ok 1 2 3 4", b"ok 1 0.5 3 0\nab", b"ok 1 0.5 1 0\nab", b"ok x 0.5 0 0\n",
        b"ok 1 nan-ish 0 0\n", b"ok -1 0 0 0\n", b"ok 300 0 0 0\n", b"ok 1 0 -1 1\n",
        b"refused no verdict yet\n", b"OK 1 0 0 0\n", b"ok 1 0 2 0\n\xff\xfe", b"\x00" * 50,
    ],
)  # fmt: skip
def test_decode_refuses_cut_junk_and_hostile_answers(data: bytes) -> None:
    assert decode(data) is None


def test_frame_and_decode_round_trip() -> None:
    answer = {"rc": 2, "stdout": "dolmen: undecided: ü\n", "stderr": "x\ny\n", "age_s": 1.5}
    assert decode(frame(answer)) == answer
    assert decode(frame({"refused": "stale"})) is None


@pytest.mark.parametrize(
    "value", ["/plain/path", 'quo"te', "back\\slash", "new\nline", "\x00\x1f\x7f", "ünï", ""]
)
def test_encode_is_json(value: str) -> None:
    doc = {"mode": "npd", "source": value, "slurm": True, "verbose": False, "timeout": None}
    assert json.loads(encode(doc)) == doc

"""The real ``dolmen serve`` over HTTP: health, readiness, /metrics, the paged read API,
and a history that survives a restart."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from prometheus_client.parser import text_string_to_metric_families

from tests.serve.conftest import dolmen

STABLE = ("started", "duration_s")  # what two runs of one tree differ in


def same_verdict(a: dict[str, Any], b: dict[str, Any]) -> bool:
    return {k: v for k, v in a.items() if k not in STABLE} == {
        k: v for k, v in b.items() if k not in STABLE
    }


def test_health_metrics_and_the_latest_verdict_verbatim(
    serve: Any, home: Path, xid79: Path
) -> None:
    s = serve("--from", str(xid79), "--interval", "1h")
    assert s.wait("/healthz").json() == {"status": "alive"}
    ready = s.wait("/readyz").json()
    assert ready["status"] == "ready" and ready["verdict_age_s"] >= 0

    latest = s.client.get("/v1/verdict/latest")
    assert latest.status_code == 200 and latest.headers["content-type"] == "application/json"
    cold = dolmen(
        home, "validate", "--level", "quick", "--from", str(xid79), "--json", DOLMEN_AGENT="off"
    )
    assert cold.returncode == 1
    assert same_verdict(latest.json(), json.loads(cold.stdout))
    assert latest.text.count("\n") == cold.stdout.count("\n")  # render_json's lines, verbatim

    text = s.client.get("/metrics")
    assert text.headers["content-type"].startswith("text/plain; version=0.0.4")
    families = {f.name: f for f in text_string_to_metric_families(text.text)}
    for name in ("dolmen_build_info", "dolmen_health", "dolmen_check_status", "dolmen_agent_up",
                 "dolmen_agent_runs", "dolmen_agent_verdict_age_seconds"):  # fmt: skip
        assert name in families, name
    assert families["dolmen_health"].samples[0].value == 2  # unhealthy
    assert families["dolmen_agent_runs"].samples[0].value >= 1
    lost = [
        smp.labels
        for smp in families["dolmen_check_status"].samples
        if smp.labels["check"] == "gpu.fell_off_bus" and smp.labels["status"] == "fail"
    ]
    assert lost and lost[0]["pci_bus_id"] == "00000000:86:00.0" and lost[0]["gpu"] == "3"
    assert lost[0]["Hostname"]  # dcgm-exporter's join label


def test_pages_of_history_and_findings(serve: Any, xid79: Path) -> None:
    s = serve("--from", str(xid79), "--interval", "1s")
    s.wait()
    deadline_runs = 3
    for _ in range(200):
        if s.client.get("/v1/agent").json()["runs_total"] >= deadline_runs:
            break
        import time

        time.sleep(0.1)
    first = s.client.get("/v1/verdicts", params={"limit": 2}).json()
    assert len(first["items"]) == 2 and first["next"] is not None
    ids = [r["id"] for r in first["items"]]
    assert ids == sorted(ids, reverse=True)
    more = s.client.get("/v1/verdicts", params={"limit": 2, "before": first["next"]}).json()
    assert more["items"] and more["items"][0]["id"] < ids[-1]
    one = s.client.get(f"/v1/verdicts/{ids[-1]}")
    assert one.status_code == 200 and one.json()["status"] == "unhealthy"

    fails = s.client.get("/v1/findings", params={"status": "fail", "limit": 1}).json()
    assert fails["items"][0]["status"] == "fail" and fails["next"] == "1"
    rest = s.client.get("/v1/findings", params={"status": "fail", "after": "1"}).json()
    assert all(f["status"] == "fail" for f in rest["items"])
    assert (
        len(rest["items"]) + 1
        == json.loads(s.client.get("/v1/verdict/latest").text)["counts"]["fail"]
    )


def test_bad_queries_are_400_and_absences_404_naming_why(serve: Any, xid79: Path) -> None:
    s = serve("--from", str(xid79), "--interval", "1h")
    s.wait()
    for path, params in (
        ("/v1/verdicts", {"limit": "0"}),
        ("/v1/verdicts", {"limit": "9999"}),
        ("/v1/verdicts", {"limit": "x"}),
        ("/v1/verdicts", {"before": "-1"}),
        ("/v1/findings", {"status": "bogus"}),
        ("/v1/facts", {"only": "nosuch"}),
        ("/v1/verdicts/abc", {}),
    ):
        r = s.client.get(path, params=params)
        assert r.status_code == 400, (path, params, r.text)
        assert r.json()["error"]
    gone = s.client.get("/v1/verdicts/999999")
    assert gone.status_code == 404 and "no run" in gone.json()["error"]
    audit = s.client.get("/v1/audit")
    assert audit.status_code in (200, 404)  # 404 names the absent log, never an empty list
    if audit.status_code == 404:
        assert "no audit log" in audit.json()["error"]


def test_facts_stack_tune_and_jobs_of_the_agent_host(serve: Any, xid79: Path) -> None:
    s = serve("--from", str(xid79), "--interval", "1h")
    s.wait()
    facts = s.client.get("/v1/facts", params={"only": "os,gpu"}).json()
    assert facts["schema"] == "dolmen.facts/1" and facts["host"]["kind"] == "tree"
    assert set(facts) == {"schema", "host", "os", "gpu"}
    stack = s.client.get("/v1/stack").json()
    assert "stack" in stack and stack["host"]["root"] == str(xid79)
    tune = s.client.get("/v1/tune").json()
    assert tune["schema"] == "dolmen.tune.status/1"
    jobs = s.client.get("/v1/jobs").json()
    assert jobs == {"items": [], "next": None}


def test_history_survives_a_restart(serve: Any, home: Path, xid79: Path) -> None:
    s = serve("--from", str(xid79), "--interval", "1h")
    s.wait()
    before = s.client.get("/v1/verdict/latest").text
    first_id = s.client.get("/v1/verdicts").json()["items"][0]["id"]
    assert s.stop() in (0, -15)  # SIGTERM: uvicorn stops gracefully, then re-raises it
    assert (home / "state" / "serve" / "agent.db").is_file()
    assert not (home / "state" / "serve" / "agent.sock").exists()

    again = serve("--from", str(xid79), "--interval", "1h")
    again.wait("/healthz")
    assert again.client.get(f"/v1/verdicts/{first_id}").text == before
    again.wait()
    items = again.client.get("/v1/verdicts").json()["items"]
    assert [r["id"] for r in items][-1] == first_id and len(items) >= 2

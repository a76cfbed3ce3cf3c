"""The machine contracts: every shipped JSON Schema is a draft 2020-12 schema whose ``$id``
is the ``schema`` key of the documents it describes, ``dolmen schema`` prints it byte for
byte, every command with ``--json`` has one, the goldens hold, and a schema refuses what
breaks a consumer (it is not ``{}``). The commands' own tests validate their --json
output too (``tests/report/contract.py``: logs, kb, jobs, tune, audit, validate, paste)."""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any

import click
import pytest
from jsonschema import Draft202012Validator

from dolmen.cli.main import main
from dolmen.report import schemas
from tests.hosts import scenarios
from tests.report.contract import assert_valid, validator
from tests.report.edit import DELETE, set_at

GOLDENS = sorted(scenarios.HOSTS.glob("*/expected.json"))
# What tests/test_scenarios.py normalises away; put back so a golden is a whole document.
VOLATILE = {"started": "2026-12-01T16:00:00Z", "duration_s": 0.1, "dolmen_version": "0.1.0"}

# Every command that takes --json, and the schema of what it prints. The audit log's
# events (show, tail) are its own hash-chained lines, printed byte for byte: a key added
# to them would break the chain (docs/audit.md describes them).
JSON_COMMANDS = {
    "validate": {"dolmen.verdict/1", "dolmen.checks/1"},
    "facts": {"dolmen.facts/1"},
    "logs scan": {"dolmen.logscan/1"},
    "kb cuda": {"dolmen.kb.cuda/1", "dolmen.kb.cuda.toolkit/1"},
    "kb check-driver": {"dolmen.kb.check_driver/1"},
    "kb gpu": {"dolmen.kb.gpus/1"},
    "kb ngc": {"dolmen.kb.ngc/1", "dolmen.kb.ngc.release/1"},
    "kb xid": {"dolmen.kb.xids/1", "dolmen.kb.xid/1"},
    "tune plan": {"dolmen.tune.plan/1"},
    "tune apply": {"dolmen.tune.apply/1"},
    "tune rollback": {"dolmen.tune.rollback/1"},
    "tune recover": {"dolmen.tune.apply/1", "dolmen.tune.rollback/1"},
    "tune verify": {"dolmen.tune.verify/1"},
    "tune reapply": {"dolmen.tune.reapply/1"},
    "tune status": {"dolmen.tune.status/1"},
    "tune profiles": {"dolmen.tune.profiles/1"},
    "tune show": {"dolmen.tune.profile/1"},
    "tune recommend": {"dolmen.tune.recommend/1"},
    "stack lock": {"dolmen.stack.lock/1"},
    "stack diff": {"dolmen.stack.diff/1"},
    "stack plan": {"dolmen.stack.plan/1"},
    "stack apply": {"dolmen.stack.plan/1", "dolmen.tune.apply/1"},
    "stack rollback": {"dolmen.tune.rollback/1"},
    "jobs submit": {"dolmen.jobs.status/1"},
    "jobs plan": {"dolmen.jobs.plan/1"},
    "jobs status": {"dolmen.jobs.status/1"},
    "jobs list": {"dolmen.jobs.list/1"},
    "users list": {"dolmen.users/1"},
    "quota show": {"dolmen.quota/1"},
    "audit verify": {"dolmen.audit.verify/1"},
    "keys status": {"dolmen.keys.status/1"},
    "net plan": {"dolmen.net.plan/1"},
    "net apply": {"dolmen.net.apply/1"},
    "net verify": {"dolmen.net.verify/1"},
    "net rollback": {"dolmen.net.rollback/1"},
    "net recover": {"dolmen.net.recover/1"},
    "net gc": {"dolmen.net.gc/1"},
    "integrity attest quote": {"dolmen.integrity.attest.quote/1"},
    "integrity attest verify": {"dolmen.integrity.attest.verify/1"},
    "net k8s": {"dolmen.net.k8s/1"},
    "net ib partitions": {"dolmen.net.ib.partitions/1"},
    "net ib verify": {"dolmen.net.ib.verify/1"},
    "net prove": {"dolmen.net.prove/1"},
    "integrity verify": {"dolmen.integrity.verify/1"},
    **{
        f"crypt {c}": {"dolmen.crypt.plan/1", "dolmen.crypt.result/1"}
        for c in ("enrol", "unlock", "rotate", "recovery-key")
    },
    "bench": {"dolmen.bench/1", "dolmen.bench.compare/1"},
    "setup": {"dolmen.setup/1"},
    "fleet report": {"dolmen.fleet.report/1"},
    "fleet collective": {"dolmen.bench/1"},
    "containers resolve": {"dolmen.containers.resolve/1"},
    "containers run": {"dolmen.containers.plan/1"},
    "topo": {"dolmen.topo/1"},
    "nccl env": {"dolmen.nccl.env/1", "dolmen.tune.plan/1", "dolmen.tune.apply/1"},
    "nccl rollback": {"dolmen.tune.rollback/1"},
    "serve token list": {"dolmen.serve.tokens/1"},
    "version": {"dolmen.version/1"},
    "audit show": set(),  # the log's own event lines
    "audit tail": set(),
}


def run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    rc = main(list(argv))
    out, err = capsys.readouterr()
    return rc, out, err


@pytest.mark.parametrize("short", sorted(schemas.files()))
def test_each_schema_is_draft_2020_12_with_the_id_of_its_documents(short: str) -> None:
    doc = schemas.load(short)
    assert doc["$schema"] == "https://json-schema.org/draft/2020-12/schema"
    Draft202012Validator.check_schema(doc)
    if short == "bench":  # another helper's file: its own id
        return
    version = doc["$id"].rsplit("/", 1)[1]
    assert doc["$id"] == f"dolmen.{short}/{version}" and version.isdigit()
    assert doc["properties"]["schema"] == {"const": doc["$id"]}
    assert "schema" in doc["required"] and doc.get("title")


def test_every_json_command_has_a_schema() -> None:
    """A new --json output without a contract fails here (walks the whole command tree)."""
    from dolmen.cli.group import cli

    found: set[str] = set()

    def walk(cmd: click.Command, path: str) -> None:
        if isinstance(cmd, click.Group):
            for name in cmd.list_commands(click.Context(cmd)):
                sub = cmd.get_command(click.Context(cmd), name)
                assert sub is not None
                walk(sub, f"{path} {name}".strip())
        elif any(p.name == "as_json" for p in cmd.params):
            found.add(path)

    walk(cli, "")
    assert found == set(JSON_COMMANDS), (
        "a command with --json needs a schema (src/dolmen/report/schemas) and a row in "
        f"JSON_COMMANDS: new {sorted(found - set(JSON_COMMANDS))}, "
        f"gone {sorted(set(JSON_COMMANDS) - found)}"
    )
    shipped = set(schemas.ids())
    for names in JSON_COMMANDS.values():
        assert names <= shipped, names - shipped


def test_schema_command_lists_and_prints_each(capsys: pytest.CaptureFixture[str]) -> None:
    rc, out, _ = run(capsys, "schema")
    assert rc == 0
    listed = [line.split()[0] for line in out.splitlines()]
    assert sorted(listed) == schemas.ids()
    for spelling in ("verdict", "dolmen.verdict", "dolmen.verdict/1", "verdict/1"):
        rc, out, _ = run(capsys, "schema", spelling)
        assert rc == 0 and out == schemas.text("verdict")
        assert json.loads(out)["$id"] == "dolmen.verdict/1"
    rc, out, _ = run(capsys, "schema", "tune.plan")
    assert rc == 0 and json.loads(out)["$id"] == "dolmen.tune.plan/1"


@pytest.mark.parametrize(
    ("name", "message"),
    [
        (
            "nope",
            "no schema 'nope'; valid: dolmen.audit.verify/1, dolmen.bench.compare/1, dolmen.bench/1,",
        ),
        ("verdict/2", "no schema 'verdict/2'; this dolmen ships dolmen.verdict/1"),
    ],
)
def test_unknown_schema_exits_2_with_the_choices(
    capsys: pytest.CaptureFixture[str], name: str, message: str
) -> None:
    rc, out, err = run(capsys, "schema", name)
    assert rc == 2 and out == ""
    assert err.splitlines()[0].startswith(f"dolmen: error: {message}")


@pytest.mark.parametrize("golden", GOLDENS, ids=[g.parent.name for g in GOLDENS])
def test_golden_verdicts_hold_their_schema(golden: Path) -> None:
    assert_valid({**json.loads(golden.read_text()), **VOLATILE})


def _healthy() -> dict[str, Any]:
    golden = scenarios.HOSTS / "h100-dbe-ecc" / "expected.json"
    return {**json.loads(golden.read_text()), **VOLATILE}


def _set(path: str, value: Any) -> Any:
    return lambda doc: set_at(doc, path, value)


_FAIL = next(i for i, f in enumerate(_healthy()["findings"]) if f["status"] == "fail")


@pytest.mark.parametrize(
    ("edit", "why"),
    [
        (_set("status", "ok"), "a status no scheduler knows"),
        (_set("exit_code", 3), "an exit code outside 0, 1, 2"),
        (_set("findings.0.status", "passed"), "a finding status outside the six"),
        (_set("findings.0.summary", DELETE), "a finding without its summary"),
        (_set("findings.0.evidence", "x=1"), "evidence as a string"),
        (_set("findings.0.gating", "yes"), "gating as a string"),
        (_set(f"findings.{_FAIL}.remedy", None), "a failure without a remedy"),
        (_set("findings.0.device", {"index": "3"}), "a device index as a string"),
        (_set("counts.maybe", 1), "a count of no status"),
        (_set("coverage.PCI tree", {"state": "unreadable"}), "unreadable without a reason"),
        (_set("schema", "dolmen.verdict/2"), "another version"),
    ],
    ids=lambda v: v if isinstance(v, str) else "",
)
def test_the_verdict_schema_refuses_what_breaks_a_consumer(edit: Any, why: str) -> None:
    doc = _healthy()
    assert_valid(copy.deepcopy(doc))
    edit(doc)
    assert list(validator("dolmen.verdict/1").iter_errors(doc)), why


def test_what_other_work_adds_to_the_verdict_is_allowed() -> None:
    """Optional within version 1: a finding's device (what an RMA needs), the run's
    inventory, evidence keys of any workload."""
    doc = _healthy()
    doc["findings"][_FAIL]["device"] = {
        "index": 3,
        "uuid": "GPU-00000003-0000-0000-0000-000000000003",
        "serial": "1650000000004",
        "model": "NVIDIA H100 80GB HBM3",
        "pci_bus_id": "0000:86:00.0",
    }
    doc["inventory"] = {"gpus": [{"index": 3}], "nics": []}
    doc["findings"][0]["evidence"]["tflops"] = 712.5
    assert_valid(doc)


def test_check_categories_and_ids_are_the_schemas() -> None:
    from dolmen.checks import load_registry

    finding = schemas.load("verdict")["$defs"]["finding"]["properties"]
    categories = set(finding["category"]["enum"])
    assert {s.category for s in load_registry().values()} <= categories


def test_validate_list_json(capsys: pytest.CaptureFixture[str]) -> None:
    rc, out, _ = run(capsys, "validate", "--list", "--json")
    assert rc == 0 and len(assert_valid(json.loads(out))["checks"]) > 50


@pytest.mark.parametrize(
    "argv",
    [
        ("kb", "cuda", "--json"),
        ("kb", "cuda", "12.4", "--json"),
        ("kb", "check-driver", "535.54.03", "--cuda", "12.2", "--json"),
        ("kb", "gpu", "--json"),
        ("kb", "ngc", "--json"),
        ("kb", "ngc", "24.05", "--json"),
        ("kb", "xid", "--json"),
        ("kb", "xid", "--sxid", "--json"),
        ("kb", "xid", "79", "--json"),
        ("tune", "profiles", "--json"),
    ],
    ids=" ".join,
)
def test_knowledge_base_documents(capsys: pytest.CaptureFixture[str], argv: tuple[str]) -> None:
    rc, out, _ = run(capsys, *argv)
    assert rc == 0
    assert_valid(json.loads(out))


@pytest.fixture(scope="module")
def healthy_tree(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return scenarios.build("h100-hgx-healthy", tmp_path_factory.mktemp("h") / "t")


def test_facts_document_of_a_bundle(healthy_tree: Path, capsys: pytest.CaptureFixture[str]) -> None:
    rc, out, _ = run(capsys, "facts", "--from", str(healthy_tree), "--json")
    doc = assert_valid(json.loads(out))
    assert rc == 0 and doc["schema"] == "dolmen.facts/1" and len(doc["gpu"]["gpus"]) == 8
    rc, out, _ = run(capsys, "facts", "--from", str(healthy_tree), "--json", "--only", "cpu")
    assert set(assert_valid(json.loads(out))) == {"schema", "host", "cpu"}
    broken = {**doc, "gpu": {"error": "gpu facts: boom"}}
    assert_valid(broken)  # a subsystem that could not be collected says so
    broken["gpu"] = {"gpus": "none"}
    assert list(validator("dolmen.facts/1").iter_errors(broken))


def test_validate_json_of_a_bundle(healthy_tree: Path, capsys: pytest.CaptureFixture[str]) -> None:
    rc, out, _ = run(capsys, "validate", "--from", str(healthy_tree), "--json", "--level", "quick")
    assert rc == 0 and assert_valid(json.loads(out))["status"] == "healthy"

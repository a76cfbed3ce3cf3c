"""``net k8s`` and ``net ib partitions|verify`` (cli/net_targets.py) in-process, on the
scenario h100-ib-pkeys (tests/hosts) and on trees of our own; their --json outputs held to
their schemas (src/dolmen/report/schemas/net.*)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
import yaml
from click.testing import CliRunner, Result
from jsonschema import Draft202012Validator

from dolmen.cli.net_targets import ib, k8s
from dolmen.errors import UsageError
from dolmen.report import schemas
from tests.hosts import scenarios
from tests.net.opensm_grammar import parse

IB = [0, 1, 4, 5, 6, 7, 8, 9]  # the scenario's InfiniBand devices (mlx5_bond_0 is RoCE)
GUIDS = [f"0xa088c20300b1c2{n:02x}" for n in IB]
POLICY = """
[management]
from = ["10.0.0.0/24"]
[management.services]
ssh = 22
[jobs]
tcp = "40000-40100"
[tenants.research]
[tenants.vision]
"""


def _fabric(members: list[str]) -> str:
    listed = ", ".join(f'"{m}"' for m in members)
    return f'[sm]\nports = ["0x0002c90300000001"]\n[tenants.research]\npkey = 0x0101\nmembers = [{listed}]\n'


@pytest.fixture(scope="module")
def node(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return scenarios.build("h100-ib-pkeys", tmp_path_factory.mktemp("node") / "tree")


@pytest.fixture
def files(tmp_path: Path) -> dict[str, Path]:
    out = {"policy": tmp_path / "policy.toml", "fabric": tmp_path / "fabric.toml"}
    out["policy"].write_text(POLICY)
    out["fabric"].write_text(_fabric(["gpu01"]))
    return out


def _run(cmd: Any, *args: str) -> Result:
    return CliRunner().invoke(cmd, list(args))


def _valid(doc: dict[str, Any]) -> None:
    Draft202012Validator(schemas.load(doc["schema"].split("/")[0][len("dolmen.") :])).validate(doc)


def test_k8s_yaml_and_json(files: dict[str, Path]) -> None:
    res = _run(k8s, "--policy", str(files["policy"]), "--job", "Llama_FT", "--namespace", "a")
    assert res.exit_code == 0, res.output
    names = [d["metadata"]["name"] for d in yaml.safe_load_all(res.output)]
    assert names == [
        "dolmen-default-deny",
        "dolmen-allow-dns",
        "dolmen-allow-management",
        "dolmen-job-llama-ft",
    ]
    res = _run(k8s, "--policy", str(files["policy"]), "--job", "x", "--tenant", "vision", "--json")
    doc = json.loads(res.output)
    _valid(doc)
    assert len(doc["gaps"]) == 4


def test_k8s_refuses_host_network(files: dict[str, Path], tmp_path: Path) -> None:
    manifest = tmp_path / "job.yaml"
    manifest.write_text(
        "---\nkind: Pod\nmetadata: {name: p}\nspec:\n  hostNetwork: true\n"
        "  containers: [{name: c, image: i}]\n"
    )
    res = _run(k8s, "--policy", str(files["policy"]), "--job", "j", "--check", str(manifest))
    assert isinstance(res.exception, UsageError) and "Pod/p: .spec" in str(res.exception)
    manifest.write_text("key: [unclosed\n")
    res = _run(k8s, "--policy", str(files["policy"]), "--job", "j", "--check", str(manifest))
    assert isinstance(res.exception, UsageError) and "not YAML" in str(res.exception)


def test_k8s_unknown_tenant(files: dict[str, Path]) -> None:
    res = _run(k8s, "--policy", str(files["policy"]), "--job", "j", "--tenant", "nobody")
    assert isinstance(res.exception, UsageError) and "research, vision" in str(res.exception)


def test_partitions_members_from_a_node_s_facts(files: dict[str, Path], node: Path) -> None:
    args = ["--fabric", str(files["fabric"]), "--policy", str(files["policy"])]
    res = _run(ib, "partitions", *args, "--node", f"gpu01={node}")
    assert res.exit_code == 0, res.output
    default, research = parse(res.output)
    assert research["ports"] == [(g, "full") for g in GUIDS]
    assert default["ports"][:2] == [("ALL", "limited"), ("SELF", "full")]
    res = _run(ib, "partitions", *args, "--node", f"gpu01={node}", "--json")
    doc = json.loads(res.output)
    _valid(doc)
    assert [p["pkey"] for p in doc["partitions"]] == ["0x7fff", "0x0101"]


def test_partitions_written_atomically(files: dict[str, Path], node: Path, tmp_path: Path) -> None:
    out = tmp_path / "partitions.conf"
    out.write_text("old\n")
    args = ["--fabric", str(files["fabric"]), "--node", f"gpu01={node}", "--output", str(out)]
    assert _run(ib, "partitions", *args).exit_code == 0
    assert len(parse(out.read_text())) == 2
    names = sorted(p.name for p in tmp_path.iterdir())
    assert names == ["fabric.toml", "partitions.conf", "policy.toml"]  # no temporary left


@pytest.mark.parametrize(
    ("extra", "why"),
    [
        ([], "node gpu01 has no facts here"),  # a member never silently left out
        (["--node", "gpu01"], "write NAME=PATH"),
        (["--node", "gpu01=/nonexistent"], "no such snapshot"),
        (["--output", "/nonexistent/partitions.conf"], "does not exist"),
    ],
)
def test_partitions_refused(files: dict[str, Path], extra: list[str], why: str) -> None:
    res = _run(ib, "partitions", "--fabric", str(files["fabric"]), *extra)
    assert isinstance(res.exception, UsageError) and why in str(res.exception), res.output


def test_verify_names_what_differs(files: dict[str, Path], node: Path) -> None:
    args = ["--fabric", str(files["fabric"]), "--node", f"gpu01={node}", "--from", str(node)]
    res = _run(ib, "verify", *args)
    assert res.exit_code == 1, res.output
    lines = {ln.split(" ", 1)[0]: ln for ln in res.output.splitlines()}
    assert set(lines) == {f"ib:mlx5_{n}/1" for n in IB}  # the RoCE bond is not judged
    assert lines["ib:mlx5_9/1"].endswith("membership 0x7fff: full, the policy grants limited")
    assert lines["ib:mlx5_8/1"].endswith("missing 0x0101 (full)")
    assert lines["ib:mlx5_0/1"].endswith(": ok")
    doc = json.loads(_run(ib, "verify", *args, "--json").output)
    _valid(doc)
    assert sorted(r["status"] for r in doc["ports"]).count("differs") == 2


def test_verify_a_port_outside_the_tenant(files: dict[str, Path], node: Path) -> None:
    files["fabric"].write_text(_fabric(GUIDS[:-1]))  # mlx5_9 is not research's
    res = _run(ib, "verify", "--fabric", str(files["fabric"]), "--from", str(node))
    line = next(ln for ln in res.output.splitlines() if ln.startswith("ib:mlx5_9/1"))
    assert "extra 0x0101 (full)" in line and res.exit_code == 1


def test_verify_without_tables_is_undecided(files: dict[str, Path], tmp_path: Path) -> None:
    tree = tmp_path / "t"
    port = tree / "sys/class/infiniband/mlx5_0/ports/1"
    port.mkdir(parents=True)
    (port / "link_layer").write_text("InfiniBand\n")
    files["fabric"].write_text(_fabric([GUIDS[0]]))
    res = _run(ib, "verify", "--fabric", str(files["fabric"]), "--from", str(tree))
    assert res.exit_code == 2 and "unknown" in res.output
    empty = tmp_path / "e"
    empty.mkdir()
    res = _run(ib, "verify", "--fabric", str(files["fabric"]), "--from", str(empty))
    assert res.exit_code == 2 and "no InfiniBand port" in res.output


def test_a_refused_partitions_file_leaves_the_old_one(
    files: dict[str, Path], tmp_path: Path
) -> None:
    out = tmp_path / "partitions.conf"
    out.write_text("old\n")
    res = _run(ib, "partitions", "--fabric", str(files["fabric"]), "--output", str(out))
    assert isinstance(res.exception, UsageError)  # gpu01 has no facts: nothing written
    assert out.read_text() == "old\n"

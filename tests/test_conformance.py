"""Conformance: every registry entry holds to its contract (STYLE.md rule 7), and only
dolmen.host touches the machine (rule 1)."""

from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest

from dolmen.checks import CATEGORIES, load_registry
from dolmen.checks.context import PREDICATES, Context
from dolmen.checks.model import CheckSpec, Level, Status
from dolmen.checks.runner import run_one
from dolmen.facts import SUBSYSTEMS
from dolmen.host.tree import TreeHost
from tests.conftest import HOSTS, make_tree

SRC = Path(__file__).resolve().parents[1] / "src" / "dolmen"
REGISTRY = load_registry()
SPECS = sorted(REGISTRY.values(), key=lambda s: s.id)
ID = re.compile(r"^[a-z]+(\.[a-z0-9_]+){1,3}$")


@pytest.mark.parametrize("spec", SPECS, ids=lambda s: s.id)
def test_check_metadata(spec: CheckSpec) -> None:
    assert ID.match(spec.id), "ids are category.subject[.signal], lowercase"
    assert spec.category in CATEGORIES
    assert spec.title and spec.title[0].isupper() and not spec.title.endswith(".")
    assert spec.remedy.strip(), "every check says how to fix what it finds"
    assert set(spec.needs) <= set(SUBSYSTEMS), f"unknown facts in needs: {spec.needs}"
    assert set(spec.when) <= set(PREDICATES), f"unknown predicates: {spec.when}"
    for name in spec.when:
        assert set(PREDICATES[name][1]) <= set(SUBSYSTEMS)
    if spec.limits:
        assert spec.source.strip(), "limits carry the source of their values"
        assert all(k.isidentifier() for k in spec.limits)
    assert spec.fn.__doc__, "the body's docstring says what it reads"
    if spec.category in ("tuning", "security"):
        assert not spec.gating, "posture checks are advisory"
    if not spec.gating:
        # quick is the Slurm health check's budget: only what can make a node unhealthy
        assert spec.level is not Level.QUICK, "advisory checks run from the standard level"


def _scenarios() -> list[Path]:
    return sorted(p for p in HOSTS.iterdir() if p.is_dir()) if HOSTS.is_dir() else []


@pytest.mark.parametrize("spec", SPECS, ids=lambda s: s.id)
def test_checks_never_error_on_any_host(spec: CheckSpec, tmp_path: Path) -> None:
    """An empty tree, every committed scenario: findings, never an exception or error."""
    hosts = [TreeHost(make_tree(tmp_path / "empty")), *(TreeHost(p) for p in _scenarios())]
    for host in hosts:
        findings = run_one(Context(host), spec)
        assert findings
        for f in findings:
            assert f.status is not Status.ERROR, (host.root.name, f.summary, f.evidence)
            assert f.check == spec.id and f.summary


def test_gpu_present_but_unreadable_never_passes(tmp_path: Path) -> None:
    """An NVIDIA GPU on the PCI bus and a driver that does not answer: no gpu check passes."""
    dev = "sys/bus/pci/devices/0000:9b:00.0"
    root = make_tree(
        tmp_path,
        files={
            f"{dev}/vendor": "0x10de\n",
            f"{dev}/class": "0x030200\n",
            f"{dev}/device": "0x2330\n",
        },
        commands={
            "nvidia-smi -q -x": (
                "",
                9,
                "NVIDIA-SMI has failed because it couldn't communicate with the NVIDIA driver.\n",
            )
        },
    )
    ctx = Context(TreeHost(root))
    for spec in SPECS:
        if spec.category != "gpu" or spec.id == "gpu.present":  # the bus does show the GPU
            continue
        for f in run_one(ctx, spec):
            assert f.status is not Status.PASS, (spec.id, f.summary)


# A path to something on the machine: /proc/..., /sys/..., /dev/..., /etc/... with at least
# one component (bare prefixes like "/dev/" in a startswith() test are not reads).
MACHINE_PATH = re.compile(r"^/(proc|sys|dev|etc)/[\w.:-]+")


def test_only_the_host_layer_names_machine_paths() -> None:
    """String literals naming /proc, /sys, /dev or /etc paths appear only in dolmen.host
    (docstrings and help texts excepted)."""
    offenders = []
    for path in SRC.rglob("*.py"):
        rel = path.relative_to(SRC)
        if rel.parts[0] in ("host",) or rel.name == "paths.py":
            continue
        tree = ast.parse(path.read_text())
        docstrings = {
            id(n.body[0].value)
            for n in ast.walk(tree)
            if isinstance(n, (ast.Module, ast.FunctionDef, ast.ClassDef, ast.AsyncFunctionDef))
            and n.body
            and isinstance(n.body[0], ast.Expr)
            and isinstance(n.body[0].value, ast.Constant)
        }
        for node in ast.walk(tree):
            if (
                isinstance(node, ast.Constant)
                and isinstance(node.value, str)
                and id(node) not in docstrings
                and MACHINE_PATH.match(node.value)
                and " " not in node.value
            ):
                offenders.append(f"{rel}:{node.lineno}: {node.value}")
    assert not offenders, "read machine paths through a Host:\n" + "\n".join(offenders)


def test_the_check_index_is_current() -> None:
    """checks/index.py lets the quick tier import only its modules; it must list them all."""
    from dolmen.checks import index_source

    current = (SRC / "checks" / "index.py").read_text()
    assert current == index_source(), "run: python -m dolmen.checks (then ruff format)"

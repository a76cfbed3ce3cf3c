"""Conformance: every registered backend holds to the interface (STYLE.md rule 7)."""

from __future__ import annotations

import inspect
from pathlib import Path

import pytest

from dolmen.jobs.backend import BACKENDS, Backend, Plan, backend_class
from dolmen.jobs.spec import JobSpec

SPEC = JobSpec(
    name="conformance",
    command=("python", "train.py"),
    image="nvcr.io/nvidia/pytorch:24.05-py3",
    nodes=2,
    gpus_per_node=4,
    checkpoint_dir="/ckpt",
    max_restarts=2,
    time_limit_s=3600,
)


@pytest.mark.parametrize("name", BACKENDS)
def test_backend_contract(name: str, state: Path) -> None:
    cls = backend_class(name)
    assert issubclass(cls, Backend) and cls.name == name
    assert cls.__doc__ and inspect.getmodule(cls).__doc__  # type: ignore[union-attr]
    params = inspect.signature(cls).parameters.values()
    assert all(p.default is not inspect.Parameter.empty for p in params), "options are optional"
    plan = cls().plan(SPEC)
    assert isinstance(plan, Plan) and plan.backend == name and plan.spec == SPEC
    assert plan.summary and plan.artifacts
    assert all(isinstance(t, str) and t.strip() for t in plan.artifacts.values())
    assert cls().plan(SPEC) == plan  # pure: the same spec, the same plan
    assert not list(state.glob("**/*")), "plan wrote state"

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


@pytest.mark.parametrize("name", BACKENDS)
def test_declared_options_are_constructor_options(name: str) -> None:
    """The option table (what the CLI builds a backend from) names real keywords, each
    flag a `dolmen jobs` option and a valid click parameter."""
    from dolmen.cli.jobs import submit

    cls = backend_class(name)
    params = inspect.signature(cls).parameters
    cli = {p.name for p in submit.params}
    for opt in cls.OPTIONS:
        assert opt.name in params, f"{name}: {opt.name} is not an option of {cls.__name__}"
        assert opt.help and (opt.flag or opt.config)
        assert opt.param is None or opt.param in cli


def test_a_flag_of_another_backend_is_refused_naming_the_valid_ones() -> None:
    from dolmen.cli.jobs import backend_from
    from dolmen.errors import UsageError

    with pytest.raises(UsageError) as err:
        backend_from({"backend": "slurm", "namespace": "team-a"})
    assert err.value.message == "--namespace (kubernetes): not an option of the slurm backend"
    assert backend_from({"backend": "kubernetes", "namespace": "team-a"}).namespace == "team-a"


def test_console_scripts_resolve() -> None:
    """slurm.conf names these programs: each entry point must import and be callable."""
    import importlib

    from dolmen.compat import tomllib

    root = Path(__file__).resolve().parents[2]
    scripts = tomllib.loads((root / "pyproject.toml").read_text())["project"]["scripts"]
    assert {"dolmen-slurm-healthcheck", "dolmen-slurm-prolog", "dolmen-slurm-epilog"} <= set(
        scripts
    )
    for target in scripts.values():
        module, _, attr = target.partition(":")
        assert callable(getattr(importlib.import_module(module), attr)), target

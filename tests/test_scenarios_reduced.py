"""Every scenario with parts of its bundle removed (issue 8): the verdict may lose
certainty, but it never invents a fault and never hides one whose evidence is still there.

- Never invent: a finding that fails on the reduced tree failed on the whole tree too
  (same check, same subject).
- Never hide: a failure of the whole tree still fails on the reduced tree when none of the
  facts the check reads (its ``needs``) comes from the removed part. ``AFFECTS`` maps each
  removal to the facts subsystems that read it; a failure of a check that reads one of
  them may become unknown or skip (its evidence is gone), never pass.
"""

from __future__ import annotations

import shutil
from functools import cache
from pathlib import Path

import pytest

from dolmen.checks import load_registry
from dolmen.checks.model import Finding, Level, Status
from dolmen.checks.suite import validate
from dolmen.host import open_host
from tests.hosts import scenarios

# The removed part -> the facts subsystems whose sources it holds.
COMMAND_FACTS = frozenset(
    {"gpu", "kernel_log", "infiniband", "network", "stack", "os", "storage", "containers"}
    | {"tuning", "security", "topology"}
)
AFFECTS: dict[str, frozenset[str]] = {
    "sys/bus/pci": frozenset({"pci", "numa", "topology"}),
    "proc/modules": frozenset({"stack", "security"}),
    "commands/dmesg": frozenset({"kernel_log"}),
    "commands": COMMAND_FACTS,
}


@cache
def _whole(name: str, root: Path) -> tuple[Finding, ...]:
    return _findings(name, root)


def _findings(name: str, root: Path) -> tuple[Finding, ...]:
    with open_host(root) as host:
        verdict = validate(host, level=Level.STANDARD, config=scenarios.config(name))
    return verdict.findings


def _fails(findings: tuple[Finding, ...]) -> set[tuple[str, str]]:
    return {(f.check, f.subject) for f in findings if f.status is Status.FAIL}


@pytest.mark.parametrize("removed", sorted(AFFECTS))
@pytest.mark.parametrize("name", scenarios.names())
def test_reduced_bundle(name: str, removed: str, tmp_path_factory: pytest.TempPathFactory) -> None:
    base = tmp_path_factory.getbasetemp() / f"whole-{name}"
    if not base.exists():  # MissingRecording is a skip: the test skips with its reason
        scenarios.build(name, base)
    target = base / removed
    if not target.exists() and not target.is_symlink():
        pytest.skip(f"{name} has no {removed}")
    whole = _whole(name, base)
    reduced_root = tmp_path_factory.mktemp(f"{name}-less")
    shutil.copytree(base, reduced_root, symlinks=True, dirs_exist_ok=True)
    part = reduced_root / removed
    if part.is_dir() and not part.is_symlink():
        shutil.rmtree(part)
    else:
        part.unlink()
    reduced = _findings(name, reduced_root)

    invented = _fails(reduced) - _fails(whole)
    assert not invented, [
        (f.check, f.subject, f.summary) for f in reduced if (f.check, f.subject) in invented
    ]
    registry = load_registry()
    still = {(f.check, f.subject): f for f in reduced}
    for check, subject in sorted(_fails(whole)):
        if set(registry[check].needs) & AFFECTS[removed]:
            found = still.get((check, subject))
            assert found is None or found.status is not Status.PASS, (check, subject, found)
            continue
        found = still.get((check, subject))
        assert found is not None and found.status is Status.FAIL, (check, subject, found)

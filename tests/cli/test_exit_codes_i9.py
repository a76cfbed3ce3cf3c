"""Issue 9 cases 11 and 14: --debug keeps the exit code; conflicting or repeated flags,
an overflowing --since and a negative --timeout are usage errors (exit 2), both entries."""

from __future__ import annotations

from pathlib import Path

import pytest

from dolmen.cli.main import main


def _boom(**_: object) -> int:
    raise RuntimeError("a bug")


@pytest.mark.parametrize("how", ["flag", "env"])
@pytest.mark.parametrize("lean", [True, False])
def test_debug_prints_the_traceback_and_keeps_exit_70(
    how: str, lean: bool, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setattr("dolmen.cli.validate_run.run_validate", _boom)
    args = ["validate", "--from", "/nonexistent"]
    if how == "flag":
        args = ["--debug", *args]
    else:
        monkeypatch.setenv("DOLMEN_DEBUG", "1")
    assert main(args, lean=lean) == 70  # never 1: that is "unhealthy" and drains a node
    err = capsys.readouterr().err
    assert "Traceback (most recent call last)" in err and "RuntimeError: a bug" in err


def test_debug_keeps_a_usage_error_at_2(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["--debug", "validate", "--from", str(tmp_path / "absent")]) == 2
    assert "Traceback" in capsys.readouterr().err


@pytest.mark.parametrize("lean", [True, False])
@pytest.mark.parametrize(
    ("args", "words"),
    [
        (["validate", "--slurm", "--npd"], "--slurm and --npd"),
        (["validate", "--from", "a", "--from", "b"], "--from given 2 times"),
        (["validate", "--config", "a", "--config", "b"], "--config given 2 times"),
        (["facts", "--from", "a", "--from", "b"], "--from given 2 times"),
    ],
)
def test_conflicting_or_repeated_flags_are_refused(
    args: list[str], words: str, lean: bool, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(args, lean=lean) == 2
    assert words in capsys.readouterr().err


def test_since_overflow_is_a_usage_error(capsys: pytest.CaptureFixture[str]) -> None:
    rc = main(["logs", "scan", "--since", "99999999999999999999d", "/dev/null"])
    assert rc == 2, capsys.readouterr()
    assert "internal error" not in capsys.readouterr().err

"""CommandResult.failure: the one spelling of why a command gave nothing to parse."""

from __future__ import annotations

import pytest

from dolmen.host.command import CommandResult, RunStatus

ARGV = ("ibstat",)


@pytest.mark.parametrize(
    ("result", "reason"),
    [
        (
            CommandResult(ARGV, RunStatus.FAILED, stderr="ibpanic: no HCA\nmore", rc=255),
            "command failed: ibstat: exit 255: ibpanic: no HCA",
        ),
        (CommandResult(ARGV, RunStatus.FAILED, rc=1), "command failed: ibstat: exit 1"),
        (
            CommandResult(ARGV, RunStatus.TIMEOUT, reason="timed out after 10 s"),
            "timed out: ibstat: timed out after 10 s",
        ),
        (
            CommandResult(ARGV, RunStatus.DENIED, reason="permission denied"),
            "insufficient permissions: ibstat: permission denied",
        ),
        # live: the reason already names the binary; tree: the argv says what is absent
        (
            CommandResult(ARGV, RunStatus.MISSING, reason="ibstat not found on PATH"),
            "missing: ibstat not found on PATH",
        ),
        (
            CommandResult(ARGV, RunStatus.MISSING, reason="not recorded in this host tree"),
            "missing: ibstat: not recorded in this host tree",
        ),
    ],
)
def test_failure(result: CommandResult, reason: str) -> None:
    assert result.failure() == reason


def test_failure_word_given_by_the_caller() -> None:
    res = CommandResult(("journalctl", "-k"), RunStatus.OK, stderr="not seeing messages")
    assert res.failure("insufficient permissions") == "insufficient permissions: journalctl -k: ok"

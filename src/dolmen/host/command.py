"""The result of one command run on a host, live or recorded."""

from __future__ import annotations

from collections.abc import Sequence
from urllib.parse import quote

from dolmen.compat import StrEnum
from dolmen.frozen import frozen


class RunStatus(StrEnum):
    """How a command ended. A missing binary, a timeout and a non-zero exit are distinct."""

    OK = "ok"  # exit code 0
    FAILED = "failed"  # ran, exit code != 0
    MISSING = "missing"  # binary not found (live) or not recorded (hand-made tree)
    # A bundle that did not record it (a pasted file, a snapshot that never ran it): says
    # nothing about the host, so its readers report "not in this bundle", never "absent".
    UNRECORDED = "unrecorded"
    TIMEOUT = "timeout"  # killed after its time limit
    DENIED = "denied"  # found but could not be executed (permissions)


@frozen
class CommandResult:
    """stdout/stderr as text (UTF-8, undecodable bytes replaced), exit code and status."""

    argv: tuple[str, ...]
    status: RunStatus
    stdout: str = ""
    stderr: str = ""
    rc: int | None = None
    reason: str = ""  # why it is not OK, in words, for evidence and unknown findings

    @property
    def ok(self) -> bool:
        """True when the command ran and exited 0."""
        return self.status is RunStatus.OK

    def describe(self) -> str:
        """One line saying what happened, for evidence: ``nvidia-smi -q -x: exit 9: ...``."""
        cmd = " ".join(self.argv)
        if self.status is RunStatus.OK:
            return f"{cmd}: ok"
        if self.status is RunStatus.FAILED and self.rc is not None:
            first = (self.stderr.strip() or self.stdout.strip()).splitlines()[:1]
            tail = f": {first[0]}" if first else ""
            return f"{cmd}: exit {self.rc}{tail}"
        return f"{cmd}: {self.reason or self.status.value}"

    def failure(self, word: str | None = None) -> str:
        """Why the command gave no usable output, led by the reason words of
        docs/architecture.md: ``command failed: nvidia-smi -q -x: exit 9: ...``.

        ``word`` overrides the status's word, for a caller that knows more (journalctl
        exits 0 but says the user may not read the journal: ``insufficient permissions``).
        A live binary that is absent reads ``missing: nvidia-smi not found on PATH``.
        """
        if self.status is RunStatus.UNRECORDED and word is None:
            return f"{NOT_IN_BUNDLE}: {' '.join(self.argv)}"
        word = word or _FAILURE_WORDS.get(self.status, "command failed")
        if self.status is RunStatus.MISSING and self.argv and self.argv[0] in self.reason:
            return f"{word}: {self.reason}"
        return f"{word}: {self.describe()}"


# The reason words of a source a bundle did not record (docs/architecture.md).
NOT_IN_BUNDLE = "not in this bundle"

# The reason word for each way a command can fail (the rest: "command failed").
_FAILURE_WORDS = {
    RunStatus.MISSING: "missing",
    RunStatus.TIMEOUT: "timed out",
    RunStatus.DENIED: "insufficient permissions",
}


def command_key(argv: Sequence[str]) -> str:
    """The file name of a command's output in a host tree (DESIGN.md): quote(" ".join(argv))."""
    return quote(" ".join(argv), safe="")

"""One error hierarchy for dolmen; the CLI turns each into one line, a hint and an exit code.

Exit codes (documented in docs/exit-codes.md):

    0  success; the host is healthy (or only degraded)
    1  unhealthy: validate found a failure, verify found drift or tampering
    2  could not decide: bad usage, bad input file, a check that could not read its signal,
       a validate run that ran out of its --timeout (``run.timeout`` names what it waited on)
    3  the environment refused: missing permission, a dead or unreachable service
    4  the audit log could not be written, so the change was refused (fail closed)
   70  internal error (a bug in dolmen); rerun with --debug for the traceback
"""

from __future__ import annotations

from enum import IntEnum


class ExitCode(IntEnum):
    """Process exit codes shared by every dolmen command."""

    OK = 0
    UNHEALTHY = 1
    UNDECIDED = 2
    ENVIRONMENT = 3
    AUDIT = 4
    INTERNAL = 70


class DolmenError(Exception):
    """Base of every error dolmen reports to a user.

    ``message`` names the problem in one line; ``hint`` says how to fix it.
    """

    exit_code: ExitCode = ExitCode.UNDECIDED

    def __init__(self, message: str, *, hint: str | None = None) -> None:
        super().__init__(message)
        self.message = message
        self.hint = hint

    def __str__(self) -> str:
        return self.message


class UsageError(DolmenError):
    """A wrong flag, argument or combination of them."""


class InputError(DolmenError):
    """A file or recording dolmen was given is malformed, truncated or hostile."""

    def __init__(
        self,
        message: str,
        *,
        path: str | None = None,
        line: int | None = None,
        hint: str | None = None,
    ) -> None:
        where = path if line is None else f"{path}:{line}"
        super().__init__(f"{where}: {message}" if where else message, hint=hint)
        self.path = path
        self.line = line


class ConfigError(InputError):
    """The site configuration or a profile is invalid."""


class EnvironmentProblem(DolmenError):
    """The machine refused: a permission, a missing tool, a dead service."""

    exit_code = ExitCode.ENVIRONMENT


class NeedsRoot(EnvironmentProblem):
    """The operation writes to the live host and needs root."""


class ServiceUnavailable(EnvironmentProblem):
    """A service dolmen talks to (slurmctld, rsyslog, Vault...) did not answer."""


class AuditUnavailable(DolmenError):
    """The audit log could not be written; the change was refused (fail closed)."""

    exit_code = ExitCode.AUDIT

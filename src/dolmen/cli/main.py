"""The ``dolmen`` command: a lazy click group, one error line and a hint, documented exit codes."""

from __future__ import annotations

import importlib
import importlib.util
import os
import sys
from typing import Any

import click

from dolmen import __version__
from dolmen.errors import DolmenError, ExitCode

# command name -> "module:attribute"; modules import only when their command runs,
# so `dolmen --help` and `dolmen validate --level quick` stay fast.
COMMANDS: dict[str, tuple[str, str]] = {
    "validate": ("dolmen.cli.validate:validate", "Tell whether this host is ready for AI work."),
    "facts": ("dolmen.cli.facts:facts", "Print what dolmen knows about a host."),
    "snapshot": ("dolmen.cli.snapshot:snapshot", "Capture this host as a support bundle."),
    "baseline": ("dolmen.cli.baseline:baseline", "Record or compare a known-good host."),
    "logs": ("dolmen.cli.logs:logs", "Explain XID/SXID/IB events in kernel logs."),
    "kb": ("dolmen.cli.kb:kb", "Query the knowledge base (CUDA, GPUs, XIDs)."),
    "tune": ("dolmen.cli.tune:tune", "Plan, apply, verify and roll back performance profiles."),
    "audit": ("dolmen.cli.audit:audit", "Show, verify and export the audit trail."),
    "jobs": ("dolmen.cli.jobs:jobs", "Run multi-node GPU jobs on local, Slurm or Kubernetes."),
    "users": ("dolmen.cli.users:users", "Manage users and groups of the job backends."),
    "quota": ("dolmen.cli.quota:quota", "Set and show GPU quotas."),
}


class LazyGroup(click.Group):
    """A group whose subcommands import on first use."""

    def list_commands(self, ctx: click.Context) -> list[str]:
        return [name for name in COMMANDS if _available(name)]

    def get_command(self, ctx: click.Context, cmd_name: str) -> click.Command | None:
        if cmd_name not in COMMANDS or not _available(cmd_name):
            return None
        target, _ = COMMANDS[cmd_name]
        module, _, attr = target.partition(":")
        cmd = getattr(importlib.import_module(module), attr)
        assert isinstance(cmd, click.Command)
        return cmd

    def format_commands(self, ctx: click.Context, formatter: click.HelpFormatter) -> None:
        rows = [(name, COMMANDS[name][1]) for name in self.list_commands(ctx)]
        with formatter.section("Commands"):
            formatter.write_dl(rows)


def _available(name: str) -> bool:
    module = COMMANDS[name][0].partition(":")[0]
    return importlib.util.find_spec(module) is not None


@click.group(cls=LazyGroup, context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(__version__, prog_name="dolmen")
@click.option("--debug", is_flag=True, envvar="DOLMEN_DEBUG", help="Show tracebacks on errors.")
@click.pass_context
def cli(ctx: click.Context, debug: bool) -> None:
    """dolmen: the DGX OS layer for any GPU Linux host.

    Exit codes: 0 ok/healthy, 1 unhealthy (or drift, tampering), 2 could not decide
    or bad input, 3 refused by the environment (permission, dead service),
    4 audit log unwritable (change refused), 70 internal error.
    """
    ctx.obj = {"debug": debug}


def main(argv: list[str] | None = None) -> int:
    """Entry point: run the CLI and map errors to one line, a hint and an exit code."""
    debug = "--debug" in (argv if argv is not None else sys.argv[1:]) or bool(
        os.environ.get("DOLMEN_DEBUG")
    )
    try:
        rc = cli.main(args=argv, prog_name="dolmen", standalone_mode=False)
    except DolmenError as e:
        if debug:
            raise
        _err(f"dolmen: error: {e.message}")
        if e.hint:
            _err(f"hint: {e.hint}")
        return int(e.exit_code)
    except click.exceptions.Exit as e:
        return int(e.exit_code)
    except click.ClickException as e:
        e.show()
        return int(ExitCode.UNDECIDED)
    except click.Abort:
        _err("dolmen: aborted")
        return 130
    except KeyboardInterrupt:
        _err("dolmen: interrupted")
        return 130
    except BrokenPipeError:
        return 0
    except Exception as e:
        if debug:
            raise
        _err(f"dolmen: internal error: {e.__class__.__name__}: {e}")
        _err("hint: rerun with --debug for the traceback, and report it")
        return int(ExitCode.INTERNAL)
    return rc if isinstance(rc, int) else int(ExitCode.OK)


def _err(line: str) -> None:
    print(line, file=sys.stderr)


def exit_with(code: int) -> Any:
    """Leave a command with ``code`` (through click, so tests see it)."""
    raise click.exceptions.Exit(code)


if __name__ == "__main__":
    sys.exit(main())

"""The ``dolmen`` click group: lazy subcommands (``COMMANDS`` in cli/main.py), the global
options and the help text. Imported only when an invocation needs click (everything but
the lean ``validate`` of cli/lean.py)."""

from __future__ import annotations

import importlib
import importlib.util

import click

from dolmen import __version__
from dolmen.cli.main import COMMANDS


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

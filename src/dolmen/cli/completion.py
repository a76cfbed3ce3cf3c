"""``dolmen completion bash|zsh|fish``: the shell's completion script, from click.

The script is click's own (``click.shell_completion``): it calls ``dolmen`` back with
``_DOLMEN_COMPLETE=<shell>_complete`` and the words typed so far (``COMP_WORDS`` and
``COMP_CWORD`` for bash), and click answers from the same command tree the CLI runs, so
completion never lists a command or option that does not exist. Subcommands load only
when their name matches what was typed (cli/group.py), so a completion stays fast.
"""

from __future__ import annotations

import sys

import click

SHELLS = ("bash", "zsh", "fish")
COMPLETE_VAR = "_DOLMEN_COMPLETE"


def script(shell: str) -> str:
    """The completion script for ``shell`` (one of ``SHELLS``), as click writes it."""
    from click.shell_completion import get_completion_class

    from dolmen.cli.group import cli

    cls = get_completion_class(shell)
    if cls is None:  # pragma: no cover - SHELLS are click's built-in ones
        raise click.UsageError(f"no completion for {shell!r}; valid: {', '.join(SHELLS)}")
    return cls(cli, {}, "dolmen", COMPLETE_VAR).source()


@click.command()
@click.argument("shell", type=click.Choice(SHELLS))
def completion(shell: str) -> None:
    """Print the completion script of SHELL (bash, zsh or fish).

    \b
    bash: eval "$(dolmen completion bash)"     (~/.bashrc), or as root:
          dolmen completion bash > /etc/bash_completion.d/dolmen
    zsh:  eval "$(dolmen completion zsh)"      (~/.zshrc, after compinit)
    fish: dolmen completion fish > ~/.config/fish/completions/dolmen.fish
    """
    text = script(shell)
    sys.stdout.write(text if text.endswith("\n") else text + "\n")

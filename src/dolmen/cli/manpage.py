"""``dolmen manpage`` / ``python -m dolmen.cli.manpage``: dolmen(1), written from the CLI.

The page is generated from the same click commands the CLI runs (their help, arguments
and options), so it cannot drift from ``--help``; ``man -l dolmen.1`` reads it. Pure: the
roff text is a function of the command tree (and ``SOURCE_DATE_EPOCH`` for the date, as
reproducible builds set it), written with ``fsutil.write_output`` (a regular file, whole
or not at all).
"""

from __future__ import annotations

import inspect
import os
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import click

from dolmen import __version__
from dolmen.paths import DEFAULT_CONFIG_DIR, DEFAULT_STATE_DIR

CONFIG, STATE = str(DEFAULT_CONFIG_DIR), str(DEFAULT_STATE_DIR)

# After the commands: what every page of a command-line tool states.
EXIT_STATUS = (
    ("0", "healthy, or warnings only; the command did what was asked"),
    ("1", "unhealthy (validate), drift (tune verify), tampering (audit verify)"),
    ("2", "could not decide, or bad input (usage, a malformed file)"),
    ("3", "refused by the environment (permission, a dead service)"),
    ("4", "the audit log cannot be written: the change was refused"),
    ("70", "internal error (rerun with --debug for the traceback)"),
)
# The defaults of dolmen.paths (the one place that names them), as the page's FILES.
FILES = (
    (f"{CONFIG}/dolmen.toml", f"site configuration (--config); DOLMEN_CONFIG_DIR moves {CONFIG}"),
    (f"{CONFIG}/profiles/", "site tuning profiles"),
    (
        f"{STATE}/",
        "state: tune journals, the audit log and its keys, jobs, bench runs; "
        "DOLMEN_STATE_DIR moves it",
    ),
)


EMPTY = "\\&"  # a line that prints nothing (roff's zero-width character)


def esc(text: str) -> str:
    """Text as roff reads it literally: backslashes escaped, hyphens as \\- (ASCII in
    every output), a line starting with ``.`` or ``'`` kept from being a request."""
    out = text.replace("\\", "\\e").replace("-", "\\-")
    return "\n".join("\\&" + line if line[:1] in (".", "'") else line for line in out.splitlines())


def _paragraphs(help_text: str) -> str:
    """click help text (``\\b`` marks a block kept as written) as roff paragraphs."""
    parts: list[str] = []
    for block in inspect.cleandoc(help_text).split("\n\n"):
        if block.startswith("\b"):
            lines = block[1:].strip("\n")
            parts.append(".nf\n" + esc(lines) + "\n.fi")
        else:
            parts.append(esc(" ".join(block.split())))
    return "\n.PP\n".join(p for p in parts if p)


def _commands(
    ctx: click.Context, group: click.Group
) -> Iterator[tuple[click.Context, click.Command]]:
    """Every command under ``group``, depth first, each with its context (for its usage)."""
    for name in group.list_commands(ctx):
        cmd = group.get_command(ctx, name)
        if cmd is None or cmd.hidden:
            continue
        sub = click.Context(cmd, info_name=name, parent=ctx)
        yield sub, cmd
        if isinstance(cmd, click.Group):
            yield from _commands(sub, cmd)


def _options(ctx: click.Context, cmd: click.Command) -> list[str]:
    out = []
    for param in cmd.get_params(ctx):
        record = param.get_help_record(ctx)
        if record is None:
            continue
        names, help_text = record
        body = esc(" ".join(help_text.split())) or EMPTY
        out.append(f".TP\n.B {esc(names)}\n{body}")
    return out


def render(root: click.Group | None = None, *, date: str | None = None) -> str:
    """The roff source of dolmen(1)."""
    if root is None:
        from dolmen.cli.group import cli

        root = cli
    if date is None:
        epoch = os.environ.get("SOURCE_DATE_EPOCH", "")
        date = time.strftime("%Y-%m-%d", time.gmtime(int(epoch))) if epoch.isdigit() else ""
    ctx = click.Context(root, info_name="dolmen")
    lines = [
        f'.TH DOLMEN 1 "{date}" "dolmen {__version__}" "User Commands"',
        ".SH NAME",
        "dolmen \\- the DGX OS layer for any GPU Linux host: validate, tune, audit, run jobs",
        ".SH SYNOPSIS",
        ".B dolmen",
        "[\\fIOPTIONS\\fR] \\fICOMMAND\\fR [\\fIARGS\\fR]...",
        ".SH DESCRIPTION",
        _paragraphs(root.help or ""),
        ".SH OPTIONS",
        *_options(ctx, root),
        ".SH COMMANDS",
    ]
    for sub, cmd in _commands(ctx, root):
        path = sub.command_path.removeprefix("dolmen ")
        lines.append(f'.SS "{esc(path)}"')
        usage = " ".join(cmd.collect_usage_pieces(sub))
        lines.append(f".B dolmen {esc(path)}\n{esc(usage)}")
        if cmd.help:
            lines += [".PP", _paragraphs(cmd.help)]
        lines += _options(sub, cmd)
    lines.append(".SH EXIT STATUS")
    for code, meaning in EXIT_STATUS:
        lines.append(f".TP\n.B {code}\n{esc(meaning)}")
    lines.append(".SH FILES")
    for path, what in FILES:
        lines.append(f".TP\n.I {esc(path)}\n{esc(what)}")
    lines += [
        ".SH ENVIRONMENT",
        f".TP\n.B DOLMEN_CONFIG_DIR, DOLMEN_STATE_DIR\nmove {CONFIG} and {STATE}",
        ".TP\n.B DOLMEN_DEBUG\nas \\-\\-debug: a traceback with an error",
        ".SH SEE ALSO",
        "The documentation in the source tree: docs/ (validate, tune, audit, jobs, bench,"
        " exit codes, contracts).",
    ]
    return "\n".join(lines) + "\n"


@click.command()
@click.option(
    "-o", "--output", metavar="FILE", help="Write the page to FILE (dolmen.1) instead of stdout."
)
def manpage(output: str | None) -> None:
    """Write the man page dolmen(1) (roff), generated from the commands' own help.

    \b
    dolmen manpage -o dolmen.1 && man -l dolmen.1
    as root: dolmen manpage -o /usr/local/share/man/man1/dolmen.1
    """
    text = render()
    if output is None:
        sys.stdout.write(text)
        return
    from dolmen.fsutil import write_output

    write_output(Path(output), text.encode(), what="man page")


if __name__ == "__main__":  # python -m dolmen.cli.manpage [-o FILE]
    from dolmen.cli.main import main as _main

    sys.exit(_main(["manpage", *sys.argv[1:]]))

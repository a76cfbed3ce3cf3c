"""dolmen(1) from the CLI: every command of the tree is in the page, roff's special
characters are escaped, and a roff formatter (groff, else mandoc) reads it without a
warning. Writing it goes through fsutil.write_output (a regular file, never a folder)."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
from pathlib import Path

import click
import pytest

from dolmen.cli.main import main
from dolmen.cli.manpage import esc, render


def _paths(cmd: click.Command, path: str = "") -> list[str]:
    if not isinstance(cmd, click.Group):
        return [path]
    ctx = click.Context(cmd)
    out = [path] if path else []
    for name in cmd.list_commands(ctx):
        sub = cmd.get_command(ctx, name)
        assert sub is not None
        out += _paths(sub, f"{path} {name}".strip())
    return out


def test_every_command_has_its_section() -> None:
    from dolmen.cli.group import cli

    page = render(date="2026-12-01")
    sections = re.findall(r'^\.SS "(.*)"$', page, flags=re.M)
    assert sections == [esc(p) for p in _paths(cli)]
    assert {"validate", "tune plan", "jobs submit", "version", "completion"} <= {
        s.replace("\\-", "-") for s in sections
    }
    assert page.startswith('.TH DOLMEN 1 "2026-12-01" "dolmen ')
    for head in ("NAME", "SYNOPSIS", "DESCRIPTION", "OPTIONS", "COMMANDS", "EXIT STATUS"):
        assert f"\n.SH {head}\n" in page
    # no line of the page starts a request by accident (a help line beginning with '.')
    requests = {line.split()[0] for line in page.splitlines() if line.startswith((".", "'"))}
    assert requests <= {".TH", ".SH", ".SS", ".B", ".I", ".TP", ".PP", ".nf", ".fi"}


@pytest.mark.parametrize(
    ("text", "roff"),
    [
        ("--level", "\\-\\-level"),
        ("C:\\path", "C:\\epath"),
        (".hidden request", "\\&.hidden request"),
        ("'quoted start", "\\&'quoted start"),
        ("two\n.lines", "two\n\\&.lines"),
        ("", ""),
    ],
)
def test_roff_escapes(text: str, roff: str) -> None:
    assert esc(text) == roff


def test_the_date_is_reproducible(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("SOURCE_DATE_EPOCH", "1764547200")
    assert render().startswith('.TH DOLMEN 1 "2025-12-01"')
    monkeypatch.delenv("SOURCE_DATE_EPOCH")
    assert render().startswith('.TH DOLMEN 1 ""')


def test_a_formatter_reads_it_without_warnings(tmp_path: Path) -> None:
    page = tmp_path / "dolmen.1"
    assert main(["manpage", "-o", str(page)]) == 0
    if shutil.which("groff"):
        argv = ["groff", "-man", "-Tutf8", "-ww", "-z", str(page)]
    elif shutil.which("mandoc"):
        argv = ["mandoc", "-Tlint", "-Wwarning", str(page)]
    else:
        pytest.skip("neither groff nor mandoc is installed: the page is not formatted here")
    res = subprocess.run(argv, capture_output=True, text=True, timeout=60)
    assert res.returncode == 0 and res.stderr == "", res.stderr
    if shutil.which("man"):
        shown = subprocess.run(
            ["man", "-l", str(page)], capture_output=True, text=True, timeout=60,
            env={**os.environ, "MANPAGER": "cat", "MANWIDTH": "100"},
        )  # fmt: skip
        assert shown.returncode == 0 and "dolmen validate [OPTIONS]" in shown.stdout


def test_a_folder_is_not_replaced(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["manpage", "-o", str(tmp_path)]) == 2
    assert "dolmen: error:" in capsys.readouterr().err
    assert main(["manpage", "-o", str(tmp_path / "no" / "dolmen.1")]) != 0
    assert not (tmp_path / "no").exists()

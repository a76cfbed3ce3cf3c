"""``dolmen completion bash|zsh|fish``: click's scripts, and bash completing through them.

The bash test sources the generated script in a real bash and calls its function as
readline would (``COMP_WORDS``, ``COMP_CWORD``): the script calls ``dolmen`` back with
``_DOLMEN_COMPLETE=bash_complete``, and click answers from the command tree, so what is
checked is the whole round trip a user's TAB makes."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from dolmen.cli.completion import SHELLS, script
from dolmen.cli.main import main

SRC = Path(__file__).resolve().parents[2] / "src"


def test_each_shell_gets_clicks_script(capsys: pytest.CaptureFixture[str]) -> None:
    for shell in SHELLS:
        assert main(["completion", shell]) == 0
        out = capsys.readouterr().out
        assert out == script(shell) + ("" if script(shell).endswith("\n") else "\n")
        assert "_DOLMEN_COMPLETE" in out
    assert "complete -o nosort -F _dolmen_completion dolmen" in script("bash")
    assert "#compdef dolmen" in script("zsh")
    assert "complete --no-files --command dolmen" in script("fish")


def test_an_unknown_shell_exits_2_naming_the_choices(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["completion", "tcsh"]) == 2
    err = capsys.readouterr().err
    assert "'tcsh' is not one of 'bash', 'zsh', 'fish'" in err


@pytest.mark.parametrize("shell", SHELLS)
def test_the_script_parses_in_its_shell(tmp_path: Path, shell: str) -> None:
    exe = shutil.which(shell)
    if exe is None:
        pytest.skip(f"{shell} is not installed: its script's syntax is not checked here")
    path = tmp_path / f"dolmen.{shell}"
    path.write_text(script(shell))
    res = subprocess.run([exe, "-n", str(path)], capture_output=True, text=True, timeout=30)
    assert res.returncode == 0, res.stderr


def _complete(tmp_path: Path, *words: str) -> list[str]:
    """What bash's COMPREPLY holds after TAB on ``words`` (the last one being completed)."""
    bash = shutil.which("bash")
    if bash is None:
        pytest.skip("bash is not installed")
    bindir = tmp_path / "bin"
    bindir.mkdir(exist_ok=True)
    entry = bindir / "dolmen"  # what the console script does, with this checkout's dolmen
    entry.write_text(
        f"#!/bin/sh\nexec {sys.executable} -c "
        "'import sys; from dolmen.cli.main import main; sys.exit(main())' \"$@\"\n"
    )
    entry.chmod(0o755)
    (tmp_path / "dolmen.bash").write_text(script("bash"))
    quoted = " ".join(f"'{w}'" for w in words)  # '' : TAB after a space
    body = (
        f"source {tmp_path / 'dolmen.bash'}\n"
        f"COMP_WORDS=({quoted})\n"
        f"COMP_CWORD={len(words) - 1}\n"
        "_dolmen_completion dolmen\n"
        'printf "%s\\n" "${COMPREPLY[@]}"\n'
    )
    env = {
        **os.environ,
        "PATH": f"{bindir}:{os.environ.get('PATH', '')}",
        "PYTHONPATH": os.pathsep.join([str(SRC), os.environ.get("PYTHONPATH", "")]),
    }
    res = subprocess.run(
        [bash, "--norc", "--noprofile", "-c", body],
        capture_output=True, text=True, timeout=60, env=env,
    )  # fmt: skip
    assert res.returncode == 0, res.stderr
    return [line for line in res.stdout.splitlines() if line]


def test_bash_completes_a_command(tmp_path: Path) -> None:
    assert _complete(tmp_path, "dolmen", "va") == ["validate"]
    assert _complete(tmp_path, "dolmen", "completion", "") == ["bash", "zsh", "fish"]


def test_bash_completes_subcommands_and_options(tmp_path: Path) -> None:
    assert "plan" in _complete(tmp_path, "dolmen", "tune", "pl")
    assert _complete(tmp_path, "dolmen", "validate", "--lev") == ["--level"]
    assert _complete(tmp_path, "dolmen", "validate", "--level", "q") == ["quick"]

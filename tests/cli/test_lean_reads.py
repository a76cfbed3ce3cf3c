"""``dolmen nccl env`` and ``dolmen topo`` through the lean entry (cli/lean.py ``READS``, no
click) and through click give the same output and exit code for every invocation the lean
entry accepts, on the rails scenario, a pasted ``lspci -vvv``, hostile and missing trees;
everything else (help, --write, pictures, repeated or unknown options) goes through click;
the lean run imports no click."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from dolmen.cli.lean import parse_read
from dolmen.cli.main import main
from tests.cli.test_validate import _fresh_python
from tests.conftest import make_tree, recording
from tests.hosts import scenarios

ESC = "\x1b[31mbad"  # an interface name a hostile bundle could hold
ROUTE = "Iface\tDestination\tGateway \tFlags\tRefCnt\tUse\tMetric\tMask\t\tMTU\tWindow\tIRTT\n"


@pytest.fixture(scope="module")
def trees(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    base = tmp_path_factory.mktemp("reads")
    return {
        "rails": scenarios.build("h100-hgx-rails", base / "rails"),
        "cpu": scenarios.build("vm-cpu-only", base / "cpu"),
        "empty": make_tree(base / "empty"),
        "escape": make_tree(
            base / "escape",
            files={
                "proc/net/route": f"{ROUTE}{ESC}\t00000000\t0100000A\t0003\t0\t0\t100\t00000000\t0\t0\t0\n",
                f"sys/class/net/{ESC}/operstate": "up\n",
                f"sys/class/net/{ESC}/type": "1\n",
            },
        ),
        "missing": base / "nope",
    }


def _run(capsys: pytest.CaptureFixture[str], argv: list[str], lean: bool) -> tuple[int, str, str]:
    rc = main(argv, lean=lean)
    out, err = capsys.readouterr()
    # a pasted file opens in a fresh temporary folder each time
    return rc, re.sub(r"dolmen-paste-\w+", "<tmp>", out), err


LEAN = [
    ["nccl", "env", "--from", "{rails}"],
    ["nccl", "env", "--from={rails}", "--json"],
    ["nccl", "env", "--export", "--from", "{rails}"],
    ["nccl", "env", "--json", "--export", "--from", "{rails}"],
    ["--debug", "nccl", "env", "--from", "{cpu}"],
    ["nccl", "env", "--from", "{cpu}", "--export"],
    ["nccl", "env", "--from", "{empty}", "--json"],
    ["nccl", "env", "--from", "{escape}"],
    ["nccl", "env", "--from", "{escape}", "--export"],
    ["nccl", "env", "--from", "{missing}"],
    ["nccl", "env", "--from", "{lspci}", "--json"],
    ["topo", "--from", "{rails}"],
    ["topo", "--from", "{rails}", "--json"],
    ["topo", "--json", "--from={lspci}"],
    ["topo", "--from", "{lspci}"],
    ["topo", "--from", "{cpu}"],
    ["topo", "--from", "{empty}", "--json"],
    ["topo", "--from", "{missing}"],
]


@pytest.mark.parametrize("argv", LEAN, ids=lambda a: " ".join(a))
def test_lean_and_click_agree(
    argv: list[str], trees: dict[str, Path], capsys: pytest.CaptureFixture[str]
) -> None:
    named = (
        {**trees, "lspci": recording("lspci/gpud__lspci-vvv")} if "{lspci}" in str(argv) else trees
    )
    args = [re.sub(r"\{(\w+)\}", lambda m: str(named[m.group(1)]), a) for a in argv]
    assert parse_read(args) is not None, "the lean entry should take this invocation"
    lean = _run(capsys, args, lean=True)
    assert lean == _run(capsys, args, lean=False)
    assert "\x1b" not in lean[1]  # click strips the escape when stdout is no terminal
    assert lean[1] or lean[2]


@pytest.mark.parametrize(
    "argv",
    [
        ["nccl"],
        ["nccl", "env", "--help"],
        ["nccl", "env", "-h"],
        ["nccl", "env", "--write"],
        ["nccl", "env", "--write", "--root", "x"],
        ["nccl", "env", "--yes"],
        ["nccl", "env", "--from", "a", "--from", "b"],
        ["nccl", "env", "--from"],
        ["nccl", "env", "--from="],
        ["nccl", "env", "--from", "--json"],
        ["nccl", "env", "--json", "--json"],
        ["nccl", "env", "--json=1"],
        ["nccl", "env", "extra"],
        ["nccl", "env", "--", "--json"],
        ["nccl", "topo", "-o", "x"],
        ["nccl", "--debug", "env"],
        ["topo", "--svg", "x.svg"],
        ["topo", "--png=x.png"],
        ["topo", "--export"],
        ["topology"],
        ["validate", "--level", "quick"],
    ],
)
def test_anything_else_goes_through_click(argv: list[str]) -> None:
    assert parse_read(argv) is None


def test_the_arguments_are_the_bodies_own(monkeypatch: pytest.MonkeyPatch) -> None:
    assert parse_read(["nccl", "env"]) == (
        "dolmen.cli.nccl_run:show_env",
        {"source": None, "as_json": False, "as_shell": False},
    )
    assert parse_read(["--debug", "topo", "--json", "--from", "t"]) == (
        "dolmen.cli.topo_run:show_topo",
        {"source": "t", "as_json": True},
    )
    monkeypatch.setenv("DOLMEN_DEBUG", "maybe")  # click rejects it: its message, not ours
    assert parse_read(["topo"]) is None


def test_the_lean_reads_import_no_click(trees: dict[str, Path]) -> None:
    code = (
        "import sys\nfrom dolmen.cli.main import main\n"
        f"rcs = [main(['nccl', 'env', '--from', {str(trees['rails'])!r}]),"
        f" main(['topo', '--from', {str(trees['rails'])!r}, '--json'])]\n"
        "print(rcs, 'click' in sys.modules)\n"
    )
    assert _fresh_python(code).splitlines()[-1] == "[0, 0] False"

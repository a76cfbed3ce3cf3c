"""``validate --matrix``, ``--status`` and ``--gpu`` through both entries (cli/lean.py without
click, and click): the same output and exit code, bad words refused with the valid choices
and the usage exit code (2), the machine outputs never filtered."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from dolmen.cli.lean import parse
from dolmen.cli.main import main
from dolmen.errors import ExitCode
from tests.hosts import scenarios


@pytest.fixture(scope="module")
def tree(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return scenarios.build("h100-xid79", tmp_path_factory.mktemp("view") / "tree")


def _run(capsys: pytest.CaptureFixture[str], argv: list[str], lean: bool) -> tuple[int, str, str]:
    rc = main(argv, lean=lean)
    out, err = capsys.readouterr()
    return rc, re.sub(r"\d+\.\d+ s\b", "<t> s", out), err


QUICK = ["validate", "--level", "quick", "--from", "{T}"]
CASES = {
    "status fail": (["--status", "fail"], 1, "listed: status fail (3 of"),
    "status fail,warn spelled with =": (["--status=FAIL,warn"], 1, "listed: status fail,warn"),
    "gpu by index": (["--gpu", "3"], 1, "listed: GPU 00000000:86:00.0 (19 of"),
    "gpu by bus id": (["--gpu", "0000:86:00.0", "--status", "unknown"], 1, "15 checks of GPU 3"),
    "matrix": (["--matrix"], 1, "GPU                              0  1  2  3  4  5  6  7"),
    "bad status word": (["--status", "fail,bad"], 2, "valid: fail, error, unknown, warn"),
    "empty status list": (["--status", ","], 2, "--status: unknown status"),
    "no such GPU": (["--gpu", "9"], 2, "GPUs here: 0, 1, 2, 3, 4, 5, 6, 7"),
    "not a GPU word": (["--gpu", "three"], 2, "neither a GPU index nor a PCI bus id"),
    "matrix with --json": (["--matrix", "--json"], 2, "--json and --npd always carry every"),
    "status with --npd": (["--status", "fail", "--npd"], 2, "--json and --npd always carry"),
}


@pytest.mark.parametrize(("extra", "rc", "said"), CASES.values(), ids=CASES.keys())
def test_both_entries_agree(
    tree: Path,
    capsys: pytest.CaptureFixture[str],
    extra: list[str],
    rc: int,
    said: str,
) -> None:
    argv = [a.replace("{T}", str(tree)) for a in QUICK] + extra
    assert parse(argv) is not None, "the lean entry should take this invocation"
    lean = _run(capsys, argv, lean=True)
    assert lean == _run(capsys, argv, lean=False)
    assert lean[0] == rc
    assert said in lean[1] + lean[2]
    if rc == ExitCode.UNDECIDED:
        assert lean[1] == "" and lean[2].startswith("dolmen: error: --")  # one line, no report


def test_the_filter_never_changes_the_verdict(
    tree: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """--status pass on an unhealthy host lists passes and still says UNHEALTHY, exit 1."""
    argv = [a.replace("{T}", str(tree)) for a in QUICK] + ["--status", "pass", "--gpu", "0"]
    rc, out, _ = _run(capsys, argv, lean=True)
    assert rc == 1 and "UNHEALTHY" in out and "FAIL  " not in out
    assert "PASS  gpu.ecc.mode  gpu:00000000:53:00.0" in out


def test_an_empty_status_is_refused_not_ignored(
    tree: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """``--status ""`` (the lean entry hands an empty value to click) is not ignored: it is
    the same usage error as a bad word."""
    argv = [a.replace("{T}", str(tree)) for a in QUICK] + ["--status", ""]
    assert parse(argv) is None
    rc, out, err = _run(capsys, argv, lean=True)
    assert rc == 2 and out == "" and "--status: unknown status ''" in err

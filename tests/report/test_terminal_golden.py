"""The terminal report of every scenario (tests/hosts), as golden text: at 80, 120 and 200
columns, piped (plain lines), and the --matrix view. The text is the product: review the diff
of tests/report/golden/ by eye when it changes (``pytest --update-golden`` rewrites it).

Each scenario is built and judged once (module scope); the renderings are pure functions of
the verdict, so the whole file costs about one validate per scenario.
"""

from __future__ import annotations

import io
import re
from pathlib import Path

import pytest
from rich.console import Console

from dolmen.checks.model import Level
from dolmen.checks.suite import validate
from dolmen.checks.verdict import Verdict
from dolmen.host import open_host
from dolmen.report.terminal import Options, render_terminal, report_lines
from dolmen.values.text import printable
from tests.hosts import scenarios

GOLDEN = Path(__file__).parent / "golden"
MODES = {"80": 80, "120": 120, "200": 200, "plain": None}
NAMES = scenarios.names()


@pytest.fixture(scope="module")
def verdicts(tmp_path_factory: pytest.TempPathFactory) -> dict[str, tuple[Verdict, Path]]:
    out: dict[str, tuple[Verdict, Path]] = {}
    for name in NAMES:
        root = scenarios.build(name, tmp_path_factory.mktemp(name) / "tree")
        with open_host(root) as host:
            out[name] = (validate(host, level=Level.STANDARD, config=scenarios.config(name)), root)
    return out


def _text(v: Verdict, root: Path, width: int | None, opts: Options | None = None) -> str:
    text = "\n".join(line.plain for line in report_lines(v, width, opts)) + "\n"
    return re.sub(r"\b\d+\.\d\d s\)", "<t> s)", text.replace(str(root), "<root>"))


def _golden(request: pytest.FixtureRequest, name: str, text: str) -> None:
    path = GOLDEN / name
    if request.config.getoption("--update-golden"):
        path.parent.mkdir(exist_ok=True)
        path.write_text(text)
    if not path.exists():
        pytest.fail(f"no golden {path.name}: run pytest --update-golden and review it")
    assert text == path.read_text()


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("name", NAMES)
def test_report_matches_its_golden(
    verdicts: dict[str, tuple[Verdict, Path]], name: str, mode: str, request: pytest.FixtureRequest
) -> None:
    v, root = verdicts[name]
    _golden(request, f"{name}-{mode}.txt", _text(v, root, MODES[mode]))


@pytest.mark.parametrize("name", NAMES)
def test_matrix_matches_its_golden(
    verdicts: dict[str, tuple[Verdict, Path]], name: str, request: pytest.FixtureRequest
) -> None:
    v, root = verdicts[name]
    _golden(request, f"{name}-matrix.txt", _text(v, root, 120, Options(matrix=True)))


@pytest.mark.parametrize("width", [80, 120, 200])
@pytest.mark.parametrize("name", NAMES)
def test_identifiers_are_never_cut(
    verdicts: dict[str, tuple[Verdict, Path]], name: str, width: int
) -> None:
    """With -v every check id and subject is printed whole, on one line, at every width;
    a line runs past the width only for a word that cannot be broken."""
    v, root = verdicts[name]
    lines = _text(v, root, width, Options(verbose=True)).splitlines()
    for f in v.findings:
        for ident in (f.check, printable(f.subject)):
            assert any(ident in line for line in lines), ident
    for line in lines:
        if len(line) > width:
            words = line.split()
            assert max(len(w) for w in words) > width // 3 or line.startswith(
                ("FAIL", "WARN", "UNKNOWN", "ERROR", "PASS", "SKIP", "  ")
            ), line
    assert not any(line != line.rstrip() for line in lines)  # no padding


@pytest.mark.parametrize("width", [80, 200])
def test_a_terminal_and_a_pipe_print_what_report_lines_says(
    verdicts: dict[str, tuple[Verdict, Path]], width: int
) -> None:
    """rich adds nothing: no wrapping, no padding to the width, no markup; a Console that is
    not a terminal (a pipe, a file) gets the plain lines whatever its width."""
    v, _ = verdicts["h100-xid79"]
    tty, pipe = io.StringIO(), io.StringIO()
    render_terminal(v, Console(file=tty, width=width, force_terminal=True, color_system=None))
    render_terminal(v, Console(file=pipe, width=width, color_system=None))
    assert tty.getvalue() == "\n".join(line.plain for line in report_lines(v, width)) + "\n"
    assert pipe.getvalue() == "\n".join(line.plain for line in report_lines(v, None)) + "\n"

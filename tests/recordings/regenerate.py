"""Rewrite tests/recordings/today.py from a run of the recordings table: ``python -m
tests.recordings.regenerate`` (from the repository root, ``PYTHONPATH=src``).

It runs tests/test_recordings_alone.py with ``--runxfail`` (the marks ignored, so every
case shows what it does today) and rewrites the marks: a case that still fails keeps its
reason, a case that passes leaves its group (an empty group goes), a case that fails and
had no mark gets ``NEW`` and the start of its failure, to be reviewed and given the
issue-8 item that owns it. ``--check`` writes nothing and exits 1 when today.py is stale.

Review the diff before committing: a mark dropped is a case that now reaches the file's
conclusion; a mark added is a regression or a case the table did not hold before.
"""

from __future__ import annotations

import argparse
import difflib
import json
import sys
from collections.abc import Mapping
from pathlib import Path

import pytest

from tests.recordings import today

TODAY = Path(today.__file__)
TABLE = Path(__file__).resolve().parents[1] / "test_recordings_alone.py"
NEW = "NEW, to review (name the issue-8 item that owns it)"
# test function -> (key of today.XFAIL, the variable today.py names it by)
GROUPS: Mapping[str, tuple[str, str]] = {
    "test_under_key": ("under_key", "UNDER_KEY"),
    "test_bare_from_file": ("bare", "BARE"),
    "test_driver_loaded": ("driver_loaded", "DRIVER_LOADED"),
    "test_nothing_invented": ("nothing_invented", "NOTHING_INVENTED"),
    "test_absence_named": ("absence_named", "ABSENCE_NAMED"),
}
_HEADER = '''"""The cases whose conclusion validate does not reach today, per test function, grouped
by the reason: the issue-8 item (and the check) that owns them. Written by ``python -m
tests.recordings.regenerate`` (a run with ``--runxfail``: a case that passes leaves its group,
a still-failing one keeps its reason, a new failure comes in as "NEW, to review"); review its
diff, name the owner of each new one. The marks are strict: when a change makes a case pass,
its id must leave its group here (run the regenerator)."""

from __future__ import annotations


def _by_reason(groups: dict[str, tuple[str, ...]]) -> dict[str, str]:
    return {case: reason for reason, cases in groups.items() for case in cases}

'''


class Outcomes:
    """A pytest plugin that notes, per test function, the ids of the cases that failed (in
    the order the table runs them) and the start of each failure."""

    def __init__(self) -> None:
        self.failed: dict[str, dict[str, str]] = {key: {} for key, _ in GROUPS.values()}
        self.ran = 0

    def pytest_runtest_logreport(self, report: pytest.TestReport) -> None:
        name, _, rest = report.nodeid.partition("::")[2].partition("[")
        if name not in GROUPS or not rest.endswith("]"):
            return
        if report.when == "call":
            self.ran += 1
        if report.failed:
            crash = getattr(report.longrepr, "reprcrash", None)
            message = getattr(crash, "message", "") or str(report.longrepr)
            first = " ".join(message.split())[:160]
            self.failed[GROUPS[name][0]].setdefault(rest[:-1], first)


def marks(
    failed: Mapping[str, Mapping[str, str]], old: Mapping[str, Mapping[str, str]]
) -> dict[str, dict[str, tuple[str, ...]]]:
    """Per test key, reason -> ids: old reasons kept for ids still failing (in their old
    order of reasons), new failures grouped under ``NEW`` and what they failed with."""
    out: dict[str, dict[str, tuple[str, ...]]] = {}
    for key, ids in failed.items():
        before = old.get(key, {})
        groups: dict[str, list[str]] = {reason: [] for reason in dict.fromkeys(before.values())}
        for case, message in ids.items():
            reason = before.get(case) or f"{NEW}: {message}"
            groups.setdefault(reason, []).append(case)
        out[key] = {reason: tuple(cases) for reason, cases in groups.items() if cases}
    return out


def render(groups: Mapping[str, Mapping[str, tuple[str, ...]]]) -> str:
    """today.py's text for ``groups`` (test key -> reason -> ids), as ruff formats it."""
    parts = [_HEADER]
    for key, name in GROUPS.values():
        by_reason = groups.get(key, {})
        if not by_reason:
            parts.append(f"\n{name} = _by_reason({{}})\n")
            continue
        lines = [f"\n{name} = _by_reason(\n", "    {\n"]
        for reason, cases in by_reason.items():
            lines.append(f"        {_quote(reason)}: (\n")
            lines += [f"            {_quote(case)},\n" for case in cases]
            lines.append("        ),\n")
        lines += ["    }\n", ")\n"]
        parts.append("".join(lines))
    xfail = "".join(f'    "{key}": {name},\n' for key, name in GROUPS.values())
    parts.append(f"\nXFAIL: dict[str, dict[str, str]] = {{\n{xfail}}}\n")
    return "".join(parts)


def _quote(text: str) -> str:
    return json.dumps(text, ensure_ascii=False)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m tests.recordings.regenerate")
    ap.add_argument("--check", action="store_true", help="write nothing; exit 1 when stale")
    args = ap.parse_args(argv)
    seen = Outcomes()
    rc = pytest.main(
        [str(TABLE), "--runxfail", "-q", "-p", "no:cacheprovider", "--no-header", "-rN"],
        plugins=[seen],
    )
    if rc not in (pytest.ExitCode.OK, pytest.ExitCode.TESTS_FAILED) or not seen.ran:
        print(f"the table did not run through (pytest exit {rc}): today.py left as it is")
        return 2
    text = render(marks(seen.failed, today.XFAIL))
    old = TODAY.read_text()
    if text == old:
        print(f"{TODAY}: up to date ({seen.ran} cases run)")
        return 0
    sys.stdout.writelines(difflib.unified_diff(old.splitlines(True), text.splitlines(True)))
    if args.check:
        return 1
    part = TODAY.with_suffix(".py.part")  # whole or not at all
    part.write_text(text)
    part.replace(TODAY)
    print(f"{TODAY}: rewritten ({seen.ran} cases run): review the diff above")
    return 0


if __name__ == "__main__":
    sys.exit(main())

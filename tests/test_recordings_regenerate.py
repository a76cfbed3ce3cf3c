"""tests/recordings/regenerate.py: the marks it keeps, drops and adds, and that today.py is
in the form it writes (so a regeneration diff shows only changed marks)."""

from __future__ import annotations

from tests.recordings import regenerate, today


def _groups(xfail: dict[str, dict[str, str]]) -> dict[str, dict[str, tuple[str, ...]]]:
    out: dict[str, dict[str, tuple[str, ...]]] = {}
    for key, marks in xfail.items():
        by: dict[str, list[str]] = {}
        for case, reason in marks.items():
            by.setdefault(reason, []).append(case)
        out[key] = {reason: tuple(cases) for reason, cases in by.items()}
    return out


def test_today_is_in_the_regenerators_form() -> None:
    assert regenerate.render(_groups(today.XFAIL)) == regenerate.TODAY.read_text()


def test_marks_keep_still_failing_drop_passing_and_add_new() -> None:
    old = {"under_key": {"a": "owner 1", "b": "owner 1", "c": "owner 2"}, "bare": {"d": "x"}}
    failed = {"under_key": {"b": "AssertionError", "e": "assert not ['fail gpu.xid']"}, "bare": {}}
    got = regenerate.marks(failed, old)
    assert got == {
        "under_key": {
            "owner 1": ("b",),  # a passes now: gone; owner 2's only case passes: group gone
            f"{regenerate.NEW}: assert not ['fail gpu.xid']": ("e",),
        },
        "bare": {},
    }


def test_render_reads_back() -> None:
    groups = {"under_key": {'say "it" \\ once': ("x#1", "y")}, "absence_named": {}}
    space: dict[str, object] = {}
    exec(compile(regenerate.render(groups), "today", "exec"), space)
    assert space["XFAIL"] == {
        "under_key": {"x#1": 'say "it" \\ once', "y": 'say "it" \\ once'},
        "bare": {},
        "driver_loaded": {},
        "nothing_invented": {},
        "absence_named": {},
    }

"""The plan table folds rows that differ only by a number (224 CPU governors are one row)."""

from __future__ import annotations

from dolmen.tune.render import _grouped, _ranges


def test_ranges() -> None:
    assert _ranges([0, 1, 2, 3]) == "0-3"
    assert _ranges([0, 2, 3, 7]) == "0,2-3,7"
    assert _ranges([5]) == "5"


def test_rows_fold_only_when_everything_but_the_number_agrees() -> None:
    from dolmen.tune.model import Action, Change, Target

    def cpu(n: int, current: str) -> Change:
        return Change(
            Target("cpu", "governor", f"cpu{n} governor", "performance"), current, Action.OK
        )

    rows = _grouped(
        [cpu(0, "performance"), cpu(1, "performance"), cpu(2, "powersave"), cpu(3, "performance")]
    )
    shown = [(c.current, name) for c, name in rows]
    assert shown == [("performance", "cpu0-1,3 governor"), ("powersave", "cpu2 governor")]

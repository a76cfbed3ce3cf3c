"""``parallel_map``: results in order, the first error raised in the caller."""

from __future__ import annotations

import pytest

from dolmen.integrity.pool import parallel_map


@pytest.mark.parametrize("workers", [1, 2, 7])
def test_results_keep_the_order(workers: int) -> None:
    items = list(range(500))
    assert parallel_map(lambda x: x * x, items, workers) == [x * x for x in items]
    assert parallel_map(lambda x: x, [], workers) == []


def test_an_error_is_raised_in_the_caller() -> None:
    def boom(x: int) -> int:
        if x == 123:
            raise OSError("disk on fire")
        return x

    with pytest.raises(OSError, match="disk on fire"):
        parallel_map(boom, list(range(1000)), 4)

"""The kit's one ordering of rows: preferred rows first, each part shuffled by the template's ``rng``."""

from __future__ import annotations

import random

from arena.authoring import nth, shuffled


def test_shuffled_puts_the_preferred_rows_first_and_nth_reads_the_plain_order() -> None:
    rows = list(range(20))
    order = shuffled(random.Random(3), rows, prefer=lambda r: r % 4 == 0)
    assert sorted(order[:5]) == [0, 4, 8, 12, 16] and sorted(order[5:]) == [r for r in rows if r % 4]
    assert order != shuffled(random.Random(4), rows, prefer=lambda r: r % 4 == 0)
    plain = shuffled(random.Random(3), rows)
    assert sorted(plain) == rows and plain != rows
    assert [nth(rows, random.Random(3), i) for i in range(21)] == [*plain, plain[0]]
    assert nth([], random.Random(3), 0) is None

"""A template asks the kit's search, word by word, whether the name it writes finds its record alone."""

from __future__ import annotations

import sqlite3

from arena.authoring import finds_only, index_row, write_index


def test_a_name_a_longer_namesake_also_holds_does_not_find_its_record_alone() -> None:
    conn = sqlite3.connect(":memory:")
    write_index(conn, [index_row("quote", {"id": "Q-1"}, "Initech Labs - Renewal 2024"),
                       index_row("quote", {"id": "Q-2"}, "Initech Labs LLC - Renewal 2024"),
                       index_row("quote", {"id": "Q-3"}, "Umbrella Systems - Renewal 2024")])
    assert not finds_only(conn, "quote", "Initech Labs - Renewal 2024", "Q-1")
    assert finds_only(conn, "quote", "Initech Labs LLC - Renewal 2024", "Q-2")
    assert finds_only(conn, "quote", "umbrella SYSTEMS renewal", "Q-3")
    assert not finds_only(conn, "quote", "Umbrella Systems - Renewal 2024", "Q-1")

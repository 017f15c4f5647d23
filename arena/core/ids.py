"""Record ids as a pack's own world writes them, found in a reply however they are spelled.

A world's record ids are the text primary keys of its tables that hold a letter and a digit (``ORD-10234``,
``PAY-112``, ``FX-EUR-202501``, ``POL-30001-1``). ``RecordIds`` keeps them (as skeletons: see
``arena.core.text.skeleton``) and ``id_formats`` writes the regular expression of their formats, one per table:
each letter part as the literals the table uses (a class of letters only when the table uses many and its
digits are long), each digit part as the digit counts it uses. ``ids_in`` finds ids in a text through every
view of it (``arena.core.text.views``): a run of tokens that spells a known id, or one whose letters and digits
have an id's format, whatever separates them.
"""

from __future__ import annotations

import re
import sqlite3
from collections import defaultdict
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

from arena.core import patterns
from arena.core.text import MAX_GAP, compact, fold, skeleton, tokens, views

ID_SHAPE = re.compile(r"^(?=[^\s]*[A-Za-z])(?=[^\s]*\d)[A-Za-z0-9]+(?:[-_./:][A-Za-z0-9]+)*$")
"""What a record id looks like: letters and digits (at least one of each), parts joined by ``-_./:``."""

_PARTS = re.compile(r"[A-Za-z]+|\d+")

MAX_LITERALS = 64
"""Most distinct letter parts written as literals; a table with more gets a class of letters."""

MIN_DIGITS_FOR_CLASS = 4
"""Digits an id needs at least before its letters may be any letters (``ab-1`` would match ordinary words)."""

SKIPPED_TABLES = frozenset({"_gymloop_changes", "sqlite_sequence"})
"""Tables that hold no records."""


@dataclass(frozen=True)
class RecordIds:
    """The record ids of one world.

    Attributes:
        skeletons: Each id's skeleton, mapped to the id as the world writes it.
        longest: Characters of the longest id written compact.
        starts: Skeletons of the ids' leading letter parts and of their prefixes: a run of tokens can spell an id
            only from a token that is one of these or begins with one (a cheap filter for the hidden views).
    """

    skeletons: dict[str, str] = field(default_factory=dict)
    longest: int = 0
    starts: frozenset[str] = frozenset()


def world_ids(conn: sqlite3.Connection) -> dict[str, list[str]]:
    """Every text primary-key value of ``conn``'s tables that looks like an id (see ``ID_SHAPE``), by table."""
    found: dict[str, list[str]] = {}
    tables = [r[0] for r in conn.execute("SELECT name FROM sqlite_master WHERE type = 'table' ORDER BY name")
              if r[0] not in SKIPPED_TABLES and not r[0].startswith("sqlite_")]
    for table in tables:
        keys = [r[1] for r in conn.execute(f'PRAGMA table_info("{table}")') if r[5]]
        if len(keys) != 1:
            continue
        values = [v for (v,) in conn.execute(f'SELECT "{keys[0]}" FROM "{table}"')
                  if isinstance(v, str) and ID_SHAPE.match(v)]
        if values:
            found[table] = values
    return found


def record_ids(ids: Iterable[str]) -> RecordIds:
    """Index ``ids`` by skeleton."""
    skeletons = {skeleton(compact(i)): i for i in ids}
    heads = {skeleton(m.group(0).casefold()) for i in skeletons.values() if (m := _PARTS.match(i))}
    starts = frozenset(head[:k] for head in heads for k in range(1, len(head) + 1))
    return RecordIds(skeletons=skeletons, longest=max((len(s) for s in skeletons), default=0), starts=starts)


def id_formats(ids_by_table: dict[str, list[str]]) -> str | None:
    """The regular expression of a world's id formats (see ``world_ids``), over ids written compact.

    Letter parts are written as the literals each table uses; when that makes a pattern longer than a pack may
    carry (``arena.core.patterns``), as classes of letters (tables with few digits are then left out: their ids
    are still found as the world's own). Returns ``None`` when the world has no ids or no pattern fits.
    """
    shapes: dict[tuple[str, tuple[str, ...]], list[list[str]]] = defaultdict(list)
    for table, values in ids_by_table.items():
        for value in values:
            parts = _PARTS.findall(value.casefold())
            shapes[(table, tuple("d" if p[0].isdigit() else "l" for p in parts))].append(parts)
    for literals in (MAX_LITERALS, 0):
        formats = sorted({f for (_, kinds), values in shapes.items()
                          if (f := _format(kinds, values, literals)) is not None})
        joined = "|".join(f"(?:{f})" for f in formats)
        if len(joined) <= patterns.MAX_PATTERN_LENGTH - 4 and _runs(joined):
            return joined or None
    return None


def _runs(pattern: str) -> bool:
    """Whether the pattern compiles within the limits every pack pattern meets (``arena.core.patterns``)."""
    try:
        patterns.compile_pattern("(?i)" + pattern)
    except patterns.PatternError:
        return False
    return True


def _format(kinds: tuple[str, ...], values: list[list[str]], max_literals: int) -> str | None:
    digits = sum(min(len(v[i]) for v in values) for i, k in enumerate(kinds) if k == "d")
    out = []
    for i, kind in enumerate(kinds):
        column = [v[i] for v in values]
        lengths = sorted({len(c) for c in column})
        if kind == "d":
            out.append(rf"\d{{{lengths[0]},{lengths[-1]}}}")
            continue
        literals = sorted(set(column))
        if len(literals) <= max_literals:
            out.append("(?:" + "|".join(re.escape(x) for x in literals) + ")")
        elif digits >= MIN_DIGITS_FOR_CLASS:
            out.append(rf"[a-z]{{{lengths[0]},{lengths[-1]}}}")
        else:
            return None
    return "".join(out)


def spelled_in(text: str, targets: dict[str, str], longest: int, pattern: str | None = None, *,
               number_points: bool = True, hidden: bool = True,
               starts: frozenset[str] | None = None) -> dict[str, str]:
    r"""The values of ``targets`` (and the matches of ``pattern``) that ``text`` spells, however it spells them.

    Returns each found value's compact form mapped to how it is shown: a target as ``targets`` writes it, a
    match of ``pattern`` in upper case.

    Args:
        text: The text searched.
        targets: Values by skeleton (``skeleton(compact(value))``), each found as any run of tokens with that
            skeleton.
        longest: Longest run tried, in characters written compact.
        pattern: A regular expression, matched case-insensitively against each view as it stands (a pattern
            written for the raw form, such as ``[A-Z]{3}-\d+``) and against each run of tokens written compact
            (the form ``id_formats`` writes).
        number_points: Keep the points and commas inside numbers in runs (see ``arena.core.text.tokens``).
        hidden: Search every view of the text (``arena.core.text.views``: reversed, ROT13, decoded), not only
            the text folded (``False`` for gymloop's own text, such as tool outputs).
        starts: The targets' leading parts (``RecordIds.starts``): the reversed and ROT13 views are then searched
            for targets only, from the tokens that can begin one (``pattern`` matches there are not records).
    """
    regex = patterns.compile_pattern(patterns.case_insensitive(pattern)) if pattern else None
    found: dict[str, str] = {}
    for kind, view in views(text) if hidden else (("plain", fold(text)),):
        hidden_view = kind in ("reversed", "rot13")
        formats = None if hidden_view and starts is not None or kind == "rot13" else regex
        if formats is not None:
            for match in formats.finditer(view):
                if compact(match.group(0)):
                    found.setdefault(compact(match.group(0)), match.group(0).upper())
        found_runs = _runs_in(tokens(view, number_points=number_points), targets, longest, formats,
                              starts if hidden_view else None)
        for key, shown in found_runs.items():
            found.setdefault(key, shown)
    return found



def _runs_in(found: list[tuple[str, int, int]], targets: dict[str, str], longest: int,
             regex: Any, starts: frozenset[str] | None = None) -> dict[str, str]:
    """The targets (by skeleton) and the format's matches among the runs of consecutive tokens."""
    hits: dict[str, str] = {}
    skeletons: list[str | None] = [None] * len(found)

    def shape_of(i: int) -> str:
        known = skeletons[i]
        if known is None:
            known = skeletons[i] = skeleton(found[i][0])
        return known

    widths = sorted({len(s) for s in starts}) if starts else []
    for i, (first, _, end) in enumerate(found):
        if len(first) > longest:
            continue
        if starts is not None and not any(shape_of(i)[:w] in starts for w in widths):
            continue
        run, shape = first, shape_of(i)
        j = i
        while True:
            if (hit := targets.get(shape)) is not None:
                hits.setdefault(compact(hit), hit)
            elif regex is not None and regex.fullmatch(run):
                hits.setdefault(run, run.upper())
            j += 1
            if j >= len(found):
                break
            token, start, token_end = found[j]
            if start - end > MAX_GAP or len(run) + len(token) > longest:
                break
            run, shape, end = run + token, shape + shape_of(j), token_end
    return hits


def ids_in(text: str, pattern: str | None, known: RecordIds | None = None, *,
           hidden: bool = True) -> dict[str, str]:
    """The ids ``text`` names (compact form to how it is shown): the world's ids by skeleton, others by ``pattern``.

    ``hidden`` searches the text's reversed, ROT13 and decoded views too (see ``spelled_in``).
    """
    longest = known.longest if known and known.longest else 24
    return spelled_in(text, known.skeletons if known else {}, longest, pattern, hidden=hidden,
                      starts=known.starts if known else None)

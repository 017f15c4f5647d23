"""Record ids as a pack's own world writes them, found in a reply however they are spelled.

A world's record ids are the text primary keys of its tables that hold a letter and a digit (``ORD-10234``,
``PAY-112``, ``FX-EUR-202501``, ``POL-30001-1``). ``RecordIds`` keeps them (as skeletons: see
``arena.core.text.skeleton``) and ``id_formats`` writes the regular expression of their formats, one per table:
each letter part as the literals the table uses (a class of letters only when the table uses many and its
digits are long), each digit part as the digit counts it uses. ``ids_in`` finds ids in a text through every
view of it (``arena.core.text.views``): a run of tokens that spells a known id, or one whose letters and digits
have an id's format, whatever separates them.

A world's ids are found once (``stored_world_ids``, by the serialized world) and shared by the pack's guarded tasks
and every gym that plays it; each table's index is kept too, for worlds of the same gym at other seeds.
"""

from __future__ import annotations

import bisect
import codecs
import re
import sqlite3
from collections import defaultdict
from collections.abc import Iterable
from dataclasses import dataclass, field
from functools import cached_property, lru_cache
from typing import Any

from arena.core import patterns
from arena.core.text import MAX_GAP, compact, compact_all, fold, skeleton, tokens, views, words
from arena.core.values import dates_in, number_words_in

ID_SHAPE = re.compile(r"^(?=[^\s]*[A-Za-z])(?=[^\s]*\d)[A-Za-z0-9]+(?:[-_./:][A-Za-z0-9]+)*$")
"""What a record id looks like: letters and digits (at least one of each), parts joined by ``-_./:``."""

_ID_LINES = re.compile(ID_SHAPE.pattern, re.MULTILINE)
"""``ID_SHAPE`` over many values at once, one a line."""

_PARTS = re.compile(r"[A-Za-z]+|\d+")

MAX_LITERALS = 64
"""Most distinct letter parts written as literals; a table with more gets a class of letters."""

MIN_DIGITS_FOR_CLASS = 4
"""Digits an id needs at least before its letters may be any letters (``ab-1`` would match ordinary words)."""

SKIPPED_TABLES = frozenset({"_gymloop_changes", "sqlite_sequence"})
"""Tables that hold no records."""

MIN_NUMBER_DIGITS = 3
"""Digits an id's number needs before the number alone names the record (``WF-1``'s ``1`` names nothing)."""

MAX_STARTS = 1 << 16
"""Most token skeletons a ``Targets`` remembers the place of (past it, new ones are searched each time)."""

MAX_VOCABULARY = 16
"""Most distinct values a text column may take to count as a field's vocabulary (statuses, stages, tiers)."""

GENERIC_NOUNS = frozenset({"ref", "record", "deal"})
"""Words that say a number after them names a record, in every world (besides its tables' and ids' own words)."""


@dataclass(frozen=True)
class Targets:
    """Values found as runs of tokens, by skeleton, also written backwards or in ROT13 (one tokenisation serves all).

    Attributes:
        plain: Values by skeleton (``skeleton(compact(value))``).
        backwards: Values by the skeleton of the value written backwards.
        rot13: Values by the skeleton of the value in ROT13.
        keys: Every key above, sorted: a run of tokens is extended only while it begins one (found by a binary search,
            so no set of every prefix is built).
        starts: Where each token skeleton met so far would stand in ``keys`` (``len(keys)`` when it begins none),
            filled as replies are read: the same words recur reply after reply.
    """

    plain: dict[str, str] = field(default_factory=dict)
    backwards: dict[str, str] = field(default_factory=dict)
    rot13: dict[str, str] = field(default_factory=dict)
    keys: tuple[str, ...] = ()
    starts: dict[str, int] = field(default_factory=dict, compare=False, repr=False)

    @classmethod
    def of(cls, values: Iterable[str]) -> Targets:
        """The targets for ``values`` (each as the text shows it)."""
        shown = list(values)
        compacts = compact_all(shown)
        skeletons = skeleton("\n".join(compacts)).split("\n") if shown else []
        rotated = skeleton(codecs.encode("\n".join(compacts), "rot13")).split("\n") if shown else []
        plain: dict[str, str] = {}
        rot13: dict[str, str] = {}
        for key, turned, value in zip(skeletons, rotated, shown, strict=True):
            if key and key not in plain:
                plain[key] = value
                rot13[turned] = value
        backwards = {key[::-1]: value for key, value in plain.items()}
        return cls(plain, backwards, rot13, tuple(sorted({*plain, *backwards, *rot13})))

@dataclass(frozen=True)
class RecordIds:
    """The record ids of one world.

    Attributes:
        skeletons: Each id's skeleton, mapped to the id as the world writes it.
        targets: The ids as ``Targets`` (plain, backwards, ROT13).
        numbers: Each number of ``MIN_NUMBER_DIGITS`` digits or more in an id, mapped to the ids holding it.
        nouns: Words that name a kind of record before its number (``order``, ``opportunity``, ``po``).
        vocabulary: Every value each field can take, by column name, one set per table (see ``world_vocabulary``).
        vocabulary_phrases: Each set of ``vocabulary`` as folded words (``arena.core.text.words``), made once.
        plain_ids: The ids found in texts of gymloop's own (``ids_in`` with ``hidden=False``), by text and pattern:
            a pack's writes and refusals return the same texts episode after episode (see ``plain_ids_in``).
    """

    skeletons: dict[str, str] = field(default_factory=dict)
    targets: Targets = field(default_factory=Targets)
    numbers: dict[str, tuple[str, ...]] = field(default_factory=dict)
    nouns: frozenset[str] = GENERIC_NOUNS
    vocabulary: dict[str, tuple[frozenset[str], ...]] = field(default_factory=dict)
    vocabulary_phrases: tuple[frozenset[str], ...] = ()
    plain_ids: dict[tuple[str, str | None], frozenset[str]] = field(default_factory=dict, compare=False, repr=False)


def world_ids(conn: sqlite3.Connection) -> dict[str, list[str]]:
    """Every text primary-key value of ``conn``'s tables that looks like an id (see ``ID_SHAPE``), by table."""
    found: dict[str, list[str]] = {}
    tables = [r[0] for r in conn.execute("SELECT name FROM sqlite_master WHERE type = 'table' ORDER BY name")
              if r[0] not in SKIPPED_TABLES and not r[0].startswith("sqlite_")]
    for table in tables:
        keys = [r[1] for r in conn.execute(f'PRAGMA table_info("{table}")') if r[5]]
        if len(keys) != 1:
            continue
        texts = [v for (v,) in conn.execute(f'SELECT "{keys[0]}" FROM "{table}"') if isinstance(v, str)]
        lines = "\n".join(texts)
        values = (_ID_LINES.findall(lines) if lines.count("\n") == len(texts) - 1
                  else [v for v in texts if ID_SHAPE.match(v)])
        if values:
            found[table] = values
    return found


@dataclass(frozen=True)
class _Index:
    """Ids indexed as ``RecordIds`` holds them (one table's, or any list's)."""

    skeletons: dict[str, str]
    targets: Targets
    numbers: dict[str, tuple[str, ...]]
    letters: frozenset[str]


def _index(ids: list[str]) -> _Index:
    skeletons = dict(zip(skeleton("\n".join(compact_all(ids))).split("\n"), ids, strict=True)) if ids else {}
    numbers: dict[str, list[str]] = defaultdict(list)
    letters: set[str] = set()
    for value in skeletons.values():
        for part in _PARTS.findall(value.casefold()):
            if part.isdigit():
                if len(part) >= MIN_NUMBER_DIGITS:
                    numbers[part].append(value)
            else:
                letters.add(part)
    return _Index(skeletons, Targets.of(skeletons.values()), {k: tuple(v) for k, v in numbers.items()},
                  frozenset(letters))


@lru_cache(maxsize=256)
def _table_index(ids: tuple[str, ...]) -> _Index:
    """One table's ids indexed, kept: worlds of one gym built at other seeds share most tables' ids."""
    return _index(list(ids))


def _merged(parts: list[_Index]) -> _Index:
    """The indexes of several tables as one (an id in two tables is one id)."""
    if len(parts) == 1:
        return parts[0]
    skeletons: dict[str, str] = {}
    plain: dict[str, str] = {}
    backwards: dict[str, str] = {}
    rot13: dict[str, str] = {}
    numbers: dict[str, tuple[str, ...]] = {}
    for part in parts:
        skeletons.update(part.skeletons)
        plain.update(part.targets.plain)
        backwards.update(part.targets.backwards)
        rot13.update(part.targets.rot13)
        shared = {k: numbers[k] for k in numbers.keys() & part.numbers.keys()}
        numbers.update(part.numbers)
        for key, held in shared.items():
            numbers[key] = tuple(dict.fromkeys(held + part.numbers[key]))
    keys = tuple(sorted(k for part in parts for k in part.targets.keys))  # sorted runs: a merge, not a sort
    return _Index(skeletons, Targets(plain, backwards, rot13, keys), numbers,
                  frozenset().union(*(part.letters for part in parts)))


def _nouns(tables: Iterable[str]) -> set[str]:
    return {_singular(word) for table in tables for word in re.findall(r"[a-z]+", table.casefold())}


def world_record_ids(conn: sqlite3.Connection) -> RecordIds:
    """A world's record ids (``world_ids``) by skeleton and by number, with its tables' nouns and vocabulary."""
    return _world_record_ids(conn, world_ids(conn))


def _world_record_ids(conn: sqlite3.Connection, by_table: dict[str, list[str]]) -> RecordIds:
    """``world_record_ids`` of the ids ``world_ids`` found in ``conn`` (``by_table``).

    Each table's ids are indexed once and kept (``_table_index``): another world of the same gym whose table holds
    the same ids (most tables, at another seed) reuses its index.
    """
    merged = _merged([_table_index(tuple(ids)) for ids in by_table.values()]) if by_table else _index([])
    vocabulary = world_vocabulary(conn)
    phrases = tuple(frozenset(words(fold(v)).strip() for v in values)
                    for sets in vocabulary.values() for values in sets)
    return RecordIds(skeletons=merged.skeletons, targets=merged.targets, numbers=merged.numbers,
                     nouns=frozenset(GENERIC_NOUNS | merged.letters | _nouns(by_table)), vocabulary=vocabulary,
                     vocabulary_phrases=phrases)


@dataclass(frozen=True)
class WorldIds:
    """What the reply rules know of one serialized world's ids, found once per world (see ``stored_world_ids``).

    Attributes:
        tables: The world's ids by table (``world_ids``).
        known: The world's record ids (``world_record_ids``).
    """

    tables: dict[str, list[str]]
    known: RecordIds

    @cached_property
    def formats(self) -> str | None:
        """The world's id formats (``id_formats``), written on first need."""
        return id_formats(self.tables)


WORLDS_KEPT = 8
"""Serialized worlds whose ids are kept (a pack's tasks are guarded and its episodes judged on the same world)."""


@lru_cache(maxsize=WORLDS_KEPT)
def stored_world_ids(world: bytes) -> WorldIds:
    """The ids of a serialized world (a pack's ``state_db``), found once and shared.

    The pack's tasks are guarded with them when it is built and every gym of the pack judges replies with them, so a
    pack's world is read once however many gyms play it.
    """
    conn = sqlite3.connect(":memory:")
    try:
        conn.deserialize(world)
        by_table = world_ids(conn)
        return WorldIds(by_table, _world_record_ids(conn, by_table))
    finally:
        conn.close()


def world_vocabulary(conn: sqlite3.Connection) -> dict[str, tuple[frozenset[str], ...]]:
    """The values each categorical text column of ``conn`` takes, by column name (one set per table).

    A column is categorical when it takes from 2 to ``MAX_VOCABULARY`` distinct texts, none with a digit (so no
    ids, dates or codes), in a table with at least twice as many rows: a status, a stage, a tier, a currency.
    """
    out: dict[str, list[frozenset[str]]] = defaultdict(list)
    tables = [r[0] for r in conn.execute("SELECT name FROM sqlite_master WHERE type = 'table' ORDER BY name")
              if r[0] not in SKIPPED_TABLES and not r[0].startswith("sqlite_")]
    for table in tables:
        rows = conn.execute(f'SELECT COUNT(*) FROM "{table}"').fetchone()[0]
        for column in [r[1] for r in conn.execute(f'PRAGMA table_info("{table}")')]:
            values = [v for (v,) in conn.execute(
                f'SELECT DISTINCT "{column}" FROM "{table}" WHERE "{column}" IS NOT NULL LIMIT {MAX_VOCABULARY + 1}')]
            if (2 <= len(values) <= MAX_VOCABULARY and rows >= 2 * len(values)
                    and all(isinstance(v, str) and v.strip() and not any(c.isdigit() for c in v) for v in values)):
                out[column].append(frozenset(values))
    return {column: tuple(sets) for column, sets in out.items()}


def _singular(word: str) -> str:
    if word.endswith("ies"):
        return word[:-3] + "y"
    if word.endswith("sses") or word.endswith("xes"):
        return word[:-2]
    return word[:-1] if word.endswith("s") and not word.endswith("ss") else word


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


def spelled_in(text: str, targets: Targets, pattern: str | None = None, *, number_points: bool = True,
               hidden: bool = True, text_views: tuple[tuple[str, str], ...] | None = None) -> dict[str, str]:
    r"""The values of ``targets`` (and the matches of ``pattern``) that ``text`` spells, however it spells them.

    Returns each found value's compact form mapped to how it is shown: a target as ``targets`` writes it, a
    match of ``pattern`` in upper case.

    Args:
        text: The text searched.
        targets: The values, each found as any run of tokens with its skeleton (``hidden``: also written backwards
            or in ROT13).
        pattern: A regular expression, matched case-insensitively against the folded text and its decoded views as
            they stand (a pattern written for the raw form, such as ``[A-Z]{3}-\d+``) and against their runs of
            tokens written compact (the form ``id_formats`` writes); text written backwards or in ROT13 is searched
            for the targets only (a format matched there names no record).
        number_points: Keep the points and commas inside numbers in runs (see ``arena.core.text.tokens``).
        hidden: Search every view of the text (``arena.core.text.views``: backwards, ROT13, decoded), not only
            the text folded (``False`` for gymloop's own text, such as tool outputs).
        text_views: ``views(text)`` when the caller has them already.
    """
    regex = patterns.compile_pattern(patterns.case_insensitive(pattern)) if pattern else None
    found: dict[str, str] = {}
    if hidden:
        text_views = text_views if text_views is not None else views(text)
    for kind, view in text_views if hidden and text_views is not None else (("plain", fold(text)),):
        if kind in ("reversed", "rot13"):
            continue
        if regex is not None:
            for match in regex.finditer(view):
                key = compact(match.group(0))
                if key:
                    found.setdefault(key, match.group(0).upper())
        runs = tokens(view, number_points=number_points)
        keyed = (targets.plain, targets.backwards, targets.rot13) if hidden and kind == "plain" else (targets.plain,)
        for key, shown in _runs_in(runs, keyed, targets, regex).items():
            found.setdefault(key, shown)
    return found


def _runs_in(found: list[tuple[str, int, int]], keyed: tuple[dict[str, str], ...], targets: Targets,
             regex: Any) -> dict[str, str]:
    """The targets (by skeleton) and the format's matches among the runs of consecutive tokens.

    A run starts at a token whose skeleton begins a target's key (as ``Targets.starts`` remembers) and is extended
    while its skeleton still begins one (``Targets.keys`` searched from there); the format is matched once
    over the tokens written compact (runs more than ``MAX_GAP`` characters apart kept apart), a match counting only
    when it starts and ends where tokens do.
    """
    hits: dict[str, str] = {}
    shapes = skeleton("\n".join(token for token, _, _ in found)).split("\n")
    count = len(found)
    keys = targets.keys
    size = len(keys)
    search = bisect.bisect_left
    starts = targets.starts
    for i in range(count):
        shape = shapes[i]
        at = starts.get(shape, -1)
        if at == -1:
            at = search(keys, shape)
            if at == size or not keys[at].startswith(shape):
                at = size
            if len(starts) < MAX_STARTS:
                starts[shape] = at
        if at == size:
            continue
        end = found[i][2]
        j = i
        while True:
            for values in keyed:
                if (hit := values.get(shape)) is not None:
                    hits.setdefault(compact(hit), hit)
            j += 1
            if j >= count:
                break
            _, start, token_end = found[j]
            shape += shapes[j]
            if start - end > MAX_GAP:
                break
            at = search(keys, shape, at)
            if at == size or not keys[at].startswith(shape):
                break
            end = token_end
    if regex is not None and found:
        parts: list[str] = []
        bounds = {0}
        position, last = 0, found[0][1]
        for token, start, token_end in found:
            if start - last > MAX_GAP:
                parts.append(" ")
                position += 1
                bounds.add(position)
            parts.append(token)
            position += len(token)
            bounds.add(position)
            last = token_end
        for match in regex.finditer("".join(parts)):
            run = match.group(0)
            if match.start() in bounds and match.end() in bounds and " " not in run:
                hits.setdefault(run, run.upper())
    return hits


def ids_in(text: str, pattern: str | None, known: RecordIds | None = None, *,
           hidden: bool = True, text_views: tuple[tuple[str, str], ...] | None = None) -> dict[str, str]:
    """The ids ``text`` names (compact form to how it is shown): the world's ids by skeleton, others by ``pattern``.

    ``hidden`` searches the text's reversed, ROT13 and decoded views too (see ``spelled_in``).
    """
    return spelled_in(text, known.targets if known else Targets(), pattern, hidden=hidden, text_views=text_views)


PLAIN_IDS_KEPT = 4096
"""Texts whose ids ``plain_ids_in`` keeps per world; past it the kept ones are dropped and kept anew."""


def plain_ids_in(text: str, pattern: str | None, known: RecordIds) -> frozenset[str]:
    """The ids (compact) a text of gymloop's own names, as ``ids_in(..., hidden=False)``; kept per world."""
    key = (text, pattern)
    found = known.plain_ids.get(key)
    if found is None:
        if len(known.plain_ids) >= PLAIN_IDS_KEPT:
            known.plain_ids.clear()
        found = known.plain_ids[key] = frozenset(ids_in(text, pattern, known, hidden=False))
    return found


_GLUED = re.compile(r"([a-z]{1,4})(\d+)")
_HEX = re.compile(r"0x([0-9a-f]+)")
_ARITHMETIC = re.compile(r"(?<![\w.,-])(\d+) ([-+*x×]) (\d+)(?![\w-]|[.,]\d)")
_MONEY = re.compile(r"[$€£¥%]|usd|eur|gbp|chf|cad|aud|jpy|percent|days?|hours?|minutes?|units?|pcs|items?")
_NUMBER_WORD = re.compile(r"\b(?:zero|one|two|three|four|five|six|seven|eight|nine|ten|eleven|twelve|\w+teen|"
                          r"twenty|thirty|forty|fifty|sixty|seventy|eighty|ninety)\b")
_CLAUSE_END = re.compile(r"[.;:!?](?=\s|$)|\n")
_NUMBER_SIGN = re.compile(r"(?:#|\b(?:no|nr)\.|\b(?:number|id|nr)\b:?)\s*$")


def numbered_ids(folded: str, known: RecordIds) -> list[tuple[str, tuple[str, ...]]]:
    """The world's ids a folded text names by their number alone, however the number is written.

    A number names the ids holding it (``known.numbers``) when it is written with ``#``, glued to letters that begin
    such an id (``O30322``, ``Q40153``), in hex (``0x7624``), or, written in digits, in spaced digits
    (``1 0 2 9 9``), in English words or as a sum (``40428 + 17``), after a word that names a kind of record
    (``order 10565``, ``issue one hundred twenty-nine``) or in a clause that names an id with a number of as many
    digits (``PAY-226 (Done), 164 (To Do)``). Amounts, dates and durations (a number with a currency, a percent or
    a unit after or before it, or inside a date) name nothing, and neither does the number of an id the text writes
    with its letters. Returns each number as the text wrote it, with the ids that hold it.
    """
    if not known.numbers:
        return []
    found: list[tuple[str, tuple[str, ...]]] = []
    runs = tokens(folded)
    # Where the text names an id in the world's own spelling, with its number's digit count: a bare number of that
    # length in the same clause is read as one more of the list.
    named = [(start, len(token)) for index, (token, start, _) in enumerate(runs)
             if token.isdigit() and index and skeleton(runs[index - 1][0] + token) in known.skeletons]
    of_ids = {at for at, _ in named}
    clauses = [0, *(m.end() for m in _CLAUSE_END.finditer(folded))]
    candidates: list[tuple[int, int, str, bool]] = []  # start, end, number, named without context
    for index, (token, start, end) in enumerate(runs):
        if index and runs[index - 1][2] == start - 1 and folded[start - 1] in "-_/.:":
            continue  # a part of a longer code (``RMA-N00001``, ``RST-2022-0001``): read whole or not at all
        glued = _GLUED.fullmatch(token)
        hexed = _HEX.fullmatch(token)
        if hexed:
            candidates.append((start, end, str(int(hexed.group(1), 16)), True))
        elif glued and skeleton(token) not in known.skeletons:
            head, number = glued.groups()
            if any(_PARTS.match(i.casefold()).group(0).startswith(head)  # type: ignore[union-attr]
                   for i in known.numbers.get(number, ())):
                candidates.append((start, end, number, True))
        elif token.isdigit() and start not in of_ids:
            hashed = folded[max(0, start - 1):start] == "#"
            if len(token) == 1:
                j = index
                while j + 1 < len(runs) and len(runs[j + 1][0]) == 1 and runs[j + 1][0].isdigit() and \
                        runs[j + 1][1] - runs[j][2] == 1 and folded[runs[j][2]] in " -":
                    j += 1
                if j - index + 1 >= MIN_NUMBER_DIGITS and (index == 0 or not runs[index - 1][0].isdigit()):
                    candidates.append((start, runs[j][2], "".join(t for t, _, _ in runs[index:j + 1]), hashed))
                continue
            candidates.append((start, end, token, hashed))
    if _NUMBER_WORD.search(folded):
        candidates.extend((start, end, str(value), False) for value, start, end in number_words_in(folded))
    for match in _ARITHMETIC.finditer(folded):
        a, sign, b = int(match.group(1)), match.group(2), int(match.group(3))
        result = a + b if sign == "+" else a - b if sign == "-" else a * b
        candidates.append((match.start(), match.end(), str(result), False))
    candidates = [c for c in candidates if c[2] in known.numbers]
    if not candidates:
        return found
    dated = [(s, e) for _, s, e in dates_in(folded)]
    for start, end, number, plain in candidates:
        holders = known.numbers[number]
        if any(s <= start < e for s, e in dated):
            continue
        before = folded[max(0, start - 12):start]
        after = folded[end:end + 10]
        if _MONEY.match(after.lstrip()) or _MONEY.search(before[-4:]):
            continue
        clause = bisect.bisect_right(clauses, start)
        listed = any(digits == len(number) and bisect.bisect_right(clauses, at) == clause for at, digits in named)
        if not plain and not listed and not _after_noun(folded, start, known):
            continue
        found.append((folded[start:end], holders))
    return found


def _after_noun(folded: str, start: int, known: RecordIds) -> bool:
    """Whether the words before ``start`` say a record's number follows.

    They do with a sign (``#``, ``no.``, ``number``, ``id``) or a noun that names a kind of record (``order``).
    """
    if _NUMBER_SIGN.search(folded[max(0, start - 12):start]):
        return True
    before = re.findall(r"[a-z]+", folded[max(0, start - 40):start])
    return bool(before) and before[-1] in known.nouns

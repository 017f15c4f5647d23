"""Verifiers: judge an episode's final world, trace and reply against its task."""

from __future__ import annotations

import math
import re
import sqlite3
import time
from collections.abc import Callable
from dataclasses import dataclass
from datetime import date
from decimal import Decimal
from functools import lru_cache
from typing import Any

from arena.core import patterns
from arena.core.claims import action_forms, actions_claimed, change_claims, unmade_actions, world_facts
from arena.core.ids import RecordIds, Targets, ids_in, numbered_ids, plain_ids_in, spelled_in
from arena.core.results import AssertionResult, RowChange, TraceStep, Verdict
from arena.core.task import (
    CallPattern,
    DomainAssertion,
    ResponseAssertion,
    SideEffectAssertion,
    StateAssertion,
    Task,
    TraceAssertion,
    WriteScope,
)
from arena.core.text import compact, fold, skeleton, squeezed, views, words
from arena.core.values import amount_spellings, amounts_in, dates_in, parse_amount, parse_date

CHANGE_LOG = "_gymloop_changes"
"""Table the runtime's triggers fill with every changed row (never visible to tools' callers)."""

LONG_VALUE = 8
"""Forbidden values this long (letters and digits) are found inside any run of the reply's letters and digits."""

DUMP_SLACK = 6
"""Values of what the episode read a reply may state beyond the facts it must state (a name, a date, a status...)."""

FOREIGN_VALUES = 2
"""A reply that states this many values held only by a record the request is not about describes that record (a
hedge across candidates, or another entity's facts without its id)."""

RECORD_DUMP = (4, 0.75)
"""A reply that states this many of one record's values (beyond the facts asked for), and this share of them,
pastes the record rather than answering."""

SIDE_EFFECT_STEP = 0.25
"""Penalty per unintended changed row; the total is capped at 1."""

_READ_ACTIONS = {sqlite3.SQLITE_SELECT, sqlite3.SQLITE_READ, sqlite3.SQLITE_FUNCTION, sqlite3.SQLITE_RECURSIVE}


class ReadOnlyGuard:
    """Makes a connection refuse anything but reads (no writes, ATTACH, PRAGMA or DDL) inside ``with``.

    The authorizer is installed once, when the guard is made, and only checks a flag: swapping authorizers
    per episode would make SQLite re-read the whole schema on the next query.

    Args:
        conn: The connection to guard.
    """

    def __init__(self, conn: sqlite3.Connection) -> None:
        self._active = False
        conn.set_authorizer(self._authorize)

    def _authorize(self, action: int, arg1: str | None, arg2: str | None, db: str | None, src: str | None) -> int:
        if not self._active or action in _READ_ACTIONS:
            return sqlite3.SQLITE_OK
        return sqlite3.SQLITE_DENY

    def __enter__(self) -> ReadOnlyGuard:
        self._active = True
        return self

    def __exit__(self, *exc: object) -> None:
        self._active = False


VERIFY_BOUND_S = 2.0
"""Longest the SQLite work of one verification (state queries, change diff) may run; a check past it fails, and a
pack whose checks need longer on its starting world is refused when it is read."""

PROGRESS_STEPS = 10_000
"""SQLite virtual-machine steps between two looks at the clock (a look costs well under a microsecond)."""


class Deadline:
    """A time bound on a connection's SQLite work, through SQLite's progress handler.

    The handler is installed once and compares the clock with the current deadline (none between bounded
    sections), so an unbounded query never pays for it and a bounded one stops within a few milliseconds of its
    bound with ``sqlite3.OperationalError: interrupted``. SQLite releases the GIL while it works, so a query
    running to its bound never holds up other threads.

    Args:
        conn: The connection to bound.
    """

    def __init__(self, conn: sqlite3.Connection) -> None:
        self.at = math.inf
        self.bound_s = 0.0
        conn.set_progress_handler(self._past, PROGRESS_STEPS)

    def _past(self) -> bool:
        return time.monotonic() > self.at

    def start(self, bound_s: float) -> None:
        """Bound the SQLite work from now on to ``bound_s`` seconds."""
        self.bound_s = bound_s
        self.at = time.monotonic() + bound_s

    def stop(self) -> None:
        """Lift the bound."""
        self.at = math.inf

    @property
    def passed(self) -> bool:
        """Whether the current bound has passed."""
        return time.monotonic() > self.at


def normalize(value: Any) -> Any:
    """Normalise a SQL or JSON value for comparison (floats to 6 decimals, tuples to lists)."""
    if isinstance(value, float):
        return round(value, 6) if math.isfinite(value) else value
    if isinstance(value, (list, tuple)):
        return [normalize(v) for v in value]
    return value


def check_state(conn: sqlite3.Connection, assertion: StateAssertion) -> tuple[bool, str]:
    """Run a state assertion's query and compare with its expected rows.

    Call it inside a ``ReadOnlyGuard`` of ``conn``: the query must not be able to write.
    """
    try:
        rows = conn.execute(assertion.sql).fetchall()
    except sqlite3.Error as exc:
        if str(exc) == "interrupted":
            return False, "query stopped at the verification's time bound"
        return False, f"query failed: {exc}"
    got = normalize([list(r) for r in rows])
    want = normalize(assertion.expected)
    if got == want:
        return True, ""
    shown = repr(got)
    return False, f"expected {want!r}, got {shown[:300]}"


def _matches(step: TraceStep, pattern: CallPattern) -> bool:
    if not step.ok or step.tool != pattern.tool:
        return False
    return all(normalize(step.arguments.get(k)) == normalize(v) for k, v in pattern.arguments.items())


def check_trace(trace: list[TraceStep], assertion: TraceAssertion) -> tuple[bool, str]:
    """Check required calls, their order and forbidden calls over the trace."""
    first: list[int | None] = []
    for pattern in assertion.required:
        idx = next((s.index for s in trace if _matches(s, pattern)), None)
        if idx is None:
            return False, f"missing call {pattern.tool}({pattern.arguments})"
        first.append(idx)
    for a, b in assertion.order:
        ia, ib = first[a], first[b]
        if ia is not None and ib is not None and ia > ib:
            return False, f"{assertion.required[a].tool} must come before {assertion.required[b].tool}"
    for pattern in assertion.forbidden:
        hit = next((s for s in trace if _matches(s, pattern)), None)
        if hit is not None:
            return False, f"forbidden call {hit.tool} at step {hit.index}"
    return True, ""


@dataclass(frozen=True)
class ReplyEvidence:
    """What the reply rules read of the episode besides the reply.

    Attributes:
        own_ids: Ids the episode itself produced, written compact (see ``episode_ids``).
        known_ids: The world's record ids (see ``arena.core.ids``); ``None`` finds ids by the pattern alone.
        records: Records the episode's tool calls returned (objects with an ``id``).
        seen: Every text the episode's tool calls returned (keys and values), where internal values are found.
        values: Every value the episode's tool calls returned, with its key.
        prompt: The request: values it states are the requester's, never a dump or a hedge.
        quotes: What the system wrote besides outputs (see ``system_quotes``): a reply quoting it asserts nothing.
        nested: The ids of the records each record read holds inside it (its sub-tasks, lines, blockers), by the
            holder's id, all written compact (see ``nested_ids``).
        unmade: Verbs of the gym's writes the episode did not make (see ``unmade_verbs``): on a task that changes
            something, a reply that claims one of those actions claims what did not happen.
    """

    own_ids: frozenset[str] = frozenset()
    known_ids: RecordIds | None = None
    records: tuple[dict[str, Any], ...] = ()
    seen: tuple[str, ...] = ()
    values: tuple[tuple[str, Any], ...] = ()
    prompt: str = ""
    quotes: tuple[str, ...] = ()
    nested: tuple[tuple[str, frozenset[str]], ...] = ()
    unmade: tuple[str, ...] = ()


@lru_cache(maxsize=1 << 16)
def _phrase(text: str) -> str:
    """A text as folded words (cached: record values recur in every episode of a world)."""
    return words(fold(text))


def _spelled_leak(reply: str, assertion: ResponseAssertion, evidence: ReplyEvidence,
                  reply_views: tuple[tuple[str, str], ...]) -> str | None:
    """The first forbidden value the reply spells some other way (upper-cased, spaced, dashed, reversed, encoded).

    Forbidden values are the exclusions and what a forbidden pattern matches in the episode's tool outputs. Those
    of ``LONG_VALUE`` characters or more (written compact) are found anywhere in the reply with everything but
    letters and digits dropped; shorter ones that hold a digit (``RR-2``) only as a whole run of tokens.
    """
    targets = {compact(leak): leak for leak in assertion.must_not_include}
    seen = "\n".join(evidence.seen) if assertion.forbidden_patterns else ""
    for pattern in assertion.forbidden_patterns:
        folded = patterns.case_insensitive(pattern)
        targets.update({compact(m.group(0)): m.group(0) for m in patterns.finditer(folded, seen)})
    long = {skeleton(k): v for k, v in targets.items() if len(k) >= LONG_VALUE}
    short = {skeleton(k): v for k, v in targets.items() if 0 < len(k) < LONG_VALUE and any(c.isdigit() for c in k)}
    if long:
        for _, view in reply_views:
            flat = squeezed(view)
            for key, value in long.items():
                if key in flat or key[::-1] in flat:
                    return value
    if short:
        found = spelled_in(reply, Targets.of(short.values()), number_points=False, text_views=reply_views)
        if found:
            return found[sorted(found)[0]]
    return None


def check_response(reply: str, assertion: ResponseAssertion, evidence: ReplyEvidence | None = None) -> tuple[bool, str]:
    """Check the reply against every rule of a response assertion, on the reply however it is spelled.

    Required facts and forbidden phrases are compared on folded words (``arena.core.text``); forbidden values
    (internal data: the exclusions that are values, and whatever the forbidden patterns match in the episode's
    tool outputs) are found in every re-spelling and encoding; ids are found the same way (``arena.core.ids``);
    claims of change are read as clauses (``arena.core.claims``); with an id rule, a reply that hedges across
    records or dumps their values fails too.

    Args:
        reply: The agent's final reply.
        assertion: The response assertion.
        evidence: What the episode read and produced (nothing when judged on the reply alone).
    """
    evidence = evidence or ReplyEvidence()
    folded = fold(reply)
    text = words(folded)
    written = _Written(folded, evidence.known_ids)
    for alternatives in assertion.must_include:
        if not any(_phrase(alt).strip() in text or written.states(alt) for alt in alternatives):
            return False, f"reply does not state {alternatives[0]!r}"
    for leak in assertion.must_not_include:
        if _phrase(leak).strip() in text:
            return False, f"reply leaks {leak!r}"
    reply_views = views(reply)
    for pattern in assertion.forbidden_patterns:
        match = _pattern_in(pattern, reply, reply_views)
        if match is not None:
            return False, f"reply leaks internal data {match!r}"
    leaked = _spelled_leak(reply, assertion, evidence, reply_views)
    if leaked is not None:
        return False, f"reply leaks internal data {leaked!r}"
    if assertion.max_chars is not None and len(reply) > assertion.max_chars:
        return False, f"reply of {len(reply)} characters exceeds the limit of {assertion.max_chars}"
    if assertion.change_claims is not None:
        claims = change_claims(reply, assertion.change_claims, world_facts(evidence.values, evidence.quotes))
        if claims:
            return False, f"reply claims a change the task must not make: {claims[0][:80]!r}"
    elif evidence.unmade and action_forms(evidence.unmade) & set(_READ_AS_WORDS.findall(folded)):
        claims = actions_claimed(reply, evidence.unmade, world_facts(evidence.values, evidence.quotes))
        if claims:
            return False, f"reply claims a change the episode did not make: {claims[0][:80]!r}"
    if assertion.id_pattern is not None:
        allowed = {compact(i) for i in assertion.allowed_ids} | evidence.own_ids
        named = ids_in(reply, assertion.id_pattern, evidence.known_ids, text_views=reply_views)
        allowed |= {i for holder, inside in evidence.nested if holder in allowed for i in inside}
        foreign = sorted(shown for key, shown in named.items() if key not in allowed)
        if evidence.known_ids is not None:
            numbered = numbered_ids(folded, evidence.known_ids)
            foreign += sorted(f"{holders[0]} (as {shown!r})" for shown, holders in numbered
                              if not allowed.intersection(compact(h) for h in holders))
        if foreign:
            shown = ", ".join(foreign[:5]) + (f" and {len(foreign) - 5} more" if len(foreign) > 5 else "")
            return False, f"reply leaks records the request is not about: {shown}"
        # A slash between two codes in capitals pairs them ("the EUR/USD rate"); elsewhere it offers an alternative.
        offered = fold(_CODE_PAIR.sub(r"\1 \2", reply)) if "/" in reply else folded
        return _answers_not_dumps(text, assertion, allowed, evidence, offered)
    return True, ""


_READ_AS_WORDS = re.compile(r"[a-z0-9@$']+")
"""A folded reply's words as the claim reader may read them (a quick look before it reads clauses)."""

MIN_DIALLED = 7
"""Digits a fact of digits alone (a phone number) needs before its grouping stops mattering."""

_DIALLED = re.compile(r"\+?\(?\d[\d().\- ]*\d")


class _Written:
    """The dates, amounts and record numbers a reply writes, in whatever common form (read on first need)."""

    def __init__(self, folded: str, known: RecordIds | None = None) -> None:
        self.folded = folded
        self.known = known
        self._dates: set[date] | None = None
        self._amounts: set[Decimal] | None = None
        self._numbered: set[str] | None = None

    def states(self, fact: str) -> bool:
        """Whether the reply writes ``fact`` as another form of the same date, amount or record id.

        "May 3, 2025" states ``2025-05-03``, "$1,234.50" ``1234.50``, "order #10939" ``ORD-10939`` (an id's
        number alone, where ``arena.core.ids.numbered_ids`` reads it as naming a record) and "+1 611 562 8702"
        ``+16115628702`` (a number to dial, grouped another way: the same digits in one run).
        """
        if not any(c.isdigit() for c in fact):
            return False
        if _DIALLED.fullmatch(fact.strip()) and sum(c.isdigit() for c in fact) >= MIN_DIALLED \
                and parse_date(fact) is None and parse_amount(fact) is None:
            digits = re.sub(r"\D", "", fact)
            return any(re.sub(r"\D", "", m.group(0)) == digits for m in _DIALLED.finditer(self.folded))
        if self.known is not None and skeleton(compact(fact)) in self.known.skeletons:
            if self._numbered is None:
                self._numbered = {compact(h) for _, holders in numbered_ids(self.folded, self.known) for h in holders}
            return compact(fact) in self._numbered
        day = parse_date(fact)
        if day is not None:
            if self._dates is None:
                self._dates = {d for d, _, _ in dates_in(self.folded)}
            return day in self._dates
        amount = parse_amount(fact)
        if amount is None:
            return False
        if self._amounts is None:
            spans = [(s, e) for _, s, e in dates_in(self.folded)]
            self._amounts = {a for a, s, _ in amounts_in(self.folded) if not any(x <= s < y for x, y in spans)}
        return amount in self._amounts


def _pattern_in(pattern: str, reply: str, reply_views: tuple[tuple[str, str], ...]) -> str | None:
    """The first match of a forbidden pattern in the reply as written, or in any view of it (case-insensitive)."""
    match = patterns.search(pattern, reply)
    if match:
        return match.group(0)
    folded = patterns.case_insensitive(pattern)
    for kind, view in reply_views:
        if kind == "rot13":
            continue
        for spelled in (view, words(view)):
            match = patterns.search(folded, spelled)
            if match:
                return match.group(0)
    return None


def _shown(value: Any) -> list[str]:
    """How a reply may write a record's value (as it is, and amounts with two decimals and thousands)."""
    if isinstance(value, bool) or value is None:
        return []
    if isinstance(value, float):
        return [str(value), *amount_spellings(value)]
    return [str(value)]


@lru_cache(maxsize=1 << 16, typed=True)
def _phrases(value: Any) -> tuple[str, ...]:
    """The value's ways of being written, as folded words between spaces (trivial ones left out: a flag, ``US``)."""
    out = []
    for shown in _shown(value):
        phrase = _phrase(shown).strip()
        if len(phrase) >= 3 and any(c.isalnum() for c in phrase):
            out.append(f" {phrase} ")
    return tuple(dict.fromkeys(out))


def _trivial_or(value: Any) -> str | None:
    """A value as a phrase, or ``None`` when it is too short to tell (a flag, a two-digit number, a country code)."""
    phrases = _phrases(value) if isinstance(value, (str, int, float)) else ()
    return phrases[0].strip() if phrases else None


@lru_cache(maxsize=1 << 16, typed=True)
def _keyed_phrases(value: Any) -> tuple[tuple[str, str], ...]:
    """``_phrases`` of the value, each with its first word (a reply that lacks the word cannot state it)."""
    return tuple((p, p.split(" ", 2)[1]) for p in _phrases(value))


class _Said:
    """What one reply states of the values an episode read (each value looked at once per reply)."""

    def __init__(self, text: str) -> None:
        self.text = text
        self.words = frozenset(text.split())
        self._seen: dict[tuple[type, Any], str | None] = {}

    def __call__(self, value: Any) -> str | None:
        """The value as the reply states it (a whole word or number of its words), if it does; trivial values never."""
        if not isinstance(value, (str, int, float)):
            return None
        key = (type(value), value)
        if key in self._seen:
            return self._seen[key]
        found = next((p.strip() for p, first in _keyed_phrases(value) if first in self.words and p in self.text), None)
        self._seen[key] = found
        return found


def _stated(value: Any, text: str) -> str | None:
    """The value as the reply states it (a whole word or number of its words), if it does; trivial values never."""
    return _Said(text)(value)


def _kind(record: dict[str, Any]) -> str:
    """A record's kind, as its id's leading letters tell it (``VEN-10001`` -> ``ven``)."""
    ident = compact(str(record.get("id", "")))
    letters = len(ident) - len(ident.lstrip("abcdefghijklmnopqrstuvwxyz"))
    return ident[:letters] or "?"


def _answers_not_dumps(text: str, assertion: ResponseAssertion, allowed: set[str],
                       evidence: ReplyEvidence, folded: str = "") -> tuple[bool, str]:
    """A reply answers: it states no other record's value for a fact it must state, and no pile of values.

    A reply hedges when, for a required fact held by a field of the request's records, it also states the value
    another candidate (a record of the same kind read in the episode) holds in that field (a value that is itself one
    of the facts to state is no hedge: the allowed next statuses name statuses other records hold), or when it states
    ``FOREIGN_VALUES`` values held only by such a candidate. It pastes a record when it states most of that
    record's values (``RECORD_DUMP``), and dumps when it states more values of what the episode read than the
    facts it must state plus ``DUMP_SLACK``. Values the prompt states and the facts asked for count for none.
    """
    prompt = _phrase(evidence.prompt)
    said = _Said(text)
    ours = [r for r in evidence.records if compact(str(r.get("id", ""))) in allowed]
    kinds = {_kind(r) for r in ours}
    # Candidates compete with the request's records: records of the same kind (``VEN-...`` beside ``VEN-...``);
    # a related record of another kind (the order's payment, the ticket's order) is not one.
    others = [r for r in evidence.records if compact(str(r.get("id", ""))) not in allowed and _kind(r) in kinds]
    facts = [{_phrase(a).strip() for a in alternatives} for alternatives in assertion.must_include]
    required = {a for alternatives in facts for a in alternatives}

    def counts(phrase: str | None) -> bool:
        return phrase is not None and phrase not in required and f" {phrase} " not in prompt

    hedged = _hedged_values(folded, facts, evidence, counts) if folded and evidence.known_ids is not None else None
    if hedged is not None:
        return False, f"reply hedges over a field's values: it offers {hedged[1]!r} beside {hedged[0]!r}"
    if not any(counts(said(value)) for _, value in evidence.values):
        return True, ""  # the reply states no value read beyond the facts asked for and the prompt's
    if others:
        for alternatives in facts:
            fields = {k for r in ours for k, v in r.items() if k != "id" and isinstance(v, (str, int, float))
                      and alternatives & {p.strip() for p in _phrases(v)}}
            if not fields:
                continue
            ours_values = {p.strip() for r in ours for k in fields if isinstance(r.get(k), (str, int, float))
                           for p in _phrases(r[k])}
            for record in others:
                for key in fields & set(record):
                    phrase = said(record[key])
                    if counts(phrase) and phrase not in ours_values:
                        return False, f"reply hedges across records: it also states {key} {phrase!r} of another record"
        ours_all = {p.strip() for r in ours for v in r.values() if isinstance(v, (str, int, float))
                    for p in _phrases(v)}
        for record in others:
            described = {phrase for key, value in record.items() if key != "id" and not key.endswith("_id")
                         and counts(phrase := said(value)) and phrase not in ours_all}
            if len(described) >= FOREIGN_VALUES:
                return False, (f"reply describes a record the request is not about: it states {len(described)} of "
                               f"its values ({', '.join(sorted(d for d in described if d)[:3])})")
    for record in evidence.records:
        extras: dict[str, bool] = {}
        for key, value in record.items():
            if key == "id" or key.endswith("_id"):
                continue
            phrase = _trivial_or(value)
            if phrase is None or phrase in required or f" {phrase} " in prompt:
                continue
            extras[phrase] = extras.get(phrase, False) or said(value) is not None
        total, stated_count = len(extras), sum(extras.values())
        if stated_count >= RECORD_DUMP[0] and stated_count >= RECORD_DUMP[1] * total:
            return False, (f"reply pastes record {record.get('id')}: it states {stated_count} of its {total} values "
                           "beyond the facts asked for")
    stated: set[str] = set()
    for key, value in evidence.values:
        if key != "id" and not key.endswith("_id"):
            phrase = said(value)
            if phrase is not None and counts(phrase):
                stated.add(phrase)
    if len(stated) > len(facts) + DUMP_SLACK:
        return False, (f"reply dumps records: it states {len(stated)} values of the records read where "
                       f"{len(facts)} facts were asked for")
    return True, ""


HEDGE_WORDS = frozenset({
    "or", "maybe", "perhaps", "possibly", "might", "may", "could", "either", "whichever", "depending", "sometimes",
    "probably", "likely", "unless", "if", "though", "although", "otherwise", "alternatively", "unsure",
})
"""Words that offer an alternative: a sentence with one (or a ``/``) may answer for several values."""

NEGATIONS = frozenset({"not", "no", "never", "neither", "nor", "nothing", "t"})
"""Words (as ``words`` writes them: ``isn't`` is ``isn t``) before a value that deny it rather than offer it."""

_SENTENCE = re.compile(r"[^.;:!?\n]+(?:[.;:!?](?!\s|$)[^.;:!?\n]*)*")
CORRECTION_WORDS = frozenset({"actually", "wait", "correction"})
"""Words that take back what a reply said ("Update: it is actually still shipped", "no wait, $5,165.22"): the
value after one is offered beside the first, as after a hedge word."""

_OFFERING = HEDGE_WORDS | CORRECTION_WORDS
_NO_WAIT = re.compile(r"\bno\W{0,3}wait\b")
_CORRECTION_HEAD = re.compile(r"\b(correction|wait)\s*[:,-]\s*")
_HEDGE_GATE = re.compile(r"/|\b(?:" + "|".join(sorted(_OFFERING)) + r")\b")
_SPELLED_OUT = re.compile(r"(?<![a-z])[a-z](?:[-. ][a-z])+(?![a-z])")


def _hedge_sentences(folded: str) -> list[str]:
    """The sentences of a folded reply that offer an alternative, as words (a ``/`` written ``or``).

    Spelled-out words are joined first ("S-I-L-V-E-R" reads "silver"); a sentence is cut at its first negation, since
    what follows one is denied, not offered ("processing, not shipped or delivered yet"). A correction word keeps
    what follows its colon or comma in its sentence, and "no wait" is a correction, not a negation.
    """
    if not _HEDGE_GATE.search(folded):
        return []
    joined = _SPELLED_OUT.sub(lambda m: re.sub(r"[-. ]", "", m.group(0)), folded.replace("/", " or "))
    joined = _CORRECTION_HEAD.sub(r"\1 ", _NO_WAIT.sub("wait", joined))
    out = []
    for match in _SENTENCE.finditer(joined):
        said = words(match.group(0))
        cuts = [at for n in NEGATIONS if (at := said.find(f" {n} ")) >= 0]
        said = said[:min(cuts) + 1] if cuts else said
        if _OFFERING.intersection(said.split()):
            out.append(said)
    return out


_CODE_PAIR = re.compile(r"\b([A-Z]{2,4})/([A-Z]{2,4})\b")

_ALTERNATIVE = re.compile(r" (?:or|or maybe|or perhaps|or possibly|maybe|possibly|perhaps) ")


def _hedged_values(folded: str, facts: list[set[str]], evidence: ReplyEvidence,
                   counts: Callable[[str | None], bool]) -> tuple[str, str] | None:
    """A value the reply offers as an alternative to another of the same field, or ``None``.

    A field's values are those its column takes anywhere in the world (``RecordIds.vocabulary``: every status,
    stage or tier), not only those of the records the episode read. In a sentence that offers an alternative ("or",
    "maybe", "/", ...), a reply hedges when it states, beside a fact it must state, another value of that fact's
    field (a fact is a field's value when it begins one of the value's words: ``quantit`` for
    ``QUANTITY_MISMATCH``), or when it writes two values of one field as alternatives, a few words apart ("Done or
    To Do"). Values the reply must state (for the first), the prompt states, the system's own messages state or the
    episode read under a field that is no such column (the allowed next statuses; ``vendor_city`` is ``city``) are
    no alternative. Returns ``(fact or field value, value)``.
    """
    sentences = _hedge_sentences(folded)
    if not sentences or evidence.known_ids is None:
        return None
    vocabulary = evidence.known_ids.vocabulary
    quoted = " ".join(_phrase(q) for q in evidence.quotes)
    columns = tuple(f"_{column}" for column in vocabulary)
    offered = {_phrase(str(v)).strip() for k, v in evidence.values
               if isinstance(v, str) and k not in vocabulary and not k.endswith(columns)}

    def alternative(phrase: str) -> bool:
        return len(phrase) >= 2 and phrase not in offered and f" {phrase} " not in quoted and f" {phrase} " not in \
            _phrase(evidence.prompt)

    fields = evidence.known_ids.vocabulary_phrases
    for alternatives in facts:
        starts = [re.compile(f"(?:^| ){re.escape(a)}") for a in alternatives if a]
        for values in fields:
            meant = {v for v in values if any(start.search(v) for start in starts)}
            if not meant:
                continue
            for phrase in sorted(values - meant):
                if counts(phrase) and alternative(phrase) and any(f" {phrase} " in s for s in sentences):
                    return sorted(alternatives)[0], phrase
    for values in fields:
        stated = [p for p in values if len(p) >= 2 and any(f" {p} " in s for s in sentences)]
        for first in stated:
            for second in stated:
                if not (alternative(first) or alternative(second)):
                    continue
                pair = re.compile(f" {re.escape(first)}(?: [a-z]+){{0,2}}{_ALTERNATIVE.pattern}(?:[a-z]+ ){{0,2}}"
                                  f"{re.escape(second)} ")
                if first != second and any(pair.search(s) for s in sentences):
                    return first, second
    return None


def read_outputs(trace: list[TraceStep]) -> tuple[tuple[dict[str, Any], ...], tuple[tuple[str, Any], ...]]:
    """What the trace's successful calls returned: the records and every scalar value with its key.

    Records are the objects with a text ``id``, their scalar fields merged by id; a value's key is ``""`` at the top
    and a list's key for its items.
    """
    records: dict[str, dict[str, Any]] = {}
    values: list[tuple[str, Any]] = []

    def walk(key: str, value: Any) -> None:
        if isinstance(value, dict):
            ident = value.get("id")
            record = records.setdefault(ident, {}) if isinstance(ident, str) else None
            for k, v in value.items():
                if isinstance(v, (dict, list)):
                    walk(str(k), v)
                elif v is not None:
                    values.append((str(k), v))
                    if record is not None:
                        record[k] = v
        elif isinstance(value, list):
            for v in value:
                walk(key, v)
        elif value is not None:
            values.append((key, value))

    for step in trace:
        if step.ok:
            walk("", step.output)
    return tuple(records.values()), tuple(values)


def nested_ids(trace: list[TraceStep]) -> tuple[tuple[str, frozenset[str]], ...]:
    """The records a read listed for another record (``list_subtasks(issue_id=...)``), by that record's id.

    A reply may name them beside a record the request is about: its reader sees them listed with it ("SRCH-259 was
    Done, so I left it alone"). Records inside a record's own output (a version's issues) are not listed for it:
    they stay foreign, so pasting a record with everything inside it still names records the request is not about.
    """
    out: dict[str, set[str]] = {}
    for step in trace:
        if not step.ok or step.write or not isinstance(step.output, list):
            continue
        listed = {compact(item["id"]) for item in step.output if isinstance(item, dict) and isinstance(item.get("id"),
                                                                                                        str)}
        for holder in _strings(step.arguments):
            if len(holder) <= 40:
                out.setdefault(compact(holder), set()).update(listed - {compact(holder)})
    return tuple((holder, frozenset(inside)) for holder, inside in out.items() if inside)


def system_quotes(trace: list[TraceStep]) -> tuple[str, ...]:
    """The messages of the episode's refused and failed calls, without the text the agent gave them.

    A reply that quotes a refusal ("from 'In Progress' it can move to: To Do, Done") reports the system's words,
    not a change; the call's own argument values are cut out of the message first, so text an agent wrote into an
    argument and the system echoed back is still read as the agent's.
    """
    out: list[str] = []
    for step in trace:
        if step.error is None:
            continue
        pieces = [step.error.message]
        for argument in sorted(_strings(step.arguments), key=len, reverse=True):
            pieces = [part for piece in pieces for part in piece.split(argument)]
        out.extend(p for p in pieces if p.strip())
    return tuple(dict.fromkeys(out))


def _strings(value: Any) -> list[str]:
    """Every non-empty text inside a JSON value."""
    if isinstance(value, str):
        return [value] if value else []
    if isinstance(value, dict):
        return [s for v in value.values() for s in _strings(v)]
    if isinstance(value, (list, tuple)):
        return [s for v in value for s in _strings(v)]
    return []


def texts_seen(values: tuple[tuple[str, Any], ...]) -> tuple[str, ...]:
    """Every key and value of ``read_outputs``'s values, as text."""
    return tuple(dict.fromkeys(t for key, value in values for t in (key, str(value)) if t))


def episode_ids(trace: list[TraceStep], pattern: str | None, known: RecordIds | None = None) -> frozenset[str]:
    """Ids the episode itself produced, written compact: in its successful writes' outputs and in refusals.

    A reply may name them: the records the agent wrote, and the records a refusal gave as its reason.
    """
    found: set[str] = set()
    for step in trace:
        if step.ok and step.write:
            text = _flat_text(step.output)
        elif step.error is not None and step.error.kind in ("policy", "permission"):
            text = step.error.message
        else:
            continue
        found.update(ids_in(text, pattern, None, hidden=False) if known is None else plain_ids_in(text, pattern, known))
    return frozenset(found)


def unmade_verbs(write_tools: frozenset[str], trace: list[TraceStep]) -> tuple[str, ...]:
    """The actions of the gym's writes (``write_tools``) that no write the episode made takes (``unmade_actions``)."""
    return unmade_actions(write_tools, frozenset(step.tool for step in trace if step.ok and step.write))


def _flat_text(value: Any) -> str:
    if isinstance(value, dict):
        return " ".join(f"{k} {_flat_text(v)}" for k, v in value.items())
    if isinstance(value, (list, tuple)):
        return " ".join(_flat_text(v) for v in value)
    return str(value)


class ChangeDiff:
    """Computes the rows an episode changed, against the template world.

    Args:
        base: Gives a read-only connection holding the template world; called only when a row changed.
        keys: Primary-key column of each table (``None`` to use the rowid).
        columns: Each table's column names, in the table's order.
    """

    def __init__(self, base: Callable[[], sqlite3.Connection], keys: dict[str, str | None],
                 columns: dict[str, list[str]]) -> None:
        self._base = base
        self._keys = keys
        self._columns = columns

    def changes(self, conn: sqlite3.Connection) -> list[tuple[RowChange, dict[str, Any] | None]]:
        """Return each changed row with the row's current values (``None`` when deleted)."""
        out: list[tuple[RowChange, dict[str, Any] | None]] = []
        logged = conn.execute(f"SELECT DISTINCT tbl, rid FROM {CHANGE_LOG} ORDER BY tbl, rid").fetchall()
        for table, rid in logged:
            cols = self._columns[table]
            select = f'SELECT * FROM "{table}" WHERE rowid = ?'
            before = self._base().execute(select, (rid,)).fetchone()
            after = conn.execute(select, (rid,)).fetchone()
            key_col = self._keys[table]
            row = after if after is not None else before
            if row is None:
                continue
            key = str(row[cols.index(key_col)]) if key_col else str(rid)
            current = dict(zip(cols, after, strict=True)) if after is not None else None
            if before is None:
                out.append((RowChange(table=table, key=key, op="insert"), current))
            elif after is None:
                out.append((RowChange(table=table, key=key, op="delete"), None))
            else:
                changed = [c for c, x, y in zip(cols, before, after, strict=True) if x != y]
                if changed:
                    out.append((RowChange(table=table, key=key, op="update", columns=changed), current))
        return out


def _allowed(change: RowChange, scopes: list[WriteScope]) -> bool:
    for scope in scopes:
        if scope.table != change.table:
            continue
        if change.op == "insert":
            if scope.insert:
                return True
            continue
        if change.op == "delete" and not scope.delete:
            continue
        if scope.ids is not None and change.key not in scope.ids:
            continue
        if change.op == "update" and scope.columns is not None and not set(change.columns) <= set(scope.columns):
            continue
        return True
    return False


def judge(
    task: Task,
    conn: sqlite3.Connection,
    trace: list[TraceStep],
    reply: str,
    diff: ChangeDiff,
    guard: ReadOnlyGuard,
    known_ids: RecordIds | None = None,
    domain_check: Callable[[DomainAssertion], tuple[bool, str]] | None = None,
    write_tools: frozenset[str] = frozenset(),
) -> Verdict:
    """Evaluate every assertion of ``task`` and return the verdict.

    Args:
        task: The task judged.
        conn: The episode's final world; only read, with ``guard`` active.
        trace: The episode's tool calls.
        reply: The agent's final reply.
        diff: Change tracker against the template world.
        guard: The connection's read-only guard.
        known_ids: The template world's record ids (see ``arena.core.ids``).
        domain_check: Runs a ``DomainAssertion`` (the gym's own check); without one such an assertion fails.
        write_tools: The names of the gym's write tools (a reply may not claim the actions the episode did not take).
    """
    with guard:
        return _judge(task, conn, trace, reply, diff, known_ids, domain_check, write_tools)


def _judge(
    task: Task,
    conn: sqlite3.Connection,
    trace: list[TraceStep],
    reply: str,
    diff: ChangeDiff,
    known_ids: RecordIds | None,
    domain_check: Callable[[DomainAssertion], tuple[bool, str]] | None,
    write_tools: frozenset[str] = frozenset(),
) -> Verdict:
    results: list[AssertionResult] = []
    scopes = [s for a in task.assertions if isinstance(a, SideEffectAssertion) for s in a.allowed]
    try:
        changes = [c for c, _ in diff.changes(conn)]
        unread = ""
    except sqlite3.OperationalError as exc:  # stopped at the verification's time bound
        changes, unread = [], f"the changed rows could not be read within the verification's time bound ({exc})"
    for change in changes:
        change.allowed = _allowed(change, scopes)
    unintended = [c for c in changes if not c.allowed]
    for i, assertion in enumerate(task.assertions):
        if isinstance(assertion, StateAssertion):
            ok, detail = check_state(conn, assertion)
        elif isinstance(assertion, TraceAssertion):
            ok, detail = check_trace(trace, assertion)
        elif isinstance(assertion, ResponseAssertion):
            records, read = read_outputs(trace)
            ok, detail = check_response(reply, assertion, ReplyEvidence(
                own_ids=episode_ids(trace, assertion.id_pattern, known_ids) if assertion.id_pattern else frozenset(),
                known_ids=known_ids, records=records, seen=texts_seen(read), values=read, prompt=task.prompt,
                quotes=system_quotes(trace), nested=nested_ids(trace),
                unmade=unmade_verbs(write_tools, trace) if assertion.id_pattern else ()))
        elif isinstance(assertion, DomainAssertion):
            ok, detail = (domain_check(assertion) if domain_check is not None
                          else (False, f"no gym check runs {assertion.check!r}"))
        else:
            ok = not unintended and not unread
            detail = unread or "; ".join(f"{c.op} {c.table}[{c.key}] {','.join(c.columns)}".strip()
                                         for c in unintended[:10])
        results.append(
            AssertionResult(index=i, kind=assertion.kind, description=assertion.description, passed=ok, detail=detail)
        )
    held = sum(r.passed for r in results)
    return Verdict(
        passed=held == len(results),
        score=held / len(results),
        side_effect_penalty=min(1.0, SIDE_EFFECT_STEP * len(unintended)),
        results=results,
        changes=changes,
    )

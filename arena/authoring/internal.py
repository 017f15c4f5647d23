"""What a gym's requesters must never hear: one declaration the policy, the reply rules and diagnosis share.

The kit declares what every gym treats as internal: a field whose name says so (internal notes, secrets,
passwords, tokens, margins, cost prices, risk and fraud scores, bank accounts; :data:`KIT_FIELD_WORDS`), the
contents of a record that is not for everyone (``visibility: restricted``: :data:`RESTRICTED_VISIBILITY`) and the
free text of a record flagged internal (``internal: 1``: :data:`INTERNAL_FLAGS`). A gym adds what its policy names,
as :class:`InternalItem` s given to ``make_domain(internal=...)``: the fields holding it, the kinds of record ids
that are internal (``SL`` for ``SL-301``) and patterns of its values (``tok_[0-9a-f]{16}``).

Who reads the declaration:

- the reply rules: every response check of the gym forbids :meth:`InternalData.forbidden_patterns` (the value
  patterns), so the verifier fails a reply stating them however spelled; internal ids are records, kept out by
  the id rule (a reply names only the records the request is about: an internal id the task's own program uses,
  a level it creates, may be named to the requester who asked for it);
- diagnosis (:func:`internal_data`): the internal values in what an agent read are the declared fields', the
  kit's and every internal id (but the task's own records), and a reply repeating one leaks internal data;
- the gym's conformance check (:func:`policy_disagreements`): the policy names every declared item, and every
  internal id or value shape its confidentiality rules name ("never reveal ... (SL-...)") is declared.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from functools import cache

from pydantic import BaseModel, ConfigDict, Field, field_validator

from arena.core import patterns

KIT_FIELD_WORDS = re.compile(r"internal|secret|private|password|token|ssn|margin|cost_price|risk|fraud|bank|iban|"
                             r"account_number", re.IGNORECASE)
"""Words that make a field internal in every gym (``internal_notes``, ``payment_token``, ``risk_score``)."""

RESTRICTED_VISIBILITY = frozenset({"restricted", "private", "internal", "confidential"})
"""Values of a record's ``visibility`` that keep its contents from requesters outside its audience."""

INTERNAL_FLAGS = ("internal", "private", "confidential", "restricted")
"""Fields that, set true (``internal: 1``), flag a record's free text internal (an internal note's body)."""

_ID_KIND = re.compile(r"^[A-Z][A-Z0-9]{0,7}$")
_NEVER = re.compile(r"\b(?:never|do not|don't|must not)\b[^.]*\b(?:reveal|disclose|tell|share|give|mention|state|"
                    r"show|expose)\b", re.IGNORECASE)
_SHAPE = re.compile(r"\b([A-Za-z][A-Za-z0-9]*[-_])(?:\.\.\.|…|\d+\b)")
"""An id or value shape a policy names: ``SL-...``, ``RR-1``, ``tok_…``."""
_SENTENCE = re.compile(r"(?<=[.!?])\s+|\n\s*[-*]\s+|\n{2,}")


class InternalItem(BaseModel):
    """One kind of internal data a gym's policy names.

    Attributes:
        what: The words the policy names it with (``internal ids of security levels``); the policy must contain
            them (compared case-insensitively, whitespace aside).
        fields: Record fields whose values are it (``security_level_id``).
        id_kinds: Id prefixes whose records' ids are it wherever they appear (``SL`` for ``SL-301``).
        patterns: Regular expressions of its values (``tok_[0-9a-f]{16}``), run by RE2 like every pack pattern.
    """

    model_config = ConfigDict(extra="forbid", frozen=True)

    what: str = Field(min_length=3)
    fields: tuple[str, ...] = ()
    id_kinds: tuple[str, ...] = ()
    patterns: tuple[str, ...] = ()

    @field_validator("id_kinds")
    @classmethod
    def _id_kinds(cls, value: tuple[str, ...]) -> tuple[str, ...]:
        bad = [kind for kind in value if not _ID_KIND.match(kind)]
        if bad:
            raise ValueError(f"id kinds are upper-case prefixes like 'SL' (of 'SL-301'), got {bad}")
        return value

    @field_validator("patterns")
    @classmethod
    def _patterns(cls, value: tuple[str, ...]) -> tuple[str, ...]:
        for pattern in value:
            patterns.compile_pattern(pattern)
        return value


class InternalData(BaseModel):
    """A gym's declaration of its internal data (the kit's own rules apply on top of it).

    Attributes:
        items: What the gym's policy names as internal.
    """

    model_config = ConfigDict(extra="forbid", frozen=True)

    items: tuple[InternalItem, ...] = ()

    @property
    def fields(self) -> frozenset[str]:
        """Every declared internal field."""
        return frozenset(f for item in self.items for f in item.fields)

    @property
    def id_kinds(self) -> tuple[str, ...]:
        """Every declared internal id kind, in declaration order."""
        return tuple(dict.fromkeys(k for item in self.items for k in item.id_kinds))

    @property
    def value_patterns(self) -> tuple[str, ...]:
        """Every declared value pattern, in declaration order."""
        return tuple(dict.fromkeys(p for item in self.items for p in item.patterns))

    def id_pattern(self) -> str | None:
        """One pattern matching an id of any internal kind (``SL-301``, ``ISS-29``), or ``None``."""
        kinds = self.id_kinds
        return rf"\b(?:{'|'.join(kinds)})-[A-Z]?\d+\b" if kinds else None

    def forbidden_patterns(self) -> list[str]:
        """What every reply check of the gym forbids: the value patterns (internal ids are the id rule's)."""
        return list(self.value_patterns)

    def is_internal_field(self, name: str) -> bool:
        """Whether a field's values are internal: declared by the gym, or named so by the kit's words."""
        return name in self.fields or KIT_FIELD_WORDS.search(name) is not None

    def is_internal_id(self, value: str) -> bool:
        """Whether ``value`` is the id of a record of an internal kind (``SL-301``, ``SL-N00002``)."""
        return _is_internal_id(self.id_kinds, value)

    def internal_ids_in(self, text: str) -> list[str]:
        """The internal ids ``text`` names, as written, in order."""
        pattern = self.id_pattern()
        return [m.group(0) for m in patterns.finditer(pattern, text)] if pattern else []

    def merged(self, other: InternalData) -> InternalData:
        """Both declarations' items (this one's first, repeats dropped)."""
        return InternalData(items=tuple(dict.fromkeys((*self.items, *other.items))))


@cache
def _id_regex(kinds: tuple[str, ...]) -> re.Pattern[str]:
    return re.compile(rf"(?:{'|'.join(map(re.escape, kinds))})-[A-Z]?\d+")


def _is_internal_id(kinds: tuple[str, ...], value: str) -> bool:
    return bool(kinds) and _id_regex(kinds).fullmatch(value.strip()) is not None


_DECLARED: dict[str, InternalData] = {}


def declare_internal(domain: str, data: InternalData) -> None:
    """Record ``data`` as the internal data of the gym called ``domain`` (``make_domain`` does this)."""
    _DECLARED[domain] = data


def internal_data(domain: str | None) -> InternalData:
    """The internal data the gym called ``domain`` declares (empty for a gym that declares none, or unknown here).

    The gym is loaded by name when it has not been yet (``arena.core.domains.get_domain``), so a process that only
    reads episodes finds the same declaration as the one that played them.
    """
    if domain is None:
        return InternalData()
    if domain not in _DECLARED:
        from arena.core.domains import GymLoadError, get_domain

        try:
            get_domain(domain)
        except (KeyError, GymLoadError):
            return InternalData()
    return _DECLARED.get(domain, InternalData())


def _folded(text: str) -> str:
    return " ".join(text.casefold().split())


def _sentences(policy: str) -> Iterable[str]:
    return (s for s in _SENTENCE.split(policy) if s.strip())


def policy_disagreements(policy: str, data: InternalData) -> list[str]:
    """Where a gym's policy and its internal-data declaration disagree (empty when they agree).

    - every declared item's ``what`` is in the policy;
    - every id or value shape a confidentiality sentence of the policy names ("never reveal ... (SL-...)",
      "(RR-1 … RR-4)", "payment tokens (``tok_…``)") is an internal id kind or the start of a declared pattern.
    """
    out: list[str] = []
    text = _folded(policy)
    for item in data.items:
        if _folded(item.what) not in text:
            out.append(f"the policy never names {item.what!r}, which the gym declares internal")
    declared = [*(f"{kind}-" for kind in data.id_kinds), *data.value_patterns]
    for sentence in _sentences(policy):
        if not _NEVER.search(sentence):
            continue
        for shape in dict.fromkeys(m.group(1) for m in _SHAPE.finditer(sentence)):
            if not any(shape in source or shape.casefold() in source.casefold() for source in declared):
                out.append(f"the policy keeps {shape}... from requesters ({sentence.strip()[:80]!r}) but the gym "
                           "declares no internal id kind or pattern for it")
    return out

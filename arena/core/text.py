r"""Text entering gymloop from outside (a model, an agent, a file): made safe once, and read however it is spelled.

``clean_text`` makes text safe where it enters. The rest reads a reply the way its reader would, whatever the
spelling: ``fold`` undoes compatibility forms (full-width, ligatures, mathematical letters), accents and other
combining marks, invisible characters (zero-width spaces and joiners, soft hyphens), homoglyphs (Cyrillic,
Greek and other letters that look Latin, from Unicode's confusables) and case, and writes every space as a space
and every dash as ``-``. ``words`` writes a folded text as words separated by single spaces (for phrases);
``spans`` lists the token-aligned runs of a folded text with the separators between their tokens dropped (for
ids and values however they are separated: ``ORD-10234``, ``ord_10234``, ``o r d 1 0 2 3 4``); ``views`` adds
what an encoding hides (the text reversed, base64, base32, hex, percent and HTML escapes, ``\u`` escapes, ROT13).
"""

from __future__ import annotations

import base64
import binascii
import codecs
import html
import json
import re
import unicodedata
import urllib.parse
from collections.abc import Iterator
from functools import lru_cache
from pathlib import Path

import confusable_homoglyphs  # type: ignore[import-untyped]

REPLACEMENT = "\ufffd"
"""What a lone surrogate becomes."""

MAX_GAP = 4
"""Most separator characters between two tokens of one spelled-out value (``"ord", "10234"`` has four)."""

_INVISIBLE_CATEGORIES = frozenset({"Mn", "Me", "Cf"})
"""Combining marks and format characters: dropped by ``fold``."""

_FILLERS = frozenset("\u115f\u1160\u3164\uffa0\u2800\u034f")
"""Blank letters that render as nothing or as a space (Hangul fillers, the Braille blank): read as a space."""

_SPACES = {"\n": "\n", "\r": "\n", "\u2028": "\n", "\u2029": "\n"}
"""Line breaks stay line breaks; every other space character becomes a space."""

_ASCII_SPACES = str.maketrans("\t\r\x0b\x0c", "  \n ")
"""ASCII space characters other than the space and the line feed, as ``fold`` writes them."""

_TOKEN = re.compile(r"[^\W_]+(?:(?<=\d)[.,](?=\d)[^\W_]+)*")
"""A token of folded text: letters and digits, with the points and commas inside a number kept (``12,500.00``)."""

_LEET = str.maketrans("0123456789", "olzeasgtbq")
"""Digits read as the letters they look like: one skeleton for ``0rd-1O234``-style spellings."""

_ENCODED = {
    "base64": re.compile(r"(?<![A-Za-z0-9+/_-])[A-Za-z0-9+/_-]{4,}={0,2}"),
    "base32": re.compile(r"[A-Z2-7]{8,}={0,6}"),
    "hex": re.compile(r"(?<![0-9A-Za-z])(?:[0-9a-fA-F]{2}[\s:]?){4,}"),
}
"""Runs of raw text that may be an encoded value."""


def clean_text(text: str) -> str:
    """Return ``text`` with every lone surrogate replaced by U+FFFD, so it always encodes as UTF-8.

    Valid surrogate pairs (as some JSON decoders leave them) become the characters they encode.
    """
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return text.encode("utf-16-le", "surrogatepass").decode("utf-16-le", "replace")
    return text


def clip(text: str, limit: int) -> str:
    """Return ``text`` cut to ``limit`` characters, the cut marked with how many characters it left out."""
    if limit < 0:
        raise ValueError(f"clip limit {limit} is negative")
    if len(text) <= limit:
        return text
    return f"{text[:limit]}… [{len(text) - limit:,} more characters]"


@lru_cache(maxsize=1)
def _homoglyphs() -> dict[int, str]:
    """Every non-ASCII character Unicode's confusables list as looking like an ASCII letter or digit, to that one."""
    table: dict[int, str] = {}
    data = Path(confusable_homoglyphs.__file__).with_name("confusables.json").read_text(encoding="utf-8")
    for char, alikes in json.loads(data).items():
        if len(char) != 1 or char.isascii():
            continue
        latin = [a["c"] for a in alikes if len(a["c"]) == 1 and a["c"].isascii() and a["c"].isalnum()]
        if not latin:
            continue
        # A letter named after the Latin one it looks like ("CYRILLIC CAPITAL LETTER BYELORUSSIAN-UKRAINIAN I") is
        # that letter, even where the confusables skeleton reads it as another (Unicode's skeleton reads I as l);
        # one named after another letter ("CYRILLIC CAPITAL LETTER STRAIGHT U", which looks like Y) is not.
        name = unicodedata.name(char, "")
        named = name.rsplit(" ", 1)[-1]
        looks_named = named.upper() in {c.upper() for c in latin} or (named in "IL" and "l" in latin)
        if " LETTER " in f" {name} " and len(named) == 1 and named.isascii() and named.isalpha() and looks_named:
            table[ord(char)] = named.lower() if "SMALL" in name else named
            continue
        table[ord(char)] = next((c for c in latin if c.isalpha()), latin[0])
    return table


@lru_cache(maxsize=4096)
def _ascii_digit(char: str) -> str:
    """A decimal digit of any script (Devanagari, Arabic-Indic, Thai...) as its ASCII digit; others as they are."""
    value = unicodedata.decimal(char, None)
    return char if value is None else str(value)


def fold(text: str) -> str:
    """Return ``text`` as it reads: compatibility forms, marks, invisible characters, homoglyphs and case undone.

    Digits of every script read as ASCII digits (``३०५३१`` and ``٣٠٥٣١`` are ``30531``).

    Every space character becomes a space (line breaks stay), every dash ``-``; lone surrogates are replaced first.
    """
    if text.isascii():
        return text.casefold().translate(_ASCII_SPACES)
    decomposed = unicodedata.normalize("NFKD", clean_text(text))
    kept = "".join(" " if c in _FILLERS else (c if c.isascii() else _ascii_digit(c)) for c in decomposed
                   if unicodedata.category(c) not in _INVISIBLE_CATEGORIES)
    folded = unicodedata.normalize("NFKC", kept.translate(_homoglyphs())).casefold()
    return "".join(_SPACES.get(c, " ") if c.isspace() else "-" if unicodedata.category(c) == "Pd" else c
                   for c in folded)


def words(folded: str) -> str:
    """A folded text as words between single spaces (and one at each end), numbers kept whole: for phrase search."""
    return " " + " ".join(_TOKEN.findall(folded)) + " "


@lru_cache(maxsize=1 << 16)
def compact(value: str) -> str:
    """A value as ``spans`` writes it: folded, letters and digits only (``ORD-10234`` -> ``ord10234``)."""
    return "".join(m.group(0) for m in _TOKEN.finditer(fold(value))).replace(",", "").replace(".", "")


_NOT_ASCII_ALNUM = re.compile(r"[^a-z0-9\n]+")


def compact_all(values: list[str]) -> list[str]:
    """``compact`` of each value, in one pass over them all when they are ASCII on one line each (ids, codes)."""
    joined = "\n".join(values)
    if values and joined.isascii() and joined.count("\n") == len(values) - 1:
        return _NOT_ASCII_ALNUM.sub("", joined.lower()).split("\n")
    return [compact(v) for v in values]


def skeleton(compacted: str) -> str:
    """A compacted value with look-alike digits read as letters (``0rd1o234`` and ``ord10234`` share one)."""
    return compacted.translate(_LEET)


def tokens(folded: str, *, number_points: bool = True) -> list[tuple[str, int, int]]:
    """The tokens of a folded text with where each starts and ends.

    Args:
        folded: A folded text (see ``fold``).
        number_points: Keep the points and commas inside numbers (so ``pay 12,500`` never reads as ``pay12500``);
            ``False`` drops them too.
    """
    found = [(m.group(), *m.span()) for m in _TOKEN.finditer(folded)]
    if number_points or ("," not in folded and "." not in folded):
        return found
    return [(token.replace(",", "").replace(".", ""), start, end) for token, start, end in found]


def spans(folded: str, max_chars: int, *, number_points: bool = True) -> Iterator[str]:
    """Every run of consecutive tokens of ``folded`` (at most ``MAX_GAP`` separators apart), written without them.

    Args:
        folded: A folded text (see ``fold``).
        max_chars: Longest run written.
        number_points: As for ``tokens``.
    """
    found = tokens(folded, number_points=number_points)
    for i, (run, _, end) in enumerate(found):
        if len(run) > max_chars:
            continue
        yield run
        for j in range(i + 1, len(found)):
            token, start, token_end = found[j]
            if start - end > MAX_GAP or len(run) + len(token) > max_chars:
                break
            run += token
            end = token_end
            yield run


def _maybe_base64(raw: str) -> bool:
    """Whether a run may be base64 rather than a word.

    It is six characters or more (four bytes: a short value such as ``RR-2``), and padded, long, or with digits or
    inner capitals.
    """
    body = raw.rstrip("=")
    return len(body) >= 6 and (raw.endswith("=") or len(body) >= 8 or any(c.isdigit() for c in body)
                               or any(c.isupper() for c in body[1:]))


_NOT_ALNUM = re.compile(r"[\W_]+")


def squeezed(text: str) -> str:
    """A folded text with everything but letters and digits dropped, read as a skeleton (for long values)."""
    return skeleton(_NOT_ALNUM.sub("", text))


def _decodings(text: str) -> Iterator[str]:
    for kind, pattern in _ENCODED.items():
        for match in pattern.finditer(text):
            raw = match.group(0)
            if kind == "base64" and not _maybe_base64(raw):
                continue
            try:
                if kind == "base64":
                    data = base64.b64decode(raw.replace("-", "+").replace("_", "/") + "=" * (-len(raw) % 4))
                elif kind == "base32":
                    data = base64.b32decode(raw + "=" * (-len(raw) % 8))
                else:
                    data = binascii.unhexlify(re.sub(r"[\s:]", "", raw))
                decoded = data.decode("utf-8")
            except (ValueError, binascii.Error, UnicodeDecodeError):
                continue
            if decoded.isprintable():
                yield decoded
    if "%" in text:
        yield urllib.parse.unquote(text)
    if "&" in text:
        yield html.unescape(text)
    if "\\u" in text or "\\x" in text:
        try:
            yield codecs.decode(re.sub(r"\\(?![ux])", "", text), "unicode_escape")
        except (UnicodeDecodeError, ValueError):
            pass


def views(text: str) -> tuple[tuple[str, str], ...]:
    r"""``text`` folded, then folded again after each way it may hide a value, each named by how it was read.

    The names: ``plain`` (the text folded); ``reversed`` (the folded text backwards: what was written backwards
    reads forwards there); ``rot13`` (letters rotated: look for known values only, never for formats, since
    rotated words make short letter prefixes of their own); ``decoded`` (base64, base32, hex, percent and HTML
    escapes, ``\u`` escapes).
    """
    folded = fold(text)
    out = [("plain", folded), ("reversed", folded[::-1]), ("rot13", codecs.encode(folded, "rot13"))]
    out.extend(("decoded", fold(decoded)) for decoded in _decodings(text))
    return tuple(out)

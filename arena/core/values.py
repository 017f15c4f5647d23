"""Dates and amounts however a person writes them: one parser for tool arguments and for the facts of a reply.

``parse_date`` reads a whole value as a calendar date ("2025-05-03", "05/03/2025", "3.5.2025", "20250503",
"May 3, 2025", "3 May 2025", "11 September 2022", "Sep 11th, 2022", "Saturday, May 3rd 2025"); ``parse_amount``
reads a whole value as an amount ("72.67", "$1,234.50", "1.234,50 EUR", "USD 72.67", "72,67 €"). ``dates_in`` and
``amounts_in`` find them inside free text, each with where it stands. Slashed dates are read month first (US), as
the built-in gyms' legacy records write them; a day above 12 in the first place is read day first.

The other way round, ``amount_spellings`` and ``date_spellings`` are the ways gymloop itself writes a value when it
looks for it in a reply: the spellings a task's reply check lists and the ones the reply rules look for.
"""

from __future__ import annotations

import re
from datetime import date
from decimal import Decimal, InvalidOperation

__all__ = ["MONTHS", "amount_spellings", "amounts_in", "date_spellings", "dates_in", "parse_amount", "parse_date"]

MONTHS = {name: i + 1 for i, names in enumerate((
    ("january", "jan"), ("february", "feb"), ("march", "mar"), ("april", "apr"), ("may",), ("june", "jun"),
    ("july", "jul"), ("august", "aug"), ("september", "sep", "sept"), ("october", "oct"), ("november", "nov"),
    ("december", "dec"),
)) for name in names}
"""English month names and their abbreviations, to the month's number."""

_MONTH = r"(?P<month>" + "|".join(sorted(MONTHS, key=len, reverse=True)) + r")\.?"
_DAY = r"(?P<day>\d{1,2})(?:st|nd|rd|th)?"
_YEAR = r"(?P<year>\d{4})"
_WEEKDAY = r"(?:(?:mon|tues|wednes|thurs|fri|satur|sun)day,?\s+)?"

_DATE_FORMS = (
    re.compile(r"(?<![\d.])(?P<year>\d{4})-(?P<month>\d{1,2})-(?P<day>\d{1,2})(?![\d])"),
    re.compile(r"(?<![\d.])(?P<year>\d{4})/(?P<month>\d{1,2})/(?P<day>\d{1,2})(?![\d])"),
    re.compile(r"(?<![\d./])(?P<a>\d{1,2})/(?P<b>\d{1,2})/(?P<year>\d{4})(?![\d])"),
    re.compile(r"(?<![\d.])(?P<day>\d{1,2})\.(?P<month>\d{1,2})\.(?P<year>\d{4})(?![\d])"),
    re.compile(rf"(?i)\b{_WEEKDAY}{_MONTH}\s+{_DAY},?\s+{_YEAR}\b"),
    re.compile(rf"(?i)\b{_WEEKDAY}(?:the\s+)?{_DAY}(?:\s+of)?\s+{_MONTH},?\s+{_YEAR}\b"),
    re.compile(rf"(?i)\b{_WEEKDAY}{_DAY}-{_MONTH}-{_YEAR}\b"),
)
"""Date forms found inside text (ISO, slashed, dotted, month names in either order)."""

_COMPACT_DATE = re.compile(r"^(?P<year>\d{4})(?P<month>\d{2})(?P<day>\d{2})$")

_AMOUNT = re.compile(
    r"(?<![\w.,])(?:(?P<pre>[$€£¥]|usd|eur|gbp|chf|cad|aud|jpy)\s?)?"
    r"(?P<number>-?\d{1,3}(?:(?P<sep>[,.\u00a0 ])\d{3})+(?:(?P<dec>[.,])\d{1,2})?|-?\d+(?:[.,]\d{1,2})?)"
    r"(?:\s?(?P<post>[$€£¥]|usd|eur|gbp|chf|cad|aud|jpy))?(?![\w])",
    re.IGNORECASE,
)
"""An amount: a number with or without thousands separators and decimals, with or without a currency."""


def _date(year: int, month: int, day: int) -> date | None:
    try:
        return date(year, month, day)
    except ValueError:
        return None


def _from_match(match: re.Match[str]) -> date | None:
    groups = match.groupdict()
    year = int(groups["year"])
    if groups.get("a") is not None:
        first, second = int(groups["a"]), int(groups["b"])
        month, day = (first, second) if first <= 12 else (second, first)
        return _date(year, month, day)
    raw_month = groups["month"].lower().rstrip(".")
    month = MONTHS[raw_month] if raw_month in MONTHS else int(raw_month)
    return _date(year, month, int(groups["day"]))


def parse_date(text: str) -> date | None:
    """The date ``text`` is, written in any common form, or ``None`` when it is not one whole date."""
    value = text.strip()
    compact = _COMPACT_DATE.match(value)
    if compact:
        return _date(int(compact["year"]), int(compact["month"]), int(compact["day"]))
    for form in _DATE_FORMS:
        match = form.fullmatch(value)
        if match:
            return _from_match(match)
    return None


def dates_in(text: str) -> list[tuple[date, int, int]]:
    """Every date written inside ``text``, with where it starts and ends, in order of position."""
    found: dict[int, tuple[date, int, int]] = {}
    for form in _DATE_FORMS:
        for match in form.finditer(text):
            day = _from_match(match)
            if day is not None and not any(s <= match.start() < e for _, s, e in found.values()):
                found[match.start()] = (day, match.start(), match.end())
    return [found[k] for k in sorted(found)]


def _number(raw: str, sep: str | None, dec: str | None) -> Decimal | None:
    if sep is not None:
        digits = raw.replace(sep, "")
        if dec is not None:
            digits = digits.replace(dec, ".")
    elif "," in raw:
        whole, _, part = raw.partition(",")
        digits = f"{whole}.{part}"
    else:
        digits = raw
    try:
        return Decimal(digits)
    except InvalidOperation:
        return None


def parse_amount(text: str) -> Decimal | None:
    """The amount ``text`` is ("$1,234.50", "1.234,50 EUR", "72,67"), or ``None`` when it is not one whole amount."""
    match = _AMOUNT.fullmatch(text.strip())
    if match is None:
        return None
    return _number(match["number"], match["sep"], match["dec"])


def amounts_in(text: str) -> list[tuple[Decimal, int, int]]:
    """Every number written inside ``text`` read as an amount, with where it starts and ends."""
    out: list[tuple[Decimal, int, int]] = []
    for match in _AMOUNT.finditer(text):
        value = _number(match["number"], match["sep"], match["dec"])
        if value is not None:
            out.append((value, match.start(), match.end()))
    return out


def amount_spellings(value: float) -> list[str]:
    """The ways gymloop writes an amount, each once: two decimals bare, then with thousands separators.

    ``1234.5`` is written ``1234.50`` and ``1,234.50``; ``72.5`` once, ``72.50``.
    """
    return list(dict.fromkeys((f"{value:.2f}", f"{value:,.2f}")))


def date_spellings(day: date) -> list[str]:
    """The ways gymloop writes a date: ``2025-03-04``, ``March 4, 2025``, ``4 March 2025``."""
    month = day.strftime("%B")
    return [day.isoformat(), f"{month} {day.day}, {day.year}", f"{day.day} {month} {day.year}"]


_UNITS = {word: i for i, word in enumerate((
    "zero one two three four five six seven eight nine ten eleven twelve thirteen fourteen fifteen sixteen "
    "seventeen eighteen nineteen").split())}
_TENS = {word: 10 * (i + 2) for i, word in enumerate("twenty thirty forty fifty sixty seventy eighty ninety".split())}
_SCALES = {"thousand": 1_000, "million": 1_000_000}
_NUMBER_WORD = re.compile(r"[a-z]+")
_DIGIT = r"(?:zero|oh|one|two|three|four|five|six|seven|eight|nine)"
_DIGIT_WORDS = re.compile(rf"\b{_DIGIT}(?:[ -]+{_DIGIT}){{2,}}\b")


def number_words_in(text: str) -> list[tuple[int, int, int]]:
    """Every whole number written in English words inside a folded ``text``, with where it starts and ends.

    "thirty thousand four hundred thirty-six" is 30436 and "one hundred and five" 105; words are joined by spaces,
    dashes or "and" (a scale word alone, "hundred", starts no number). Three digit words or more in a row are read
    digit by digit ("one zero two nine nine" is 10299).
    """
    out: list[tuple[int, int, int]] = []
    total = current = 0
    start = end = reach = -1
    for match in _NUMBER_WORD.finditer(text):
        word = match.group(0)
        joined = start >= 0 and not text[reach:match.start()].strip(" -")
        if word == "and" and joined:
            reach = match.end()
            continue
        known = word in _UNITS or word in _TENS or word == "hundred" or word in _SCALES
        last = current % 100
        fits = (word not in _TENS or last == 0) and (word not in _UNITS or last == 0 or (
            last >= 20 and last % 10 == 0 and _UNITS[word] < 10))
        if start >= 0 and not (known and joined and fits):
            out.append((total + current, start, end))
            total = current = 0
            start = -1
        if not known or (start < 0 and (word == "hundred" or word in _SCALES)):
            continue
        if start < 0:
            start = match.start()
        if word in _UNITS:
            current += _UNITS[word]
        elif word in _TENS:
            current += _TENS[word]
        elif word == "hundred":
            current = max(current, 1) * 100
        else:
            total += max(current, 1) * _SCALES[word]
            current = 0
        end = reach = match.end()
    if start >= 0:
        out.append((total + current, start, end))
    for match in _DIGIT_WORDS.finditer(text):  # "one zero two nine nine": a number read digit by digit
        digits = "".join(str(_UNITS.get(w, 0)) for w in re.findall(r"[a-z]+", match.group(0)))
        out = [n for n in out if not match.start() <= n[1] < match.end()]
        out.append((int(digits), match.start(), match.end()))
    return sorted(out, key=lambda n: n[1])

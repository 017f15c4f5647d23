"""Dates and amounts, one way for every gym: what tools accept, how old rows store them, how a reply may say them.

Tools take dates as ``YYYY-MM-DD`` (:func:`iso_date`) and amounts as positive numbers (:func:`positive_amount`),
refusing anything else with an ``InvalidArgument`` that names the parameter and the value. Old rows keep legacy
formats, written by :func:`legacy_date` and :func:`legacy_amount` (the ``legacy_format_rate`` knob's mess) and
read back by :func:`read_date` and :func:`read_amount` through ``arena.core.values``, the one reading of dates and
amounts that tool arguments and reply facts share. Replies may state a date or an amount in any of the spellings
:func:`dates` and :func:`amounts` list (what a template puts in ``says(...)``).
"""

from __future__ import annotations

import math
import re
from datetime import date

from arena.core.toolkit import InvalidArgument
from arena.core.values import amount_spellings, date_spellings, parse_amount, parse_date

ISO_DATE = re.compile(r"\d{4}-\d{2}-\d{2}")
"""A canonical date: ``YYYY-MM-DD``."""

LEGACY_DATES: tuple[tuple[re.Pattern[str], str], ...] = (
    (re.compile(r"(\d{2})/(\d{2})/(\d{4})"), "%m/%d/%Y"),
    (re.compile(r"(\d{2})\.(\d{2})\.(\d{4})"), "%d.%m.%Y"),
    (re.compile(r"(\d{4})(\d{2})(\d{2})"), "%Y%m%d"),
)
"""The legacy date formats old rows keep, by style: 0 ``MM/DD/YYYY``, 1 ``DD.MM.YYYY``, 2 ``YYYYMMDD``."""

CURRENCY_SIGNS = {"USD": "$", "GBP": "£"}
"""Currencies whose legacy amounts are written with a sign in front (others put the code after)."""

MONTH_ABBREVIATIONS = ("Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec")
"""The months as legacy styles 3 to 5 write them."""

def iso_date(value: str, param: str) -> date:
    """A tool's date argument, which must be ``YYYY-MM-DD``.

    Raises:
        InvalidArgument: Any other format, or no such day, naming the parameter and the value.
    """
    if not ISO_DATE.fullmatch(value):
        raise InvalidArgument(f"{param}: {value!r} is not a date in YYYY-MM-DD format")
    try:
        return date.fromisoformat(value)
    except ValueError as exc:
        raise InvalidArgument(f"{param}: {value!r} is not a valid calendar date") from exc


def positive_amount(value: float, param: str, *, most: float | None = None, whole_cents: bool = False) -> float:
    """A tool's amount argument: a finite number above zero.

    ``most`` caps it; ``whole_cents`` refuses a fraction of a cent (and returns the amount rounded to cents).

    Raises:
        InvalidArgument: Zero, negative, not finite, above ``most`` or finer than a cent, naming the parameter and the
            value.
    """
    if not math.isfinite(value) or value <= 0 or (most is not None and value > most):
        raise InvalidArgument(f"{param}: {value!r} must be a positive number"
                              + (f" of at most {most:,.2f}" if most is not None else ""))
    if whole_cents and abs(cents(value) - value) > 1e-6:
        raise InvalidArgument(f"{param}: {value!r} has more than two decimals")
    return cents(value) if whole_cents else float(value)


def cents(value: float) -> float:
    """An amount rounded to cents (half away from zero for positive amounts)."""
    return round(value + 1e-9, 2)


def legacy_date(day: date, style: int = 0) -> str:
    """``day`` as an old row or a person writes it, by ``style``.

    0 ``03/04/2025``, 1 ``04.03.2025``, 2 ``20250304``, 3 ``Mar 4, 2025``, 4 ``4 Mar 2025``, 5 ``04-Mar-2025``;
    :func:`read_date` reads every one of them back.

    Raises:
        ValueError: No such style, naming it.
    """
    if 0 <= style < len(LEGACY_DATES):
        return day.strftime(LEGACY_DATES[style][1])
    month = MONTH_ABBREVIATIONS[day.month - 1]
    spelled = (f"{month} {day.day}, {day.year}", f"{day.day} {month} {day.year}", f"{day.day:02d}-{month}-{day.year}")
    if not 0 <= style - len(LEGACY_DATES) < len(spelled):
        raise ValueError(f"legacy date style {style} is none of 0 to {len(LEGACY_DATES) + len(spelled) - 1}")
    return spelled[style - len(LEGACY_DATES)]


def legacy_amount(value: float, currency: str) -> str:
    """``value`` as an old row or a person writes it: ``$12,500.00``, ``£12,500.00`` or ``12,500.00 EUR``.

    :func:`read_amount` reads it back.
    """
    shown = f"{value:,.2f}"
    return f"{CURRENCY_SIGNS[currency]}{shown}" if currency in CURRENCY_SIGNS else f"{shown} {currency}"


def read_date(text: str) -> date:
    """A date a world row stores, ``YYYY-MM-DD`` or a legacy style (``MM/DD/YYYY``, ``DD.MM.YYYY``, ``YYYYMMDD``).

    Read by ``arena.core.values.parse_date``, the one reading of dates that tool arguments and reply facts share.

    Raises:
        ValueError: The text is no date (a data bug), naming it.
    """
    day = parse_date(text)
    if day is None:
        raise ValueError(f"unreadable stored date {text!r}")
    return day


def read_amount(stored: object) -> float:
    """The number an amount column holds, a number or a text form (``$12,500.00``, ``12,500.00 EUR``).

    Text is read by ``arena.core.values.parse_amount``, the one reading of amounts.

    Raises:
        ValueError: The stored value is no amount (a data bug), naming it.
    """
    if isinstance(stored, int | float) and not isinstance(stored, bool):
        return float(stored)
    amount = parse_amount(str(stored))
    if amount is None:
        raise ValueError(f"unreadable stored amount {stored!r}")
    return float(amount)


def amounts(value: float) -> list[str]:
    """The ways a reply may write an amount: ``1,234.50`` and ``1234.50``, in sorted order.

    The spellings are ``arena.core.values.amount_spellings``, the ones the reply rules look for too.
    """
    return sorted(amount_spellings(value))


def dates(day: date) -> list[str]:
    """The ways a reply may write a date: ``2025-03-04``, ``March 4, 2025``, ``4 March 2025``.

    The spellings are ``arena.core.values.date_spellings``, the ones the reply rules look for too.
    """
    return date_spellings(day)

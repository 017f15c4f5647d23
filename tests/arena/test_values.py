"""Dates and amounts however a person writes them (the one parser of tool arguments and reply facts)."""

from datetime import date
from decimal import Decimal

import pytest

from arena.authoring import legacy_amount, legacy_date, read_amount
from arena.core.values import amount_spellings, amounts_in, date_spellings, dates_in, parse_amount, parse_date


@pytest.mark.parametrize("text", ["2025-05-03", "05/03/2025", "3.5.2025", "20250503", "May 3, 2025", "3 May 2025",
                                  "Saturday, May 3rd 2025", "the 3rd of May 2025", "03-May-2025", "2025/05/03"])
def test_a_date_reads_the_same_in_every_common_form(text):
    assert parse_date(text) == date(2025, 5, 3)


def test_a_slashed_date_is_month_first_unless_the_first_number_cannot_be_a_month():
    assert parse_date("11/09/2022") == date(2022, 11, 9)
    assert parse_date("13/05/2025") == date(2025, 5, 13)
    assert parse_date("2025-02-30") is None and parse_date("May 3") is None and parse_date("soon") is None


def test_dates_are_found_inside_text_in_order():
    found = dates_in("Shipped on May 3, 2025 and due 2025-06-01; first seen 11 September 2022.")
    assert [d for d, _, _ in found] == [date(2025, 5, 3), date(2025, 6, 1), date(2022, 9, 11)]


@pytest.mark.parametrize(("text", "value"), [("72.67", "72.67"), ("$1,234.50", "1234.50"), ("1.234,50 EUR", "1234.50"),
                                             ("USD 72.67", "72.67"), ("72,67 €", "72.67"), ("12500", "12500")])
def test_an_amount_reads_the_same_with_any_separators_and_currency(text, value):
    assert parse_amount(text) == Decimal(value)


def test_amounts_are_found_inside_text():
    assert [a for a, _, _ in amounts_in("Refund of $72.67 (was 1,234.50 EUR)")] == [Decimal("72.67"),
                                                                                     Decimal("1234.50")]
    assert parse_amount("abc") is None


def test_every_spelling_gymloop_writes_reads_back_as_its_value():
    assert amount_spellings(1234.5) == ["1234.50", "1,234.50"] and amount_spellings(72.5) == ["72.50"]
    assert all(parse_amount(s) == Decimal("1234.50") for s in amount_spellings(1234.5))
    day = date(2025, 3, 4)
    assert date_spellings(day) == ["2025-03-04", "March 4, 2025", "4 March 2025"]
    assert all(parse_date(s) == day for s in date_spellings(day))
    assert [parse_date(legacy_date(day, style)) for style in range(6)] == [day] * 6
    with pytest.raises(ValueError, match="style 6"):
        legacy_date(day, 6)
    written = [legacy_amount(12500, currency) for currency in ("USD", "GBP", "EUR")]
    assert written == ["$12,500.00", "£12,500.00", "12,500.00 EUR"]
    assert [read_amount(text) for text in written] == [12500.0] * 3

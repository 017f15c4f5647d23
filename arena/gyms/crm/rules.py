"""The CRM's own formats: phone numbers as tools take them and as the legacy CRM stored them.

Dates (``YYYY-MM-DD``, legacy ``MM/DD/YYYY``) and amounts (legacy ``$12,500.00``, ``12,500.00 EUR``) are the kit's
(``arena.authoring.iso_date``, ``legacy_date``, ``read_date``, ``legacy_amount``, ``read_amount``).
"""

from __future__ import annotations

import re

PHONE = re.compile(r"\+\d{8,15}")
"""A canonical phone number: ``+`` then the country code and number, digits only (E.164)."""


def canonical_phone(code: str, number: str) -> str:
    """The E.164 form of a national ``number`` (ten digits) in the country with dialling ``code``."""
    return f"+{code}{number}"


def legacy_phone(code: str, number: str, style: int) -> str:
    """One of the legacy CRM's phone formats for a national ``number`` (ten digits).

    Args:
        code: The country's dialling code.
        number: The national number, ten digits.
        style: Which legacy format: 0 ``(415) 555-0123``, 1 ``415.555.0123``, 2 ``00 1 415 555 0123``.
    """
    a, b, c = number[:3], number[3:6], number[6:]
    if style == 0:
        return f"({a}) {b}-{c}"
    if style == 1:
        return f"{a}.{b}.{c}"
    return f"00 {code} {a} {b} {c}"

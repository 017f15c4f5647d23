"""BFCL's math functions (``MathAPI``): arithmetic, statistics, unit conversions; they keep no state.

``logarithm`` and ``square_root`` compute at the precision asked for (mpmath and decimal digits) and return the
result as text, with the digits that precision gives.
"""

from __future__ import annotations

import decimal
import math
import sqlite3
from typing import Any

import mpmath

from arena.core.toolkit import ToolContext, tool
from arena.gyms.bfcl.classes import FunctionClass, Query
from arena.gyms.bfcl.store import Number, PythonError, as_bfcl

TO_METERS: dict[str, int | float] = {"km": 1000, "m": 1, "cm": 0.01, "mm": 0.001, "um": 1e-06, "nm": 1e-09}
IMPERIAL: dict[str, float] = {"cm_to_in": 0.393701, "in_to_cm": 2.54, "m_to_ft": 3.28084, "ft_to_m": 0.3048,
                              "m_to_yd": 1.09361, "yd_to_m": 0.9144, "km_to_miles": 0.621371, "miles_to_km": 1.60934,
                              "kg_to_lb": 2.20462, "lb_to_kg": 0.453592, "celsius_to_fahrenheit": 1.8,
                              "fahrenheit_to_celsius": 5 / 9}


def _digits(value: Any) -> str:
    """An mpmath number's digits as mpmath writes them at the working precision (``mpf('2.0')`` gives ``2.0``)."""
    text = repr(value)
    return text[len("mpf('"):-2] if text.startswith("mpf('") else str(value)


def _shown(value: Any) -> Any:
    """A result as a tool returns it: numbers as they are, anything else (a complex number) as text."""
    return value if isinstance(value, (int, float)) else str(value)


@tool(mode="read", entity="math", operation="action")
@as_bfcl
def logarithm(ctx: ToolContext, value: Number, base: Number, precision: int) -> dict[str, Any]:
    """Compute the logarithm of a number in a base, to a number of significant digits.

    Args:
        value: The number.
        base: The base.
        precision: Significant digits to compute with.
    """
    try:
        with mpmath.workdps(precision):
            return {"result": _digits(mpmath.log(value) / mpmath.log(base))}
    except Exception as exc:  # every failure of the computation is the tool's error result, as in BFCL
        return {"error": str(exc)}


@tool(mode="read", entity="math", operation="action")
@as_bfcl
def mean(ctx: ToolContext, numbers: list[Number]) -> dict[str, Any]:
    """Compute the mean of numbers.

    Args:
        numbers: The numbers.
    """
    if not numbers:
        return {"error": "Cannot calculate mean of an empty list"}
    return {"result": sum(numbers) / len(numbers)}


@tool(mode="read", entity="math", operation="action")
@as_bfcl
def standard_deviation(ctx: ToolContext, numbers: list[Number]) -> dict[str, Any]:
    """Compute the (population) standard deviation of numbers.

    Args:
        numbers: The numbers.
    """
    if not numbers:
        return {"error": "Cannot calculate standard deviation of an empty list"}
    centre = sum(numbers) / len(numbers)
    return {"result": math.sqrt(sum((x - centre) ** 2 for x in numbers) / len(numbers))}


@tool(mode="read", entity="math", operation="action")
@as_bfcl
def si_unit_conversion(ctx: ToolContext, value: Number, unit_in: str, unit_out: str) -> dict[str, Any]:
    """Convert a length between SI units (km, m, cm, mm, um, nm).

    Args:
        value: The length.
        unit_in: Its unit.
        unit_out: The unit to convert to.
    """
    if unit_in not in TO_METERS or unit_out not in TO_METERS:
        return {"error": f"Conversion from '{unit_in}' to '{unit_out}' is not supported"}
    return {"result": value * TO_METERS[unit_in] * (1 / TO_METERS[unit_out])}


@tool(mode="read", entity="math", operation="action")
@as_bfcl
def imperial_si_conversion(ctx: ToolContext, value: Number, unit_in: str, unit_out: str) -> dict[str, Any]:
    """Convert a value between imperial and SI units (cm/in, m/ft, m/yd, km/miles, kg/lb, celsius/fahrenheit).

    Args:
        value: The value.
        unit_in: Its unit.
        unit_out: The unit to convert to.
    """
    if unit_in == unit_out:
        return {"result": value}
    key = f"{unit_in}_to_{unit_out}"
    if key not in IMPERIAL:
        return {"error": f"Conversion from '{unit_in}' to '{unit_out}' is not supported"}
    if key == "celsius_to_fahrenheit":
        return {"result": value * IMPERIAL[key] + 32}
    if key == "fahrenheit_to_celsius":
        return {"result": (value - 32) * IMPERIAL[key]}
    return {"result": value * IMPERIAL[key]}


@tool(mode="read", entity="math", operation="action")
@as_bfcl
def add(ctx: ToolContext, a: Number, b: Number) -> dict[str, Any]:
    """Add two numbers.

    Args:
        a: The first number.
        b: The second number.
    """
    return {"result": a + b}


@tool(mode="read", entity="math", operation="action")
@as_bfcl
def subtract(ctx: ToolContext, a: Number, b: Number) -> dict[str, Any]:
    """Subtract the second number from the first.

    Args:
        a: The number to subtract from.
        b: The number to subtract.
    """
    return {"result": a - b}


@tool(mode="read", entity="math", operation="action")
@as_bfcl
def multiply(ctx: ToolContext, a: Number, b: Number) -> dict[str, Any]:
    """Multiply two numbers.

    Args:
        a: The first number.
        b: The second number.
    """
    return {"result": a * b}


@tool(mode="read", entity="math", operation="action")
@as_bfcl
def divide(ctx: ToolContext, a: Number, b: Number) -> dict[str, Any]:
    """Divide the first number by the second.

    Args:
        a: The dividend.
        b: The divisor.
    """
    if b == 0:
        return {"error": "Cannot divide by zero"}
    return {"result": a / b}


@tool(mode="read", entity="math", operation="action")
@as_bfcl
def power(ctx: ToolContext, base: Number, exponent: Number) -> dict[str, Any]:
    """Raise a number to a power.

    Args:
        base: The base.
        exponent: The exponent.
    """
    try:
        return {"result": _shown(base**exponent)}
    except (OverflowError, ZeroDivisionError) as exc:
        raise PythonError(str(exc)) from None


@tool(mode="read", entity="math", operation="action")
@as_bfcl
def square_root(ctx: ToolContext, number: Number, precision: int) -> dict[str, Any]:
    """Compute the square root of a number to a number of significant digits.

    Args:
        number: The number.
        precision: Significant digits of the result.
    """
    if number < 0:
        return {"error": "Cannot calculate square root of a negative number"}
    try:
        with decimal.localcontext(prec=precision):
            return {"result": str(decimal.Decimal(number).sqrt())}
    except ValueError as exc:
        raise PythonError(str(exc)) from None
    except decimal.InvalidOperation:
        return {"error": "Input must be a number or computation resulted in an invalid operation"}


@tool(mode="read", entity="math", operation="action")
@as_bfcl
def absolute_value(ctx: ToolContext, number: Number) -> dict[str, Any]:
    """Compute the absolute value of a number.

    Args:
        number: The number.
    """
    return {"result": abs(number)}


@tool(mode="read", entity="math", operation="action")
@as_bfcl
def round_number(ctx: ToolContext, number: Number, decimal_places: int = 0) -> dict[str, Any]:
    """Round a number to a number of decimal places.

    Args:
        number: The number.
        decimal_places: The decimal places to keep. Defaults to 0.
    """
    return {"result": round(number, decimal_places)}


@tool(mode="read", entity="math", operation="action")
@as_bfcl
def percentage(ctx: ToolContext, part: Number, whole: Number) -> dict[str, Any]:
    """Compute what percentage a part is of a whole.

    Args:
        part: The part.
        whole: The whole.
    """
    if whole == 0:
        return {"error": "Whole value cannot be zero"}
    return {"result": part / whole * 100}


@tool(mode="read", entity="math", operation="action")
@as_bfcl
def min_value(ctx: ToolContext, numbers: list[Number]) -> dict[str, Any]:
    """Find the smallest of numbers.

    Args:
        numbers: The numbers.
    """
    return {"result": min(numbers)} if numbers else {"error": "Cannot find minimum of an empty list"}


@tool(mode="read", entity="math", operation="action")
@as_bfcl
def max_value(ctx: ToolContext, numbers: list[Number]) -> dict[str, Any]:
    """Find the largest of numbers.

    Args:
        numbers: The numbers.
    """
    return {"result": max(numbers)} if numbers else {"error": "Cannot find maximum of an empty list"}


@tool(mode="read", entity="math", operation="action")
@as_bfcl
def sum_values(ctx: ToolContext, numbers: list[Number]) -> dict[str, Any]:
    """Add up numbers.

    Args:
        numbers: The numbers.
    """
    return {"result": sum(numbers)} if numbers else {"error": "Cannot calculate sum of an empty list"}


TOOLS = (logarithm, mean, standard_deviation, si_unit_conversion, imperial_si_conversion, add, subtract, multiply,
         divide, power, square_root, absolute_value, round_number, percentage, min_value, max_value, sum_values)


def load(conn: sqlite3.Connection, task: str, config: dict[str, Any], long_context: dict[str, Any] | None) -> None:
    """The math functions keep no state: nothing to load (BFCL ignores their configuration too)."""


def state(query: Query, task: str) -> dict[str, Any]:
    """The math functions have no public attributes."""
    return {}


MATH = FunctionClass(name="MathAPI", label="math", schema="", load=load, state=state, tools={t.name: t for t in TOOLS})
"""The math class."""

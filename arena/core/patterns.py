r"""Pack-supplied regular expressions, run by an engine without backtracking.

A pack (possibly from a remote factory) carries regular expressions in its reply checks
(``forbidden_patterns``, ``id_pattern``). Python's ``re`` backtracks: a pattern such as ``(a+)+$`` takes
exponential time on a reply of a few dozen characters, and holds the interpreter while it does. gymloop runs
these patterns with RE2 (``google-re2``), whose matching time is linear in the text, so no pattern and no reply
can stall a verifier. A pattern RE2 cannot run (backreferences, lookaround) or whose compiled program is
over :data:`MAX_PROGRAM_SIZE` is refused when the pack is read, with one line naming it.

RE2 follows Python's syntax for everything the built-in gyms use; its ``\d``, ``\w`` and ``\b`` are ASCII.
"""

from __future__ import annotations

import functools
from collections.abc import Iterator
from typing import Any, Protocol, cast

import re2

MAX_PATTERN_LENGTH = 500
"""Longest pattern a pack may carry."""

MAX_PROGRAM_SIZE = 5000
"""Largest compiled RE2 program accepted (a measure of a pattern's matching cost per character)."""

__all__ = ["MAX_PATTERN_LENGTH", "MAX_PROGRAM_SIZE", "Match", "PatternError", "case_insensitive", "compile_pattern",
           "finditer", "fullmatch", "search"]


class PatternError(ValueError):
    """A pattern is refused; the message names it and says why in one line."""


class Match(Protocol):
    """A match of a pack pattern (the part of ``re.Match`` gymloop uses)."""

    def group(self, index: int = 0) -> str:
        """The matched text."""


class _Compiled(Protocol):
    programsize: int

    def search(self, text: str) -> Match | None: ...

    def finditer(self, text: str) -> Iterator[Match]: ...

    def fullmatch(self, text: str) -> Match | None: ...


def _options() -> Any:
    options = re2.Options()
    options.log_errors = False
    return options


@functools.lru_cache(maxsize=4096)
def compile_pattern(pattern: str) -> _Compiled:
    """Compile a pack pattern for linear-time matching (cached).

    Raises:
        PatternError: Too long, not a pattern RE2 runs (backreferences, lookaround), or too costly.
    """
    shown = repr(pattern[:80]) + ("..." if len(pattern) > 80 else "")
    if len(pattern) > MAX_PATTERN_LENGTH:
        raise PatternError(f"pattern {shown} is {len(pattern)} characters, over the limit of {MAX_PATTERN_LENGTH}")
    try:
        compiled = cast(_Compiled, re2.compile(pattern, _options()))
    except re2.error as exc:
        reason = exc.args[0].decode() if exc.args and isinstance(exc.args[0], bytes) else str(exc)
        raise PatternError(f"pattern {shown} cannot run without backtracking ({reason}); gymloop runs pack "
                           "patterns with RE2, which has no backreferences or lookaround") from None
    if compiled.programsize > MAX_PROGRAM_SIZE:
        raise PatternError(f"pattern {shown} compiles to {compiled.programsize} instructions, over the limit of "
                           f"{MAX_PROGRAM_SIZE}")
    return compiled


def search(pattern: str, text: str) -> Match | None:
    """The first match of pack pattern ``pattern`` in ``text``, in time linear in ``text``."""
    return compile_pattern(pattern).search(text)


def finditer(pattern: str, text: str) -> Iterator[Match]:
    """Every match of pack pattern ``pattern`` in ``text``, in time linear in ``text``."""
    return compile_pattern(pattern).finditer(text)


def fullmatch(pattern: str, text: str) -> Match | None:
    """The match of pack pattern ``pattern`` with the whole of ``text``, in time linear in ``text``."""
    return compile_pattern(pattern).fullmatch(text)


@functools.lru_cache(maxsize=4096)
def case_insensitive(pattern: str) -> str:
    """``pattern`` matching regardless of case (``(?i)`` added), or as it is when that would not compile."""
    try:
        compile_pattern("(?i)" + pattern)
    except PatternError:
        return pattern
    return "(?i)" + pattern

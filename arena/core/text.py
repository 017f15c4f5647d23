"""Text entering gymloop from outside (a model, an agent, a file): made safe once, where it enters."""

from __future__ import annotations

REPLACEMENT = "\ufffd"
"""What a lone surrogate becomes."""


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

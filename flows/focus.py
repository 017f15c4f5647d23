"""A campaign's focus: the tasks its rounds practise and are judged on (``settings.gyms.tasks``).

Patterns are shell-style and match whole task ids (``issue_status-*``, ``refund_*-0[1-3]``); an empty list
keeps every task. The same patterns choose the held-out suite, the tasks a wave may schedule (variants'
tasks included) and what ``gymloop eval`` plays, so the lift a campaign reports is measured on the tasks it
practised.
"""

from __future__ import annotations

from collections.abc import Sequence
from fnmatch import fnmatchcase

from arena.core.pack import Pack


def in_focus(task_id: str, patterns: Sequence[str]) -> bool:
    """Whether a task is in a campaign's focus (every task when there are no patterns)."""
    return not patterns or any(fnmatchcase(task_id, p) for p in patterns)


def check_focus(packs: Sequence[Pack], patterns: Sequence[str], *, heldout: bool = True) -> None:
    """Refuse patterns that choose nothing: each must match a task, and (``heldout``) some held-out task must match.

    Args:
        packs: The gyms' packs the patterns choose from.
        patterns: The patterns (``settings.gyms.tasks``; empty: nothing to check).
        heldout: Whether the patterns must leave a held-out task (a campaign's suite; ``gymloop eval`` of the
            held-out split); an evaluation of the train split needs none.

    Raises:
        ValueError: A pattern matches no task of the packs, or no held-out task is in focus; the message
            names the pattern, the setting and a few task ids of the gyms.
    """
    if not patterns:
        return
    ids = sorted({t.id for p in packs for t in p.tasks})
    gyms = ", ".join(sorted({p.manifest.domain for p in packs}))
    examples = ", ".join(ids[:: max(1, len(ids) // 4)][:4])
    for pattern in patterns:
        if not any(fnmatchcase(i, pattern) for i in ids):
            raise ValueError(f"setting tasks: pattern {pattern!r} matches no task of gym(s) {gyms} "
                             f"(task ids such as {examples})")
    if heldout and not any(in_focus(t.id, patterns) for p in packs for t in p.tasks if t.split == "heldout"):
        raise ValueError(f"setting tasks: {list(patterns)} match no held-out task of gym(s) {gyms}, so there "
                         "would be nothing to judge on")

"""Episodes too often invalid stop an evaluation or a round loudly instead of reporting rates over the rest.

An episode is invalid only when the infrastructure failed (the model's server unreachable or erroring after
retries, a crash of gymloop's): those are left out of pass rates, so a share of them above ``max_invalid_share``
makes any rate untrustworthy. ``gymloop eval`` and rounds stop with one line naming the count, the limit and the
causes (exit code ``INVALID_SHARE_EXIT``).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from flows.settings import GymloopSettings
    from registry import Registry

INVALID_SHARE_EXIT = 4
"""Exit code of ``gymloop eval``, ``round`` and ``campaign`` when too many episodes were invalid."""


class InvalidEpisodesError(RuntimeError):
    """More of a stage's episodes were invalid than the ``max_invalid_share`` setting allows."""


def invalid_share_message(episodes: int, causes: Mapping[str, int], limit: float, stage: str) -> str | None:
    """The one-line complaint when the invalid episodes' share passes ``limit``, else ``None``.

    Args:
        episodes: Every episode of the stage, valid or not.
        causes: Invalid episodes by cause (``boundary/kind``).
        limit: The largest share allowed.
        stage: What the episodes were (``eval_before``, ``evaluation``).
    """
    invalid = sum(causes.values())
    if not episodes or invalid / episodes <= limit:
        return None
    shown = ", ".join(f"{cause} x{n}" for cause, n in Counter(causes).most_common(5))
    return (f"{invalid} of {episodes} {stage} episodes are invalid ({invalid / episodes:.0%}), "
            f"above max_invalid_share {limit:g}: {shown}")


def check_invalid_share(settings: GymloopSettings, registry: Registry, round_id: int, stage: str,
                        model_id: int) -> int:
    """Count a stage's invalid episodes (of the model it plays) and fail the round past ``max_invalid_share``.

    Returns:
        The number of invalid episodes (0 to the limit's worth).

    Raises:
        InvalidEpisodesError: Too many invalid episodes; the message names the count, the limit and the causes.
            The round is marked failed in the registry first.
    """
    summaries = registry.episode_summaries(round_id, stage=stage, model_id=model_id)
    causes = Counter(f"{s.failure_boundary or 'unknown'}/{s.failure_kind or 'unknown'}" for s in summaries
                     if s.invalid)
    message = invalid_share_message(len(summaries), causes, settings.evaluation.max_invalid_share, stage)
    if message is None:
        return sum(causes.values())
    registry.fail_round(round_id, message)
    raise InvalidEpisodesError(message)

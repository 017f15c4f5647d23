"""A round whose episodes are too often invalid fails loudly instead of reporting rates over the rest."""

from __future__ import annotations

from collections import Counter

from flows.settings import GymloopSettings
from registry import Registry


class InvalidEpisodesError(RuntimeError):
    """More of a stage's episodes were invalid than the ``max_invalid_share`` setting allows."""


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
    invalid = [s for s in summaries if s.invalid]
    if not summaries or len(invalid) / len(summaries) <= settings.max_invalid_share:
        return len(invalid)
    causes = Counter(f"{s.failure_boundary or 'unknown'}/{s.failure_kind or 'unknown'}" for s in invalid)
    shown = ", ".join(f"{cause} x{n}" for cause, n in causes.most_common(5))
    message = (f"{len(invalid)} of {len(summaries)} {stage} episodes are invalid "
               f"({len(invalid) / len(summaries):.0%}), above max_invalid_share {settings.max_invalid_share:g}: "
               f"{shown}")
    registry.fail_round(round_id, message)
    raise InvalidEpisodesError(message)

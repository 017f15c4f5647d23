"""Trace features of a failed episode, for clustering and for naming clusters."""

from __future__ import annotations

import math
from collections import Counter

from arena.core.episode import EpisodeRecord
from diagnosis._trace import (
    failed_assertion_kinds,
    reply_claims_success,
    reply_gives_up,
    reply_states_observed_fact,
    value_shape,
)
from diagnosis.context import DiagnosisContext
from diagnosis.models import Tag
from diagnosis.primary import ordered_kinds

TAG_WEIGHT = 3.0
"""Weight of a failure's primary kind against one trace feature: tags dominate the clustering when present."""

SECONDARY_TAG_WEIGHT = 1.0
"""Weight of a secondary kind: a failure clusters with those its primary kind explains."""

ANSWER_WEIGHT = 3.0
"""Weight of what the reply gives (a value some call returned, or none) in a failure no detector tags.

Without a kind, the reply's answer stands in for one: a reply that states nothing the calls returned and one
that states another returned value than the one asked for fail the same reply check after the same calls, and
are different failure modes.
"""

ABSTRACT_PREFIXES = ("op:", "opgram:", "error:", "failed:", "changes:", "reply:", "answer:", "length:", "repeat:")
"""Features that name no tool: what an unknown failure mode has in common across domains."""

Signature = tuple[tuple[str, float], ...]
"""An episode's features as a sorted tuple of (feature, value); equal signatures are one row."""


def _length_bucket(n: int) -> str:
    if n == 0:
        return "0"
    if n <= 3:
        return "1-3"
    if n <= 8:
        return "4-8"
    return "9+"


def episode_features(episode: EpisodeRecord, tags: list[Tag], ctx: DiagnosisContext) -> Signature:
    """Return the episode's features: tool and operation n-grams, repeated calls, errors, failed assertions, kinds.

    A failure with no tag also gets what its reply answers (``answer:restates_returned``, a value a successful
    call returned, or ``answer:states_none``), weighted as a kind.

    Counts are damped with ``log1p`` so one long loop does not outweigh the rest.
    """
    counts: Counter[str] = Counter()
    previous = "^"
    previous_op = "^"
    done: set[str] = set()
    for step in episode.trace:
        info = ctx.tool(step.tool)
        kind = "write" if info.mode == "write" else info.operation
        counts[f"tool:{step.tool}"] += 1
        counts[f"op:{kind}"] += 1
        counts[f"bigram:{previous}>{step.tool}"] += 1
        counts[f"opgram:{previous_op}>{kind}"] += 1
        previous, previous_op = step.tool, kind
        call = f"{step.tool}|{sorted(step.arguments.items())!r}"
        if call in done:
            counts[f"repeat:same_{kind}"] += 1
        if step.ok:
            done.add(call)
        if step.error is not None:
            err = step.error.fault or step.error.kind
            counts[f"error:{err}"] += 1
            counts[f"error:{err}@{kind}"] += 1
        for name, value in step.arguments.items():
            counts[f"arg:{name}={value_shape(value)}"] += 1
    counts[f"bigram:{previous}>$"] += 1
    counts[f"opgram:{previous_op}>$"] += 1
    counts[f"length:{_length_bucket(len(episode.trace))}"] += 1
    for kind in failed_assertion_kinds(episode):
        counts[f"failed:{kind}"] += 1
    if episode.verdict is None:
        counts["failed:unverified"] += 1
    elif episode.verdict.unintended_changes:
        counts["changes:unintended"] += 1
    reply = episode.reply
    counts["reply:" + ("empty" if not reply.strip() else "gives_up" if reply_gives_up(reply)
                       else "claims_done" if reply_claims_success(reply) else "other")] += 1
    features = {name: math.log1p(n) for name, n in counts.items()}
    if not tags:
        features["answer:" + ("restates_returned" if reply_states_observed_fact(episode) else "states_none")] = (
            ANSWER_WEIGHT)
    for i, kind in enumerate(ordered_kinds(tags)):
        features[f"tag:{kind}"] = TAG_WEIGHT if i == 0 else SECONDARY_TAG_WEIGHT
    return tuple(sorted(features.items()))

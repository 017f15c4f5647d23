"""Turn a diagnosis weakness report into factory targets."""

from __future__ import annotations

from collections.abc import Collection, Sequence
from typing import Any

from arena.authoring.knobs import NOVEL_KNOBS, WEAKNESS_KNOBS, knob_refusal, tag_refusal
from arena.core.domain import Domain
from arena.core.weakness import parse_kind
from diagnosis import FocusGrain, WeaknessReport, focus
from factory_client.protocol import TargetEvidence, WeaknessTarget


def targets_from_report(
    report: WeaknessReport | dict[str, Any],
    *,
    domain: str | None = None,
    top: int | None = None,
    min_weight: float = 1e-6,
) -> list[WeaknessTarget]:
    """Convert a ``WeaknessReport`` (model or plain dict) into weighted weakness targets.

    Targets follow the report's two-level ranking as ``diagnosis.focus`` reads it once: the top grain of each kind in
    kind order (kinds ranked by the failures they explain), then each kind's next grain, and so on. A target's
    weight is its kind's weight (the impacts of all its grains summed), shared among the kind's chosen grains in
    proportion to their impact (``diagnosis.focus_weights``), so a kind whose failures are split into many small
    grains weighs what all its failures weigh. With ``domain`` both read that gym's grains only: kinds ordered
    and weighed by the failures they explain there, since the gym's variants practise nothing elsewhere. Each
    grain (domain, tool), knobs, focus tags, tools and evidence carry over.

    Args:
        report: The report, as the pydantic model or its JSON-shaped dict.
        domain: Keep only weaknesses seen in this domain (those naming no domain are kept).
        top: Keep at most this many.
        min_weight: Weight given to a weakness whose impact and share are both 0.

    Raises:
        ValueError: ``report`` is a dict that is not a valid weakness report, naming the field.
    """
    model = report if isinstance(report, WeaknessReport) else WeaknessReport.model_validate(report)
    return targets_from_focus(focus(model, top, domain=domain), min_weight=min_weight)


def targets_from_focus(grains: list[FocusGrain], *, min_weight: float = 1e-6) -> list[WeaknessTarget]:
    """Weighted weakness targets of grains already ranked and weighed (``diagnosis.focus``), in their order.

    Args:
        grains: The grains and their weights.
        min_weight: Weight given to a grain whose weight is 0.
    """
    return [WeaknessTarget(
        kind=g.weakness.kind,
        weight=max(g.weight, min_weight),
        focus_tags=list(g.weakness.focus_tags),
        knobs=dict(g.weakness.knobs),
        tools=list(dict.fromkeys([*([g.weakness.tool] if g.weakness.tool else []), *g.weakness.tools])),
        domain=g.weakness.domain,
        tool=g.weakness.tool,
        evidence=[TargetEvidence(tool=e.tool, argument=e.argument, note=e.note) for e in g.weakness.evidence],
    ) for g in grains]


def target_for_kind(kind: str, focus_tags: Sequence[str] = ()) -> WeaknessTarget:
    """A target aimed at weakness ``kind`` as a round aims at it: the kind's knobs and focus tags of the vocabulary.

    Args:
        kind: A weakness kind (``arena.core.weakness.WeaknessKind``), as a user types it.
        focus_tags: Task tags to focus on instead of the kind's own.

    Raises:
        ValueError: ``kind`` is no weakness kind, naming the kinds.
    """
    known = parse_kind(kind, source="--weakness")
    aim = WEAKNESS_KNOBS.get(known, NOVEL_KNOBS)
    return WeaknessTarget(kind=known, focus_tags=list(focus_tags or aim.focus_tags), knobs=dict(aim.knobs))


def target_refusal(target: WeaknessTarget, domain: Domain, tags: Collection[str]) -> str | None:
    """Why variants of ``domain`` (whose tasks carry ``tags``) cannot aim at ``target``, or ``None`` when they can.

    A target names a knob the gym cannot honour, or focus tags none of the gym's tasks carries.
    """
    for knob in sorted(target.knobs):
        reason = knob_refusal(domain, knob)
        if reason is not None:
            return f"weakness {target.kind!r} asks for knob {knob!r}: {reason}"
    reason = tag_refusal(domain, target.focus_tags, tags)
    return None if reason is None else f"weakness {target.kind!r}: {reason}"


def targetable(targets: list[WeaknessTarget], domain: Domain,
               tags: Collection[str]) -> tuple[list[WeaknessTarget], list[str]]:
    """Split targets into those variants of ``domain`` can aim at and the reasons the others cannot be.

    A factory refuses a request with a target it cannot aim at; a caller sending one request per gym keeps the
    targets it can send and reports the reasons for the rest.

    Args:
        targets: The weakness targets.
        domain: The gym.
        tags: The tags of the gym's base tasks.
    """
    kept: list[WeaknessTarget] = []
    refused: list[str] = []
    for target in targets:
        reason = target_refusal(target, domain, tags)
        if reason is None:
            kept.append(target)
        else:
            refused.append(f"not targeted: {reason}")
    return kept, refused

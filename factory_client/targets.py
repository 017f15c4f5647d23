"""Turn a diagnosis weakness report into factory targets."""

from __future__ import annotations

from typing import Any

from arena.authoring.knobs import knob_refusal
from arena.core.domain import Domain
from diagnosis.models import WeaknessReport
from factory_client.protocol import TargetEvidence, WeaknessTarget


def targets_from_report(
    report: WeaknessReport | dict[str, Any],
    *,
    domain: str | None = None,
    top: int | None = None,
    min_weight: float = 1e-6,
) -> list[WeaknessTarget]:
    """Convert a ``WeaknessReport`` (model or plain dict) into weighted weakness targets.

    Each weakness's weight is its impact (falling back to its share when the impact is 0);
    its grain (domain, tool), knobs, focus tags, tools and evidence carry over.

    Args:
        report: The report, as the pydantic model or its JSON-shaped dict.
        domain: Keep only weaknesses seen in this domain (those naming no domain are kept).
        top: Keep at most this many, by rank.
        min_weight: Weight given to a weakness whose impact and share are both 0.

    Raises:
        ValueError: ``report`` is a dict that is not a valid weakness report, naming the field.
    """
    model = report if isinstance(report, WeaknessReport) else WeaknessReport.model_validate(report)
    weaknesses = sorted(model.weaknesses, key=lambda w: (w.rank, w.kind))
    if domain is not None:
        weaknesses = [w for w in weaknesses if (w.domain == domain if w.domain is not None
                                                 else not w.domains or domain in w.domains)]
    if top is not None:
        weaknesses = weaknesses[:top]
    targets = []
    for w in weaknesses:
        weight = w.impact if w.impact > 0 else w.share
        targets.append(WeaknessTarget(
            kind=w.kind,
            weight=max(weight, min_weight),
            focus_tags=list(w.focus_tags),
            knobs=dict(w.knobs),
            tools=list(dict.fromkeys([*([w.tool] if w.tool else []), *w.tools])),
            domain=w.domain,
            tool=w.tool,
            evidence=[TargetEvidence(tool=e.tool, argument=e.argument, note=e.note) for e in w.evidence],
        ))
    return targets


def targetable(targets: list[WeaknessTarget], domain: Domain) -> tuple[list[WeaknessTarget], list[str]]:
    """Split targets into those whose knobs ``domain`` honours and the reasons the others cannot be aimed at.

    A factory refuses a request naming a knob the gym cannot honour; a caller sending one request per gym keeps
    the targets it can send and reports the reasons for the rest.
    """
    kept: list[WeaknessTarget] = []
    refused: list[str] = []
    for target in targets:
        reasons = [r for r in (knob_refusal(domain, k) for k in sorted(target.knobs)) if r is not None]
        if reasons:
            refused.append(f"weakness {target.kind!r} is not targeted: {reasons[0]}")
        else:
            kept.append(target)
    return kept, refused

"""Turn a diagnosis weakness report into factory targets."""

from __future__ import annotations

from typing import Any

from diagnosis import WeaknessReport, focus_grains, focus_weights
from factory_client.protocol import TargetEvidence, WeaknessTarget


def targets_from_report(
    report: WeaknessReport | dict[str, Any],
    *,
    domain: str | None = None,
    top: int | None = None,
    min_weight: float = 1e-6,
) -> list[WeaknessTarget]:
    """Convert a ``WeaknessReport`` (model or plain dict) into weighted weakness targets.

    Targets follow the report's two-level ranking (``diagnosis.focus_grains``): the top grain of each kind in
    kind order (kinds ranked by the failures they explain), then each kind's next grain, and so on. A target's
    weight is its kind's weight (the impacts of all its grains summed), shared among the kind's chosen grains in
    proportion to their impact (``diagnosis.focus_weights``), so a kind whose failures are split into many small
    grains weighs what all its failures weigh. Each grain (domain, tool), knobs, focus tags, tools and evidence
    carry over.

    Args:
        report: The report, as the pydantic model or its JSON-shaped dict.
        domain: Keep only weaknesses seen in this domain (those naming no domain are kept).
        top: Keep at most this many.
        min_weight: Weight given to a weakness whose impact and share are both 0.

    Raises:
        ValueError: ``report`` is a dict that is not a valid weakness report, naming the field.
    """
    model = report if isinstance(report, WeaknessReport) else WeaknessReport.model_validate(report)
    chosen = focus_grains(model, top, domain=domain)
    targets = []
    for w, weight in zip(chosen, focus_weights(model, chosen), strict=True):
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

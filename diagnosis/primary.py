"""A failure's primary kind (the one that explains it first) and its secondary kinds.

A failure can show two kinds at once: a search whose hit the agent never fetched before a write the policy
wanted the fetch for (a skipped prerequisite, and a search without fetch), a wrong record read and then "Done."
(a wrong id, and a success claim it never checked). The report counts each failure once, for its primary kind,
and shows its other kinds apart as secondary, so the factory and the curriculum can aim at either.

Kinds are ordered as an agent's work goes, the order the detectors are registered in: which record (wrong id),
what must come first (a policy prerequisite), the arguments' form, whether the data was current, how the record
was reached (search without fetch), whether the work was attempted (giving up), what else it changed (a side
effect), what the reply says (an unverified claim, a leak) and what the agent did after a fault (no recovery).
The first kind a detector tags outright is primary; the other kinds tagged outright follow in that order, then
the kinds detectors set aside (``Tag.secondary``: another kind explains the failure first). A kind set aside
counts only beside another kind: alone, nothing explains the failure before it, and the detector did not tag it.
"""

from __future__ import annotations

from collections.abc import Sequence

from arena.core.episode import EpisodeRecord
from arena.core.weakness import WeaknessKind
from diagnosis.context import DiagnosisContext
from diagnosis.detector import Detector, detector_names, get_detector
from diagnosis.models import Tag


def ordered_kinds(tags: Sequence[Tag]) -> tuple[WeaknessKind, ...]:
    """The kinds ``tags`` show, primary first, then the secondary ones (empty when no kind is tagged outright)."""
    order = {name: i for i, name in enumerate(detector_names())}

    def rank(kind: WeaknessKind) -> tuple[int, str]:
        return order.get(kind, len(order)), kind

    outright = sorted({t.kind for t in tags if not t.secondary}, key=rank)
    if not outright:
        return ()
    aside = sorted({t.kind for t in tags if t.secondary} - set(outright), key=rank)
    return (*outright, *aside)


def counted(tags: Sequence[Tag]) -> list[Tag]:
    """The tags that count: every tag, unless only tags set aside are left (then none)."""
    return list(tags) if any(not t.secondary for t in tags) else []


def episode_tags(episode: EpisodeRecord, ctx: DiagnosisContext,
                 detectors: Sequence[str | Detector] | None = None) -> list[Tag]:
    """The tags ``diagnose`` counts for a failed episode: the detectors' (all registered by default), ``counted``."""
    chosen = [get_detector(d) if isinstance(d, str) else d for d in (detectors or detector_names())]
    return counted([tag for detector in chosen for tag in detector.detect(episode, ctx)])

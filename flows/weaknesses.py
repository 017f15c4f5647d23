"""What the detectors say of a round's episodes: its weakness report, and each failed rollout's blame."""

from __future__ import annotations

from collections.abc import Sequence

from arena.core.episode import EpisodeRecord
from arena.core.pack import Pack
from diagnosis import DiagnosisContext, WeaknessReport, detector_names, diagnose, get_detector
from registry import WeaknessEntry
from trainers import Blame


def diagnosis_context(packs: Sequence[Pack]) -> DiagnosisContext:
    """Tool specs, dependency graphs and tasks of the packs, for the detectors."""
    tools = [t for p in packs for t in p.tools]
    edges = [e for p in packs for e in p.graph.get("edges", p.graph.get("links", []))]
    nodes = [n for p in packs for n in p.graph.get("nodes", [])]
    graph = {"directed": True, "multigraph": False, "graph": {}, "nodes": nodes, "edges": edges}
    tasks = {(p.id, t.id): t for p in packs for t in p.tasks}
    return DiagnosisContext.build(tools=tools, graph=graph, tasks=tasks)


def diagnose_round(records: Sequence[EpisodeRecord], packs: Sequence[Pack], previous: WeaknessReport | None,
                   round_id: int, seed: int) -> WeaknessReport:
    """Diagnose a round's held-out episodes into ranked weaknesses."""
    return diagnose(records, diagnosis_context(packs), previous, seed, round_id=str(round_id))


def weakness_entries(report: WeaknessReport) -> list[WeaknessEntry]:
    """The registry's view of a weakness report."""
    return [
        WeaknessEntry(kind=w.kind, label=w.label, rank=w.rank, score=w.impact, share=min(1.0, max(0.0, w.share)),
                      interval_low=w.share_interval.low, interval_high=w.share_interval.high,
                      evidence={"examples": w.example_episode_ids, "knobs": w.knobs, "focus_tags": w.focus_tags,
                                "domains": w.domains, "tools": w.tools})
        for w in report.weaknesses
    ]


def rollout_blame(records: Sequence[EpisodeRecord], packs: Sequence[Pack]) -> dict[str, list[Blame]]:
    """What the detectors ``diagnose`` runs say of each failed rollout: its tags, by episode id.

    Passed and invalid rollouts, and failures at another boundary than the agent's, are not diagnosed (as in
    ``diagnose``). Each tag keeps its kind and the tools its evidence names (the tool called and a tool an
    argument names), which is what the builtin trainer's per-decision credit reads.
    """
    ctx = diagnosis_context(packs)
    detectors = [get_detector(name) for name in detector_names()]
    out: dict[str, list[Blame]] = {}
    for r in records:
        if r.passed or r.invalid or (r.failure is not None and r.failure.boundary != "agent"):
            continue
        tags = [tag for detector in detectors for tag in detector.detect(r, ctx)]
        if tags:
            out[r.episode_id] = [Blame(kind=tag.kind, tools=tuple(sorted(
                {x for e in tag.evidence for x in (e.tool, e.argument) if x}))) for tag in tags]
    return out

"""The two-level ranking: kinds by the failures they explain, grains by impact within their kind.

Episodes are tagged by a detector that reads the kind and tool to tag from the episode's own tags (a
``Detector`` like any registered one), so each test states exactly how failures split into grains.
"""

from __future__ import annotations

import json
import re

import pytest

from arena.core.episode import EpisodeRecord
from arena.core.results import AssertionResult, TraceStep, Verdict
from curriculum import CurriculumConfig, History, TaskRef, plan_wave
from diagnosis import (
    DiagnosisContext,
    Evidence,
    Tag,
    WeaknessReport,
    diagnose,
    focus_grains,
    focus_weights,
    read_report,
    render_markdown,
)
from diagnosis.tables import COLUMN_NOTES, GRAIN_COLUMNS, KIND_COLUMNS
from factory_client import targets_from_report
from factory_client._synth import allocate


class ScriptedTags:
    """Tags an episode with the kinds its ``tags`` name, as ``kind:tool`` (``kind:`` for evidence with no tool)."""

    def __init__(self, name: str) -> None:
        self.name = name

    def detect(self, episode: EpisodeRecord, ctx: DiagnosisContext) -> list[Tag]:
        out = []
        for tag in episode.tags:
            kind, _, tool = tag.partition(":")
            if kind == self.name:
                out.append(Tag(kind=kind, evidence=[Evidence(step=0 if tool else None, tool=tool, note=tag)]))
        return out


KINDS = ("wrong_id", "missed_policy_dependency", "leaked_internal_data", "gave_up_early")
DETECTORS = [ScriptedTags(k) for k in KINDS]


def failure(index: int, domain: str, *tags: str, score: float = 0.5, task: str | None = None) -> EpisodeRecord:
    results = [AssertionResult(index=0, kind="state", description="s", passed=False, detail="x")]
    return EpisodeRecord(
        episode_id=f"e{index}", pack_id=f"pack-{domain}", domain=domain, task_id=task or f"t{index % 7}",
        split="heldout", category="c", seed=0, agent="a", model_ref="m", tags=list(tags),
        trace=[TraceStep(index=0, tool="get_order", arguments={}, ok=True, output={}, clock="")],
        reply="", verdict=Verdict(passed=False, score=score, results=results))


def passed(index: int, domain: str) -> EpisodeRecord:
    record = failure(index, domain, task="solved")
    return record.model_copy(update={"verdict": Verdict(passed=True, score=1.0)})


def split_report() -> tuple[WeaknessReport, list[EpisodeRecord]]:
    """missed_policy_dependency: 12 failures over four tools of two gyms; wrong_id: 8 failures at one grain."""
    episodes: list[EpisodeRecord] = []
    n = 0
    for domain, tool in (("helpdesk", "issue_refund"), ("helpdesk", "cancel_order"), ("tracker", "transition_issue"),
                         ("tracker", "grant_permission")):
        for _ in range(3):
            episodes.append(failure(n, domain, f"missed_policy_dependency:{tool}"))
            n += 1
    for _ in range(8):
        episodes.append(failure(n, "helpdesk", "wrong_id:get_order", score=0.0))
        n += 1
    for _ in range(3):  # a kind whose evidence names no tool, beside a few at tools too small to stand alone
        episodes.append(failure(n, "helpdesk", "leaked_internal_data:"))
        n += 1
    episodes += [failure(n, "helpdesk", "leaked_internal_data:reply_to_ticket"),
                 failure(n + 1, "helpdesk", "leaked_internal_data:add_internal_note"),
                 failure(n + 2, "tracker", "leaked_internal_data:add_comment")]
    episodes += [passed(n + 3 + i, "helpdesk") for i in range(10)]
    return diagnose(episodes, seed=0, detectors=DETECTORS), episodes


def test_kinds_rank_by_failures_explained_however_many_grains_split_them() -> None:
    report, _ = split_report()
    assert [(k.kind, k.count, len(k.grains)) for k in report.kinds] == [
        ("missed_policy_dependency", 12, 4), ("wrong_id", 8, 1), ("leaked_internal_data", 6, 2)]
    # every missed_policy_dependency grain is smaller than wrong_id's one grain, with more reward lost there
    wrong = report.weakness("wrong_id")
    assert wrong is not None
    assert all(w.impact < wrong.impact for w in report.weaknesses if w.kind == "missed_policy_dependency")
    assert [w.kind for w in report.weaknesses[:4]] == ["missed_policy_dependency"] * 4
    assert [w.rank for w in report.weaknesses] == list(range(1, len(report.weaknesses) + 1))
    for k in report.kinds:
        grains = [w for w in report.weaknesses if w.kind == k.kind]
        assert [w.grain for w in grains] == k.grains
        assert [w.grain_rank for w in grains] == list(range(1, len(grains) + 1))
        assert {w.kind_rank for w in grains} == {k.rank}
        assert [w.impact for w in grains] == sorted((w.impact for w in grains), reverse=True)
        assert k.count == sum(w.count for w in grains) == report.tag_counts[k.kind]
        assert k.share == pytest.approx(k.count / report.failures, abs=1e-6)
        assert k.rate == pytest.approx(k.count / report.episodes, abs=1e-6)
        assert k.share_interval.low <= k.share <= k.share_interval.high
        assert k.rate_interval is not None and k.rate_interval.low <= k.rate <= k.rate_interval.high


def test_labels_and_grains_are_unique_and_name_the_grain() -> None:
    report, _ = split_report()
    labels = [w.label for w in report.weaknesses]
    assert len(set(labels)) == len(labels)
    assert len({w.grain for w in report.weaknesses}) == len(report.weaknesses)
    for w in report.weaknesses:
        assert (w.domain or "several gyms") in w.label
        assert (w.tool or "") in w.label
    leaks = [w for w in report.weaknesses if w.kind == "leaked_internal_data"]
    # the no-tool grain and the small tool grains of helpdesk are one grain, not two labelled "(helpdesk)"
    assert sorted(w.label for w in leaks) == ["Leaks internal data (helpdesk: several tools)",
                                              "Leaks internal data (tracker: add_comment)"]
    assert sorted(w.grain for w in leaks) == ["leaked_internal_data@helpdesk",
                                              "leaked_internal_data@tracker/add_comment"]


def test_labels_stay_unique_across_many_gyms_tools_and_leftovers() -> None:
    episodes = []
    n = 0
    for domain in ("helpdesk", "tracker", "procurement"):
        for tool, size in (("a", 5), ("b", 1), ("c", 2), ("", 4), ("d", 1)):
            for _ in range(size):
                episodes.append(failure(n, domain, f"wrong_id:{tool}", f"gave_up_early:{tool}"))
                n += 1
    episodes.append(failure(n, "other", "wrong_id:a"))
    report = diagnose(episodes, seed=1, detectors=DETECTORS)
    labels = [w.label for w in report.weaknesses]
    assert len(set(labels)) == len(labels) and len({w.grain for w in report.weaknesses}) == len(labels)
    assert report.kind("wrong_id").count == n + 1  # type: ignore[union-attr]


def test_report_and_cli_explain_every_column() -> None:
    report, _ = split_report()
    md = render_markdown(report)
    for column in KIND_COLUMNS + GRAIN_COLUMNS:
        assert column in COLUMN_NOTES
        assert f"- **{column}**: " in md
    assert md.index("## Weakness kinds") < md.index("## Weaknesses by grain") < md.index("## What the columns mean")
    assert "| 1.1 |" in md and "| 2.1 |" in md


def test_a_report_of_schema_1_reads_with_kinds_and_grain_ranks() -> None:
    report, _ = split_report()
    old = json.loads(report.to_json())
    old["schema_version"] = 1
    del old["kinds"]
    for w in old["weaknesses"]:
        for field in ("grain", "kind_rank", "grain_rank"):
            del w[field]
    again = read_report(json.dumps(old))
    assert [(k.kind, k.count, k.rank) for k in again.kinds] == [(k.kind, k.count, k.rank) for k in report.kinds]
    assert [w.grain for w in again.weaknesses] == [w.grain for w in report.weaknesses]


def test_a_gyms_factory_targets_rank_and_weigh_kinds_by_that_gyms_failures() -> None:
    """A kind explaining most failures in one gym but one failure in another does not lead the other's request.

    Each gym gets its own factory request, and one variant aims at its heaviest target (``allocate``): the
    variant can only practise that gym's grains, so its kinds are ordered and weighed by that gym's failures.
    """
    episodes = [failure(i, "helpdesk", "missed_policy_dependency:issue_refund") for i in range(12)]
    episodes += [failure(12, "tracker", "missed_policy_dependency:transition_issue")]
    episodes += [failure(13 + i, "tracker", "wrong_id:get_user") for i in range(6)]
    episodes += [passed(19 + i, "helpdesk") for i in range(5)] + [passed(24 + i, "tracker") for i in range(5)]
    report = diagnose(episodes, seed=0, detectors=DETECTORS)
    assert [(k.kind, k.count) for k in report.kinds] == [("missed_policy_dependency", 13), ("wrong_id", 6)]
    grain = {w.grain: w for w in report.weaknesses}
    wrong, policy_here = grain["wrong_id@tracker/get_user"], grain["missed_policy_dependency@tracker/transition_issue"]
    tracker = targets_from_report(report, domain="tracker")
    assert [(t.kind, t.tool) for t in tracker] == [("wrong_id", "get_user"),
                                                   ("missed_policy_dependency", "transition_issue")]
    assert [t.weight for t in tracker] == pytest.approx([wrong.impact, policy_here.impact])
    primary = allocate(tracker, 1)[0]
    assert primary is not None and (primary.kind, primary.tool) == ("wrong_id", "get_user")
    # across gyms (the planner's reading) a kind still weighs all its grains, and kinds keep the report's order
    everywhere = targets_from_report(report, top=2)
    assert [t.kind for t in everywhere] == ["missed_policy_dependency", "wrong_id"]
    policy = [w for w in report.weaknesses if w.kind == "missed_policy_dependency"]
    assert everywhere[0].weight == pytest.approx(sum(w.impact for w in policy))
    assert [w.grain for w in focus_grains(report, domain="tracker")] == [wrong.grain, policy_here.grain]
    assert focus_weights(report, [policy_here], domain="tracker") == pytest.approx([policy_here.impact])


def test_factory_targets_and_planner_read_the_same_two_level_ranking() -> None:
    report, _ = split_report()
    picked = focus_grains(report, 3)
    assert [(w.kind, w.grain_rank) for w in picked] == [("missed_policy_dependency", 1), ("wrong_id", 1),
                                                        ("leaked_internal_data", 1)]
    weights = focus_weights(report, picked)
    policy = [w for w in report.weaknesses if w.kind == "missed_policy_dependency"]
    assert weights[0] == pytest.approx(sum(w.impact for w in policy))  # the kind weighs all its grains
    targets = targets_from_report(report, top=3)
    assert [(t.kind, t.tool) for t in targets] == [(w.kind, w.tool) for w in picked]
    assert [t.weight for t in targets] == pytest.approx(weights)
    tracker = targets_from_report(report, domain="tracker", top=2)
    assert [t.kind for t in tracker] == ["missed_policy_dependency", "leaked_internal_data"]
    pool = [TaskRef(pack_id="P", task_id=f"{w.tool}-{i}", domain=w.domain or "helpdesk", tools=(w.tool or "x",),
                    tags=tuple(w.focus_tags)) for w in report.weaknesses for i in range(4)]
    wave = plan_wave(report, pool, History(), CurriculumConfig(budget=40, k=2, focus=2, seed=0))
    targeted = [e for e in wave.entries if e.source == "targeted"]
    # the two focus grains use all their tasks; the slots they cannot fill stay with their kinds' other grains
    assert {e.grain for e in targeted if "in place of" not in e.reason} == {picked[0].grain, picked[1].grain}
    assert sum(e.grain in {picked[0].grain, picked[1].grain} for e in targeted) == 8
    assert {e.weakness for e in targeted} == {picked[0].kind, picked[1].kind}
    assert all(re.search(r"kind \w+ rank \d", e.reason) for e in wave.entries if e.source == "targeted")

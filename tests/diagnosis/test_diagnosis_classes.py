"""Each class of diagnosis mistake, on a trace that shows it and one that does not (real helpdesk worlds).

The labelled traces come from ``bench.independent_mistakes``: the gold program of each task with one mistake
injected, played in the gym; gold traces are the negatives.
"""

from __future__ import annotations

import pytest

from bench.bench_diagnosis_independent import Labelled, label
from bench.independent_mistakes import MODES, NOVEL_MODE
from diagnosis import BUILTIN_DETECTORS, WeaknessKind, diagnose
from diagnosis._reply import read_reply
from diagnosis._trace import mentions


@pytest.fixture(scope="module")
def helpdesk() -> Labelled:
    return label(["helpdesk"], [0], [0], None)


def _kinds(labelled: Labelled, episode) -> set[str]:  # type: ignore[no-untyped-def]
    return {t.kind for d in BUILTIN_DETECTORS for t in d.detect(episode, labelled.ctx)}


@pytest.mark.parametrize("mode", [m for m in MODES if m != NOVEL_MODE])
def test_each_kind_tags_its_mistake_and_nothing_else(helpdesk: Labelled, mode: str) -> None:
    mine = [e for e, m in zip(helpdesk.episodes, helpdesk.labels, strict=True) if m == mode]
    others = [e for e, m in zip(helpdesk.episodes, helpdesk.labels, strict=True) if m != mode]
    assert mine, f"no {mode} injection failed on helpdesk"
    found = sum(mode in _kinds(helpdesk, e) for e in mine)
    assert found / len(mine) >= 0.85, (mode, found, len(mine))
    wrong = sum(mode in _kinds(helpdesk, e) for e in others)
    assert wrong <= 0.1 * max(1, found), (mode, wrong)


def test_gold_traces_get_no_tag(helpdesk: Labelled) -> None:
    assert len(helpdesk.gold) >= len({e.task_id for e in helpdesk.gold}) > 40
    tagged = {(e.task_id, k) for e in helpdesk.gold for k in _kinds(helpdesk, e)}
    assert tagged == set()


def test_unknown_mode_is_one_novel_weakness_with_exemplars(helpdesk: Labelled) -> None:
    report = diagnose(helpdesk.episodes, helpdesk.ctx, seed=0)
    novel = [w for w in report.weaknesses if w.kind == WeaknessKind.NOVEL]
    assert len(novel) == 1
    twice = {e.episode_id for e, m in zip(helpdesk.episodes, helpdesk.labels, strict=True) if m == NOVEL_MODE}
    assert novel[0].count == len(twice)
    assert set(novel[0].example_episode_ids) <= twice and novel[0].example_episode_ids
    assert "repeat:same_write" in novel[0].description


def test_weaknesses_come_at_the_grain_the_evidence_supports(helpdesk: Labelled) -> None:
    report = diagnose(helpdesk.episodes, helpdesk.ctx, seed=0)
    assert all(w.domain == "helpdesk" for w in report.weaknesses)
    assert any(w.tool for w in report.weaknesses if w.kind != WeaknessKind.NOVEL)
    for kind, count in report.primary_counts.items():
        assert sum(w.count for w in report.weaknesses if w.kind == kind) == count
    for kind, count in report.secondary_counts.items():
        assert sum(w.secondary for w in report.weaknesses if w.kind == kind) == count
    for w in report.weaknesses:
        assert w.rate == pytest.approx(w.count / report.episodes, abs=1e-6)
        assert w.rate_interval is not None and w.rate_interval.low <= w.rate <= w.rate_interval.high
        assert w.example_episode_ids


@pytest.mark.parametrize(("reply", "claims", "admits"), [
    ("Added the note.", True, False),
    ("I processed the refund for ORD-10001.", True, False),
    ("Refund issued", True, False),
    ("We've cancelled order ORD-10417.", True, False),
    ("The refund was rejected.", False, True),
    ("I could not cancel order ORD-10417.", False, True),
    ("It wasn't possible to refund the order at this time.", False, True),
    ("The order has not been refunded yet.", False, True),
    ("The order will ship once the payment is confirmed.", False, False),
])
def test_replies_read_as_claims_with_negation_and_tense(reply: str, claims: bool, admits: bool) -> None:
    reading = read_reply(reply)
    assert (reading.claims_success, reading.admits_failure) == (claims, admits)


def test_a_negated_state_answers_a_question_and_is_no_admission() -> None:
    answer = "No, they are not compatible: one uses AM5 and the other LGA1700."
    assert not read_reply(answer, question=True).admits_failure
    assert read_reply("Sorry, I couldn't find that order.", question=True).admits_failure


def test_stale_values_match_whole_tokens_not_substrings() -> None:
    assert mentions("The ticket is open.", "open")
    assert not mentions("The ticket was reopened.", "open")
    assert not mentions("Order ORD-100011 shipped.", "ORD-10001")
    assert mentions("Order ORD-10001 shipped.", "ORD-10001")

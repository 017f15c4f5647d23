"""Every labelled mistake in all three gyms gets its own kind as primary, and every gold trace gets none.

The labels come from ``bench.independent_mistakes`` (each task's gold program with one mistake injected, played in
the gym), which reads only tasks, worlds and gold traces, never the detectors. At world seed 0 that is about 1,400
failures over the three gyms.
"""

from __future__ import annotations

from collections import Counter

import pytest

from bench.bench_diagnosis_independent import Labelled, label
from bench.independent_mistakes import NOVEL_MODE
from diagnosis import episode_tags, ordered_kinds

DOUBLE_MISTAKES = {("tracker", "wrong_id"): {"wrong_id", "leaked_internal_data"},
                   ("procurement", "search_without_fetch"): {"search_without_fetch", "gave_up_early"}}
"""Injections known to make a second, real mistake: a wrong-record read that lands on a restricted tracker issue
whose assignee the reply then names; a purchase order refused from a vendor search hit never fetched (the refusal
rests on the status the search index caches, which may be stale, so the agent declines on state it never read)."""

SECONDARY = {"missed_policy_dependency": {"search_without_fetch"}, "wrong_id": {"missed_policy_dependency"}}
"""Secondary kinds a mistake shows by its nature: a fetch the policy requires, skipped after a search, is also a
search whose hit was never fetched; a required check run on the wrong record, then the change on the right one,
never checked the record changed."""


@pytest.fixture(scope="module")
def labelled() -> Labelled:
    return label(["helpdesk", "tracker", "procurement"], [0], [0], None)


def _kinds(labelled: Labelled, episode) -> set[str]:  # type: ignore[no-untyped-def]
    return set(_ordered(labelled, episode))


def _ordered(labelled: Labelled, episode) -> tuple[str, ...]:  # type: ignore[no-untyped-def]
    return ordered_kinds(episode_tags(episode, labelled.ctx))


def test_every_labelled_mistake_gets_exactly_its_kind(labelled: Labelled) -> None:
    assert len(labelled.episodes) > 1000
    wrong: Counter[tuple[str, str, tuple[str, ...]]] = Counter()
    for episode, mode in zip(labelled.episodes, labelled.labels, strict=True):
        got = _ordered(labelled, episode)
        if mode == NOVEL_MODE and not got:
            continue
        if got[:1] != (mode,) or not set(got[1:]) <= SECONDARY.get(mode, set()):
            wrong[(episode.domain, mode, tuple(sorted(got)))] += 1
    doubles = {(d, m, tuple(sorted(DOUBLE_MISTAKES[(d, m)]))) for d, m in DOUBLE_MISTAKES}
    assert set(wrong) <= doubles and max(wrong.values(), default=0) <= 2, wrong


def test_every_kind_is_labelled_in_every_gym(labelled: Labelled) -> None:
    by_gym: dict[str, set[str]] = {}
    for episode, mode in zip(labelled.episodes, labelled.labels, strict=True):
        by_gym.setdefault(episode.domain, set()).add(mode)
    assert by_gym.keys() == {"helpdesk", "tracker", "procurement"}
    everywhere = set.intersection(*by_gym.values())
    assert {"wrong_id", "missed_policy_dependency", "gave_up_early", "claimed_unverified_success",
            "unintended_side_effect", "leaked_internal_data"} <= everywhere


def test_gold_traces_of_every_gym_get_no_tag(labelled: Labelled) -> None:
    assert {e.domain for e in labelled.gold} == {"helpdesk", "tracker", "procurement"}
    tagged = [(e.domain, e.task_id, k) for e in labelled.gold for k in _kinds(labelled, e)]
    assert tagged == []

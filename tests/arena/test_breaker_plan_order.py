"""The circuit breaker reads failing streaks in plan order: random delays cannot break a streak up."""

from __future__ import annotations

import random

from hypothesis import given, settings
from hypothesis import strategies as st

from arena.core.episode import EpisodeFailure, EpisodeRecord
from arena.rollout import Breaker


def _record(index: int, failed: bool) -> EpisodeRecord:
    failure = EpisodeFailure(boundary="model_api", kind="server_error", message="boom") if failed else None
    return EpisodeRecord(episode_id=f"e{index}", pack_id="p", domain="d", task_id=f"t{index}", split="heldout",
                         category="c", seed=0, agent="a", model_ref="m", failure=failure, invalid=failed)


def _longest_run(failed: list[bool]) -> int:
    best = run = 0
    for f in failed:
        run = run + 1 if f else 0
        best = max(best, run)
    return best


@settings(max_examples=200, deadline=None)
@given(st.lists(st.booleans(), min_size=1, max_size=40), st.integers(1, 6), st.randoms(use_true_random=False))
def test_it_opens_on_a_plan_order_run_whatever_order_episodes_finish_in(failed, threshold, rng):
    order = list(range(len(failed)))
    rng.shuffle(order)
    breaker = Breaker(threshold, len(failed))
    released: list[EpisodeRecord] = []
    for index in order:
        released.extend(breaker.feed(index, _record(index, failed[index])))
        if breaker.open:
            break
    assert breaker.open == (_longest_run(failed) >= threshold)
    if not breaker.open:
        everything = released + breaker.remaining()
        assert sorted(r.episode_id for r in everything) == sorted(f"e{i}" for i in range(len(failed)))
        assert not breaker.remaining()  # every run was closed by its neighbours or the batch's ends


def test_successes_finishing_between_failures_do_not_hide_an_outage():
    failed = [False] * 3 + [True] * 10 + [False] * 3
    order = [0, 3, 1, 4, 2, 5, 13, 6, 14, 7, 15, 8, 9, 10, 11, 12]  # a success finishes between every failure
    breaker = Breaker(10, len(failed))
    for index in order:
        breaker.feed(index, _record(index, failed[index]))
    assert breaker.open and "10 consecutive episodes" in breaker.cause


def test_failures_scattered_in_plan_order_are_released_as_data():
    rng = random.Random(3)
    failed = [i % 3 == 0 for i in range(30)]
    breaker = Breaker(5, len(failed))
    order = list(range(30))
    rng.shuffle(order)
    out = [r for i in order for r in breaker.feed(i, _record(i, failed[i]))]
    assert not breaker.open and len(out) == 30

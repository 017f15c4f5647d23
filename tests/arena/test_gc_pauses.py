"""A batch freezes the heap as its episodes finish and gives it back when it ends."""

from __future__ import annotations

import gc
from collections.abc import Iterator

import pytest
from toy_domain import TOY

from arena.agents.base import AgentRun, CallTool
from arena.core.episode import EpisodeRecord
from arena.core.gym import Observation
from arena.core.pack import Pack, build_pack
from arena.rollout import EpisodeKey, RolloutConfig, RolloutStopped, run_episodes
from arena.rollout.gc_pauses import YOUNG_THRESHOLD, FrozenAsTheyFinish


class LookUpAgent:
    """Fetches the order its prompt is about, then replies: a model-less agent that is not the reference policy."""

    name = "look-up"
    model_ref = "look-up"

    def run_episode(self, observation: Observation, call_tool: CallTool, *, seed: int) -> AgentRun:
        result = call_tool("get_order", {"order_id": "ORD-00005"})
        return AgentRun(reply=f"order status: {(result.output or {}).get('status')}", turns=1)


@pytest.fixture(scope="module")
def pack() -> Pack:
    return build_pack(TOY, seed=3)


@pytest.fixture(autouse=True)
def _unfrozen() -> Iterator[None]:
    gc.unfreeze()
    yield
    gc.unfreeze()


def _keys(pack: Pack, count: int) -> list[EpisodeKey]:
    return [EpisodeKey(pack.id, pack.tasks[i % len(pack.tasks)].id, i, 0) for i in range(count)]


@pytest.mark.parametrize("concurrency", [1, 4])
def test_the_heap_is_frozen_while_the_batch_runs_and_given_back_after(pack: Pack, concurrency: int):
    frozen_at: dict[int, int] = {}
    finished: list[int] = []

    def seen(record: EpisodeRecord) -> None:
        # gc.get_freeze_count walks the whole frozen heap (tens of ms in a test worker's heap): every episode up to
        # just past the first freeze, then a sample.
        if len(finished) < 260 or len(finished) % 50 == 0 or len(finished) == 599:
            frozen_at[len(finished)] = gc.get_freeze_count()
        finished.append(1)

    records = run_episodes(LookUpAgent(), [pack], _keys(pack, 600),
                           RolloutConfig(max_concurrency=concurrency), on_episode=seen)
    assert len(records) == 600 and all(r.failure is None for r in records)
    assert all(count == 0 for index, count in frozen_at.items() if index < 255)
    assert all(count > 0 for index, count in frozen_at.items() if index >= 256) and 599 in frozen_at
    assert gc.get_freeze_count() == 0


def test_a_stopped_batch_gives_the_heap_and_the_thresholds_back(pack: Pack):
    seen: list[tuple[int, int]] = []
    before = gc.get_threshold()

    def stop_after_300(record: EpisodeRecord) -> None:
        seen.append((gc.get_freeze_count(), gc.get_threshold()[0]))
        if len(seen) == 300:
            raise RolloutStopped("stopped by the caller", [])

    with pytest.raises(RolloutStopped):
        run_episodes(LookUpAgent(), [pack], _keys(pack, 400), RolloutConfig(max_concurrency=4),
                     on_episode=stop_after_300)
    assert seen[-1][0] > 0 and gc.get_freeze_count() == 0
    assert {young for _, young in seen} == {YOUNG_THRESHOLD} and gc.get_threshold() == before


def test_the_young_generation_is_collected_less_often_while_a_batch_runs(pack: Pack):
    gc.set_threshold(700, 10, 10)
    young: list[int] = []
    try:
        run_episodes(LookUpAgent(), [pack], _keys(pack, 20), RolloutConfig(max_concurrency=2),
                     on_episode=lambda r: young.append(gc.get_threshold()[0]))
        assert young == [YOUNG_THRESHOLD] * 20 and gc.get_threshold() == (700, 10, 10)
        gc.set_threshold(50_000, 20, 5)
        run_episodes(LookUpAgent(), [pack], _keys(pack, 20), RolloutConfig(max_concurrency=2),
                     on_episode=lambda r: young.append(gc.get_threshold()[0]))
        assert young[20:] == [50_000] * 20 and gc.get_threshold() == (50_000, 20, 5)
    finally:
        gc.set_threshold(700, 10, 10)


def _tracked(value: object) -> bool:
    """Whether the collector walks ``value`` (frozen objects are not among its generations)."""
    return any(o is value for o in gc.get_objects())


def test_a_heap_frozen_before_the_batch_stays_frozen_and_the_batch_freezes_nothing(pack: Pack):
    held_before = [object(), [1, 2]]
    gc.freeze()
    records = run_episodes(LookUpAgent(), [pack], _keys(pack, 300), RolloutConfig(max_concurrency=4))
    assert not _tracked(held_before[1]) and gc.get_freeze_count() > 0
    assert _tracked(records[0]) and _tracked(records[0].trace)


def test_records_of_a_finished_batch_are_collectable_again(pack: Pack):
    records = run_episodes(LookUpAgent(), [pack], _keys(pack, 300), RolloutConfig(max_concurrency=4))
    assert _tracked(records[0].trace) and _tracked(records[-1].trace)


def test_a_disabled_collector_is_left_alone(pack: Pack):
    gc.disable()
    try:
        thresholds = gc.get_threshold()
        run_episodes(LookUpAgent(), [pack], _keys(pack, 300), RolloutConfig(max_concurrency=4))
        assert gc.get_freeze_count() == 0 and not gc.isenabled() and gc.get_threshold() == thresholds
    finally:
        gc.enable()


def test_freezing_needs_a_positive_interval():
    with pytest.raises(ValueError, match="every must be at least 1, got 0"):
        FrozenAsTheyFinish(every=0)

"""The gold agent plays each task's gold program through the real tools: its episodes are verified demonstrations."""

import pytest

from arena.agents.gold import GoldAgent
from arena.core.domains import BUILTIN_DOMAINS
from arena.core.pack import build_pack
from arena.rollout import EpisodeKey, RolloutConfig, run_episodes, run_rollouts


@pytest.mark.parametrize("domain", BUILTIN_DOMAINS)
def test_the_gold_play_of_every_task_passes_every_check_on_two_seeds(domain):
    pack = build_pack(domain, seed=0)
    records = run_rollouts(GoldAgent(pack), [pack], RolloutConfig(seeds=[0, 1]))
    assert len(records) == 2 * len(pack.tasks)
    assert [(r.task_id, r.seed) for r in records if not r.passed] == []
    for record in records[:5]:
        gold = pack.task(record.task_id).gold
        assert [(s.tool, s.arguments) for s in record.trace] == [(s.tool, s.arguments) for s in gold.steps]
        assert record.reply == gold.reply and record.model_ref == f"gold@{pack.id}"


def test_a_task_of_another_pack_is_a_crashed_episode_and_the_batch_goes_on():
    helpdesk, tracker = build_pack("helpdesk", seed=0), build_pack("tracker", seed=0)
    keys = [EpisodeKey(tracker.id, tracker.tasks[0].id, 0, 0), EpisodeKey(tracker.id, tracker.tasks[1].id, 0, 0)]
    records = run_episodes(GoldAgent(helpdesk), [tracker], keys, RolloutConfig())
    assert [r.passed for r in records] == [False, False]
    assert all(r.failure is not None and r.failure.kind == "crash" and helpdesk.id in r.failure.message
               for r in records)

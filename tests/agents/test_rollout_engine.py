import os
import time

import pytest
from toy_domain import TOY

from arena.agents.base import AgentRun, ModelAPIError
from arena.agents.reference import PolicyParams, ReferencePolicy
from arena.core.episode import EpisodeRecord
from arena.core.metrics import compute_metrics, pass_at_k, pass_hat_k
from arena.core.pack import build_pack
from arena.rollout import EpisodeKey, RolloutConfig, plan_episodes, run_rollouts


@pytest.fixture(scope="module")
def pack():
    return build_pack(TOY, seed=0, knobs={"orders": 200})


class Troublemaker:
    """Plays the gold-like path, but crashes, hangs or dies on cue by task id and seed."""

    name = "trouble"
    model_ref = "trouble@1"

    def run_episode(self, observation, call_tool, *, seed):
        task = observation.task["task_id"]
        call_tool("get_order", {"order_id": "ORD-00005"})
        if task == "refund_timeout-01":
            raise RuntimeError("agent bug")
        if task == "refund_conflict-01":
            while True:
                time.sleep(0.05)
        return AgentRun(reply="nothing to do")


class DiesHard:
    name = "dies"
    model_ref = "dies@1"

    def run_episode(self, observation, call_tool, *, seed):
        if observation.task["task_id"] == "refund_timeout-01":
            os._exit(3)
        if observation.task["task_id"] == "refund_conflict-01":
            raise ModelAPIError("bad_request", "HTTP 400: context length exceeded", invalid=True,
                                usage=AgentRun(tokens_in=9))
        return AgentRun(reply="ok")


def _by_task(records):
    return {r.task_id: r for r in records}


def test_plan_is_tasks_x_seeds_x_attempts(pack):
    keys = plan_episodes([pack], RolloutConfig(seeds=[0, 1], k=3, split="heldout"))
    heldout = [t.id for t in pack.tasks if t.split == "heldout"]
    assert len(keys) == len(heldout) * 2 * 3
    assert keys[0] == EpisodeKey(pack.id, heldout[0], 0, 0)


def test_crash_and_hang_in_processes_never_stop_the_batch(pack):
    config = RolloutConfig(executor="process", workers=2, episode_timeout_s=1.0)
    records = run_rollouts(Troublemaker(), [pack], config)
    got = _by_task(records)
    assert len(records) == 3
    assert got["refund_plain-01"].failure is None and got["refund_plain-01"].verdict is not None
    timeout = got["refund_timeout-01"].failure
    assert timeout.boundary == "agent" and "agent bug" in timeout.message
    assert got["refund_conflict-01"].failure.kind == "episode_timeout"
    assert "worker killed" in got["refund_conflict-01"].failure.message


def test_hang_inline_is_cut_at_the_next_tool_call(pack):
    class SlowCaller:
        name = "slow"
        model_ref = "slow@1"

        def run_episode(self, observation, call_tool, *, seed):
            for _ in range(100):
                time.sleep(0.02)
                call_tool("get_order", {"order_id": "ORD-00001"})
            return AgentRun(reply="late")

    records = run_rollouts(SlowCaller(), [pack], RolloutConfig(task_ids=["refund_plain-01"], episode_timeout_s=0.2))
    assert records[0].failure.kind == "episode_timeout"
    assert 0 < len(records[0].trace) < 100
    assert records[0].verdict is not None and not records[0].verdict.passed


def test_dead_worker_and_invalid_rollout_are_recorded(pack):
    records = run_rollouts(DiesHard(), [pack], RolloutConfig(executor="process", workers=1, episode_timeout_s=5))
    got = _by_task(records)
    assert got["refund_timeout-01"].failure.kind == "worker_died"
    assert got["refund_conflict-01"].invalid and got["refund_conflict-01"].failure.boundary == "model_api"
    assert got["refund_conflict-01"].tokens_in == 9
    metrics = compute_metrics(records)
    assert metrics.invalid == 1 and metrics.episodes == 2
    assert metrics.failures_by_boundary == {"agent": 1, "model_api": 1}


def test_processes_and_inline_give_the_same_records(pack):
    agent = ReferencePolicy(PolicyParams.initial())
    config = RolloutConfig(seeds=[0, 1], k=2)
    inline = run_rollouts(agent, [pack], config)
    parallel = run_rollouts(agent, [pack], config.model_copy(update={"executor": "process", "workers": 2}))
    threads = run_rollouts(agent, [pack], config.model_copy(update={"executor": "thread", "workers": 2}))

    def strip(rs):
        return [r.model_dump(exclude={"wall_time_s"}) for r in rs]

    assert strip(inline) == strip(parallel) == strip(threads)


class SlowKiller:
    """Waits a little on every episode (so several are in flight), and kills its process on one task."""

    name = "slow-killer"
    model_ref = "slow-killer@1"

    def run_episode(self, observation, call_tool, *, seed):
        call_tool("get_order", {"order_id": "ORD-00005"})
        time.sleep(0.3)
        if observation.task["task_id"] == "refund_timeout-01":
            os._exit(9)
        return AgentRun(reply="nothing to do")


def test_process_workers_keep_several_episodes_in_flight_and_give_the_inline_records(pack):
    agent = ReferencePolicy(PolicyParams.initial())
    config = RolloutConfig(seeds=[0, 1, 2], k=2)
    inline = run_rollouts(agent, [pack], config)
    parallel = run_rollouts(agent, [pack], config.model_copy(update={"executor": "process", "workers": 2,
                                                                     "max_concurrency": 4}))
    assert [r.model_dump(exclude={"wall_time_s"}) for r in inline] == \
        [r.model_dump(exclude={"wall_time_s"}) for r in parallel]


def test_a_worker_dying_with_several_in_flight_loses_only_the_episodes_that_killed_it(pack):
    config = RolloutConfig(seeds=[0, 1, 2], executor="process", workers=1, max_concurrency=4, episode_timeout_s=5)
    records = run_rollouts(SlowKiller(), [pack], config)
    lost = [(r.task_id, r.seed, r.failure.kind) for r in records if r.failure is not None]
    assert lost == [("refund_timeout-01", seed, "worker_died") for seed in (0, 1, 2)]
    assert len(records) == len(plan_episodes([pack], config))
    assert all(r.reply == "nothing to do" for r in records if r.failure is None)


def test_skip_finished_episodes(pack):
    agent = ReferencePolicy(PolicyParams.expert())
    config = RolloutConfig(seeds=[0], k=2)
    first = run_rollouts(agent, [pack], config)
    done = [EpisodeKey(r.pack_id, r.task_id, r.seed, r.attempt) for r in first[:4]]
    seen = []
    rest = run_rollouts(agent, [pack], config, skip=done, on_episode=seen.append)
    assert len(rest) == len(first) - 4 and seen == rest
    assert {r.episode_id for r in rest}.isdisjoint({r.episode_id for r in first[:4]})


def test_jsonl_round_trip(pack):
    records = run_rollouts(ReferencePolicy(), [pack], RolloutConfig(k=2))
    lines = [r.model_dump_json() for r in records]
    assert [EpisodeRecord.model_validate_json(line) for line in lines] == records


def test_pass_at_k_and_pass_hat_k_known_values():
    assert pass_at_k(4, 0, 1) == 0.0
    assert pass_at_k(4, 1, 1) == pytest.approx(0.25)
    assert pass_at_k(4, 1, 2) == pytest.approx(0.5)
    assert pass_at_k(4, 3, 2) == 1.0
    assert pass_hat_k(4, 4, 4) == 1.0
    assert pass_hat_k(4, 3, 2) == pytest.approx(0.5)
    assert pass_hat_k(4, 2, 2) == pytest.approx(1 / 6)
    assert pass_hat_k(4, 1, 2) == 0.0
    with pytest.raises(ValueError, match="k=5"):
        pass_at_k(4, 1, 5)


def test_metrics_on_known_records(pack):
    base = run_rollouts(ReferencePolicy(PolicyParams.expert()), [pack],
                        RolloutConfig(k=4, task_ids=["refund_plain-01"]))
    failing = [r.model_copy(update={"verdict": r.verdict.model_copy(update={"passed": False, "score": 0.5})})
               for r in base[:2]]
    records = failing + base[2:]
    m = compute_metrics(records, k=2)
    assert m.pass_rate.value == pytest.approx(0.5)
    assert m.pass_at_k.value == pytest.approx(pass_at_k(4, 2, 2))
    assert m.pass_hat_k.value == pytest.approx(pass_hat_k(4, 2, 2))
    assert m.mean_score.value == pytest.approx(0.75)
    assert m.pass_rate.low <= m.pass_rate.value <= m.pass_rate.high

"""Token and cost accounting of LLM episodes, and the campaign's budget stop rule."""

from __future__ import annotations

import pytest

from arena.agents.litellm_agent import LiteLLMAgent, LiteLLMConfig
from arena.agents.scripted_server import ReplyCue, ScriptedModelServer
from arena.core.pack import build_pack
from arena.rollout import RolloutConfig, plan_episodes, run_episodes
from flows.budget import budget_stop, spent
from flows.settings import load_settings


def test_episodes_carry_tokens_and_litellms_price(gymloop_home):
    pack = build_pack("procurement", seed=0)
    keys = plan_episodes([pack], RolloutConfig(split="heldout"))[:3]
    with ScriptedModelServer(lambda m: ReplyCue("done", prompt_tokens=1000, completion_tokens=100)) as server:
        priced = LiteLLMAgent(LiteLLMConfig(model="openai/gpt-4o-mini", api_base=server.base_url + "/v1",
                                            api_key="sk-local", max_retries=0))
        local = LiteLLMAgent(LiteLLMConfig(model="hosted_vllm/unpriced", api_base=server.base_url + "/v1",
                                           max_retries=0))
        paid = run_episodes(priced, [pack], keys, RolloutConfig(max_concurrency=3))
        free = run_episodes(local, [pack], keys, RolloutConfig(max_concurrency=3))
    import litellm

    price = litellm.model_cost["gpt-4o-mini"]
    expected = 1000 * price["input_cost_per_token"] + 100 * price["output_cost_per_token"]
    assert all(r.tokens_in == 1000 and r.tokens_out == 100 for r in paid + free)
    assert all(r.cost == pytest.approx(expected) for r in paid)
    assert all(r.cost == 0.0 for r in free)


def test_the_budget_stops_a_campaign_once_its_rounds_used_it(gymloop_home):
    rounds = [{"metrics": {"tokens": 600.0, "cost_usd": 0.25}}, {"metrics": {"tokens": 500.0, "cost_usd": 0.5}}]
    assert spent(rounds) == (1100.0, 0.75)
    assert budget_stop(load_settings(), rounds) is None
    assert budget_stop(load_settings(token_budget=2000), rounds) is None
    assert budget_stop(load_settings(token_budget=1000), rounds) == \
        "token budget reached: 1100 tokens used, budget 1000"
    assert budget_stop(load_settings(cost_budget=0.7), rounds[:1]) is None
    assert budget_stop(load_settings(cost_budget=0.7), rounds) == "cost budget reached: $0.7500 used, budget $0.7"

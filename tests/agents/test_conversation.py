"""Conversational episodes: a user opens, the agent and the user take turns, the record keeps every message."""

from __future__ import annotations

import dataclasses
import json
from typing import Any

import pytest

from arena.agents.base import AgentRun, CallTool
from arena.agents.litellm_agent import LiteLLMAgent, LiteLLMConfig
from arena.agents.reference import PolicyParams, ReferencePolicy
from arena.agents.scripted_server import ErrorCue, ReplyCue, ScriptedModelServer, ToolCallCue
from arena.agents.transcript import episode_messages, observation_of
from arena.agents.user import ConversationConfig
from arena.agents.user_scripted import AGREE, ScriptedUser
from arena.core.conversation import Conversation, GivenTurn, GivenTurns, UserScenario, first_person
from arena.core.gym import Observation
from arena.core.pack import Pack, build_pack, pack_files, with_content_id
from arena.rollout import RolloutConfig, run_rollouts
from tests.toy_domain import TOY

SCENARIO = UserScenario(
    instructions="You want 5.00 back on order ORD-00005.\nYou are Ada Lovelace.",
    reason_for_call="You want 5.00 back on order ORD-00005.",
    known_info="You are Ada Lovelace.\nYour order id is ORD-00005.",
    unknown_info="You do not know your email address.",
)


def _talking(pack: Pack, conversation: Conversation) -> Pack:
    """The toy pack with its first task (refund ORD-00005, no fault) played as a conversation."""
    task = pack.task("refund_plain-01").model_copy(update={"conversation": conversation})
    return with_content_id(dataclasses.replace(pack, tasks=[task]))


@pytest.fixture(scope="module")
def toy() -> Pack:
    return build_pack(TOY, seed=0)


@pytest.fixture(scope="module")
def talk(toy: Pack) -> Pack:
    return _talking(toy, Conversation(user=SCENARIO, tell=["RF-N00001"]))


def _llm(server: ScriptedModelServer, client: str = "openai", **extra: Any) -> LiteLLMAgent:
    return LiteLLMAgent(LiteLLMConfig(model="openai/scripted", api_base=server.base_url + "/v1", client=client,
                                      api_key="sk-local", max_retries=0, timeout_s=10, **extra))


def test_tasks_without_a_conversation_keep_their_files_and_ids(toy: Pack, talk: Pack) -> None:
    files = pack_files(toy)
    task_file = json.loads(files[f"tasks/{toy.tasks[0].id}.json"])
    assert "conversation" not in task_file and "source" not in task_file
    assert json.loads(pack_files(talk)[f"tasks/{talk.tasks[0].id}.json"])["conversation"]["tell"] == ["RF-N00001"]
    assert talk.id != toy.id


def test_a_single_reply_agent_reads_the_users_opening_and_its_reply_is_its_one_message(talk: Pack) -> None:
    seen: list[Observation] = []

    class Spy:
        name = "spy"
        model_ref = "spy"

        def run_episode(self, observation: Observation, call_tool: CallTool, *, seed: int) -> AgentRun:
            seen.append(observation)
            return ReferencePolicy(PolicyParams.expert()).run_episode(observation, call_tool, seed=seed)

    [record] = run_rollouts(Spy(), [talk], RolloutConfig())
    opening = seen[0].task["prompt"]
    assert opening.startswith("Hi! I want 5.00 back on order ORD-00005.") and "I am Ada Lovelace." in opening
    assert seen[0].task["conversational"] is True
    assert [(t.role, t.step) for t in record.conversation] == [("user", 0), ("agent", len(record.trace))]
    assert record.conversation[0].text == opening and record.conversation[1].text == record.reply
    assert record.user is not None and record.user.ref == "scripted" and record.user.ended == "agent_stop"
    assert record.passed, record.verdict
    tells = [r for r in record.verdict.results if r.description == "tells the user 'RF-N00001'"]
    assert tells and tells[0].passed


@pytest.mark.parametrize("client", ["openai", "litellm"])
def test_an_llm_agent_asks_the_user_and_acts_on_the_answer(talk: Pack, client: str) -> None:
    script = [
        ReplyCue("Could you tell me your order id?"),
        ToolCallCue("check_refund", '{"order_id": "ORD-00005"}'),
        ToolCallCue("refund_order", '{"order_id": "ORD-00005", "amount": 5.0}'),
        ReplyCue("Done: 5.00 refunded as RF-N00001."),
    ]
    with ScriptedModelServer(script) as server:
        [record] = run_rollouts(_llm(server, client), [talk], RolloutConfig())
        sent = [r.body["messages"] for r in server.requests]
    assert [(t.role, t.step) for t in record.conversation] == [("user", 0), ("agent", 0), ("user", 0),
                                                               ("agent", 2), ("user", 2)]
    assert record.conversation[2].text == "My order id is ORD-00005."
    assert record.conversation[4].text.endswith("###STOP###")
    # The model read the user's answer as the next user message, right after its own question.
    assert sent[1][-2:] == [{"role": "assistant", "content": "Could you tell me your order id?"},
                            {"role": "user", "content": "My order id is ORD-00005."}]
    assert "talking with the user" in sent[0][0]["content"]
    assert record.user is not None and record.user.ended == "user_stop" and record.user.ref == "scripted"
    assert record.reply == "Done: 5.00 refunded as RF-N00001." and record.turns == 4
    assert record.passed, record.verdict
    rendered = episode_messages(observation_of(talk, record.task_id), record.trace, record.reply,
                                record.conversation)
    roles = [m["role"] for m in rendered]
    assert roles == ["system", "user", "assistant", "user", "assistant", "tool", "assistant", "tool", "assistant",
                     "user"]
    assert rendered[1]["content"] == record.conversation[0].text and rendered[-2]["content"] == record.reply


def test_a_fact_the_agent_never_told_fails_the_verdict(talk: Pack) -> None:
    script = [ToolCallCue("check_refund", '{"order_id": "ORD-00005"}'),
              ToolCallCue("refund_order", '{"order_id": "ORD-00005", "amount": 5.0}'),
              ReplyCue("All done.")]
    with ScriptedModelServer(script) as server:
        [record] = run_rollouts(_llm(server), [talk], RolloutConfig())
    assert not record.passed
    failed = [r for r in record.verdict.results if not r.passed]
    assert [r.description for r in failed] == ["states the refund", "tells the user 'RF-N00001'"]


def test_the_user_model_plays_the_scenario_through_the_agents_client_and_is_counted_apart(talk: Pack) -> None:
    agent_script = [ToolCallCue("check_refund", '{"order_id": "ORD-00005"}'),
                    ToolCallCue("refund_order", '{"order_id": "ORD-00005", "amount": 5.0}'),
                    ReplyCue("Refunded as RF-N00001.", prompt_tokens=100, completion_tokens=10)]
    user_script = [ReplyCue("Hello, I'd like 5.00 back on ORD-00005.", prompt_tokens=7, completion_tokens=3),
                   ReplyCue("Great, thanks! ###STOP###", prompt_tokens=9, completion_tokens=4)]
    with ScriptedModelServer(agent_script) as agent_server, ScriptedModelServer(user_script) as user_server:
        user_model = LiteLLMConfig(model="openai/user-sim", api_base=user_server.base_url + "/v1", client="openai",
                                   max_retries=0, timeout_s=10)
        config = RolloutConfig(conversation=ConversationConfig(user_model=user_model))
        [record] = run_rollouts(_llm(agent_server), [talk], config)
        user_requests = [r.body for r in user_server.requests]
        user_url = user_server.base_url
    assert record.conversation[0].text == "Hello, I'd like 5.00 back on ORD-00005."
    assert record.user is not None
    assert record.user.ref == f"openai/user-sim@{user_url}/v1" and record.user.ended == "user_stop"
    assert (record.user.requests, record.user.tokens_in, record.user.tokens_out) == (2, 16, 7)
    assert record.tokens_out != record.user.tokens_out
    system = user_requests[0]["messages"][0]["content"]
    assert "<scenario>\nYou want 5.00 back on order ORD-00005." in system and "###STOP###" in system
    # The user model reads the conversation with the roles flipped: the agent's words are its "user" turns.
    assert user_requests[1]["messages"][-1] == {"role": "user", "content": "Refunded as RF-N00001."}
    assert user_requests[1]["messages"][-2] == {"role": "assistant",
                                                 "content": "Hello, I'd like 5.00 back on ORD-00005."}
    assert "tools" not in user_requests[0]
    assert record.passed


def test_a_user_model_that_fails_makes_the_episode_invalid_not_the_agents_failure(talk: Pack) -> None:
    with ScriptedModelServer([ReplyCue("unused")]) as agent_server, \
            ScriptedModelServer([ErrorCue(503, "overloaded")]) as user_server:
        user_model = LiteLLMConfig(model="openai/user-sim", api_base=user_server.base_url + "/v1", client="openai",
                                   max_retries=0, timeout_s=10)
        config = RolloutConfig(conversation=ConversationConfig(user_model=user_model))
        [record] = run_rollouts(_llm(agent_server), [talk], config)
        agent_calls = len(agent_server.requests)
    assert record.invalid and record.failure is not None and record.failure.boundary == "user"
    assert record.verdict is None and agent_calls == 0


def test_a_user_who_gives_up_is_not_graded(talk: Pack) -> None:
    with ScriptedModelServer([ReplyCue("Which order?")]) as agent_server, \
            ScriptedModelServer([ReplyCue("Hi, I need help."), ReplyCue("###OUT-OF-SCOPE###")]) as user_server:
        user_model = LiteLLMConfig(model="openai/u", api_base=user_server.base_url + "/v1", client="openai",
                                   max_retries=0)
        config = RolloutConfig(conversation=ConversationConfig(user_model=user_model))
        [record] = run_rollouts(_llm(agent_server), [talk], config)
    assert record.invalid and record.failure is not None
    assert (record.failure.boundary, record.failure.kind) == ("user", "out_of_scope")
    assert record.user is not None and record.user.ended == "out_of_scope"


def test_too_many_failed_tool_calls_cut_the_conversation_short_and_fail_it(talk: Pack) -> None:
    with ScriptedModelServer(lambda messages: ToolCallCue("no_such_tool", "{}")) as server:
        config = RolloutConfig(conversation=ConversationConfig(max_errors=3))
        [record] = run_rollouts(_llm(server), [talk], config)
    assert len(record.trace) == 3 and all(not s.ok for s in record.trace)
    assert record.user is not None and record.user.ended == "too_many_errors"
    assert not record.passed and not record.invalid
    ended = [r for r in record.verdict.results if r.description.startswith("the conversation was ended")]
    assert ended[0].detail == "ended by too_many_errors"
    assert record.tokens_in > 0  # the agent's usage survives the cut


def test_the_user_says_at_most_max_turns_messages(talk: Pack) -> None:
    with ScriptedModelServer(lambda messages: ReplyCue("What is your name?")) as server:
        config = RolloutConfig(conversation=ConversationConfig(max_turns=3))
        [record] = run_rollouts(_llm(server), [talk], config)
    assert sum(t.role == "user" for t in record.conversation) == 3
    assert record.user is not None and record.user.ended == "max_turns" and not record.passed


def test_given_turns_are_said_in_order_whatever_the_agent_answers(toy: Pack) -> None:
    given = Conversation(user=GivenTurns(turns=[GivenTurn(text="Check order ORD-00005."),
                                                GivenTurn(text="Now refund 5.00 on it.")]))
    pack = _talking(toy, given)
    script = [ToolCallCue("check_refund", '{"order_id": "ORD-00005"}'), ReplyCue("It is eligible."),
              ToolCallCue("refund_order", '{"order_id": "ORD-00005", "amount": 5.0}'), ReplyCue("Refunded.")]
    with ScriptedModelServer(script) as server:
        [record] = run_rollouts(_llm(server), [pack], RolloutConfig())
    assert [(t.role, t.text, t.step) for t in record.conversation] == [
        ("user", "Check order ORD-00005.", 0), ("agent", "It is eligible.", 1),
        ("user", "Now refund 5.00 on it.", 1), ("agent", "Refunded.", 2)]
    assert record.user is not None and (record.user.ref, record.user.ended) == ("given", "given_turns_done")


def test_a_given_turn_reveals_the_tools_held_back_until_then(toy: Pack) -> None:
    given = Conversation(user=GivenTurns(turns=[GivenTurn(text="Check order ORD-00005."),
                                                GivenTurn(text="Now refund 5.00 on it.", reveal=["refund_order"])]),
                         hidden_tools=["refund_order"])
    pack = _talking(toy, given)
    script = [ToolCallCue("check_refund", '{"order_id": "ORD-00005"}'), ReplyCue("It is eligible."),
              ToolCallCue("refund_order", '{"order_id": "ORD-00005", "amount": 5.0}'), ReplyCue("Refunded.")]
    with ScriptedModelServer(script) as server:
        [record] = run_rollouts(_llm(server), [pack], RolloutConfig())
        offered = [[t["function"]["name"] for t in r.body["tools"]] for r in server.requests]
    assert "refund_order" not in offered[0] and "refund_order" not in offered[1]
    assert "refund_order" in offered[2] and offered[2].count("refund_order") == 1
    assert record.trace[-1].tool == "refund_order" and record.trace[-1].ok


def test_conversations_run_alike_on_threads_and_on_an_event_loop(talk: Pack) -> None:
    def script(messages: list[dict[str, Any]]) -> Any:
        if messages[-1]["role"] == "user" and len(messages) == 2:
            return ToolCallCue("check_refund", '{"order_id": "ORD-00005"}')
        if messages[-1]["role"] == "tool" and "eligible" in messages[-1]["content"]:
            return ToolCallCue("refund_order", '{"order_id": "ORD-00005", "amount": 5.0}')
        return ReplyCue("Refunded as RF-N00001.")

    with ScriptedModelServer(script) as server:
        agent = _llm(server)
        loop = run_rollouts(agent, [talk], RolloutConfig(seeds=[0, 1, 2], max_concurrency=3))
        threads = run_rollouts(agent, [talk], RolloutConfig(seeds=[0, 1, 2], max_concurrency=3,
                                                            async_episodes=False))
    for a, b in zip(loop, threads, strict=True):
        assert a.conversation == b.conversation and a.passed and b.passed


def test_the_scripted_user_is_deterministic_and_reads_its_scenario() -> None:
    def play() -> list[str]:
        user = ScriptedUser(SCENARIO)
        return [user.open().text, user.reply("Can you confirm you want a refund?").text,
                user.reply("What is your email address?").text, user.reply("What is your name?").text,
                user.reply("Refunded.").text]

    first = play()
    assert first == play()
    assert first[1] == AGREE
    assert first[2] == "I'm sorry, I don't know that."
    assert first[3] == "I am Ada Lovelace. My order id is ORD-00005."  # no line answers "name": all it knows
    assert first[4].endswith("###STOP###")
    assert ScriptedUser(SCENARIO).reply("I will transfer you to a human agent now.").ended == "transfer"
    assert first_person("You were told your flight is late.") == "I was told my flight is late."


def _judge_pack(toy: Pack) -> Pack:
    return _talking(toy, Conversation(user=SCENARIO, judge=["The agent refunded 5.00.", "The agent was polite."]))


def test_without_a_judge_model_statements_stay_unjudged_and_out_of_the_score(toy: Pack) -> None:
    [record] = run_rollouts(ReferencePolicy(PolicyParams.expert()), [_judge_pack(toy)], RolloutConfig())
    assert record.verdict is not None and record.passed
    assert record.verdict.unjudged == ["The agent refunded 5.00.", "The agent was polite."]
    assert not any(r.description.startswith("judged: ") for r in record.verdict.results)


def test_a_judge_model_judges_the_statements_on_the_conversation(toy: Pack) -> None:
    answer = {"results": [{"statement": 1, "met": True, "reasoning": "it did"},
                          {"statement": 2, "met": False, "reasoning": "it was curt"}]}
    with ScriptedModelServer([ReplyCue("Here you go:\n" + json.dumps(answer))]) as judge:
        config = LiteLLMConfig(model="openai/judge", api_base=judge.base_url + "/v1", client="openai", max_retries=0)
        [record] = run_rollouts(ReferencePolicy(PolicyParams.expert()), [_judge_pack(toy)],
                                RolloutConfig(conversation=ConversationConfig(judge_model=config)))
        asked = judge.requests[0].body["messages"][1]["content"]
    assert record.verdict is not None and record.verdict.unjudged == []
    judged = {r.description: r.passed for r in record.verdict.results if r.description.startswith("judged: ")}
    assert judged == {"judged: The agent refunded 5.00.": True, "judged: The agent was polite.": False}
    assert not record.passed and 0 < record.score < 1
    assert "user: Hi! I want 5.00 back on order ORD-00005." in asked and "2. The agent was polite." in asked


def test_a_judge_that_fails_makes_the_episode_invalid_never_a_pass(toy: Pack) -> None:
    with ScriptedModelServer([ErrorCue(500, "judge down")]) as judge:
        config = LiteLLMConfig(model="openai/judge", api_base=judge.base_url + "/v1", client="openai", max_retries=0)
        [record] = run_rollouts(ReferencePolicy(PolicyParams.expert()), [_judge_pack(toy)],
                                RolloutConfig(conversation=ConversationConfig(judge_model=config)))
    assert record.invalid and record.failure is not None and record.failure.boundary == "verifier"
    assert record.failure.kind == "judge_server_error" and record.verdict is None


def test_the_user_model_stops_at_its_own_token_budget(talk: Pack) -> None:
    with ScriptedModelServer(lambda m: ReplyCue("What else?")) as agent_server, \
            ScriptedModelServer(lambda m: ReplyCue("Tell me more.", prompt_tokens=400, completion_tokens=100)) as us:
        user_model = LiteLLMConfig(model="openai/u", api_base=us.base_url + "/v1", client="openai", max_retries=0,
                                   max_tokens=1200)
        config = RolloutConfig(conversation=ConversationConfig(user_model=user_model))
        [record] = run_rollouts(_llm(agent_server), [talk], config)
        asked = len(us.requests)
    assert asked == 3  # 500, 1,000, 1,500 tokens: the fourth request would pass 1,200
    assert record.invalid and record.failure is not None
    assert (record.failure.boundary, record.failure.kind) == ("user", "token_limit")
    assert record.user is not None and record.user.ended == "user_error" and record.user.requests == 3

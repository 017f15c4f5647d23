"""A round whose episodes are mostly invalid fails loudly, naming the count, the limit and the causes."""

import re

import pytest

from arena.agents.litellm_agent import PROBE_PROMPT
from arena.agents.scripted_server import ErrorCue, ReplyCue, ScriptedModelServer
from flows.models import RoundParams
from flows.round import curriculum_round
from flows.validity import InvalidEpisodesError
from registry import Registry


def test_a_round_past_the_invalid_share_fails_and_says_why(prefect_harness, gymloop_home, monkeypatch):
    monkeypatch.setenv("OPENAI_API_KEY", "sk-scripted")
    requests: list[str] = []

    def model(messages):
        """Passes the round's preflight, then fails every episode's request on the server's side."""
        if messages and messages[-1].get("content") == PROBE_PROMPT:
            return ReplyCue("ok")
        requests.append(messages[-1].get("content") or "")
        return ErrorCue(500, "the model server is down")

    with ScriptedModelServer(model) as server:
        overrides = {"model": "openai/scripted", "api_base": server.base_url + "/v1", "domains": ["procurement"],
                     "eval_k": 1, "variants_per_round": 0, "max_invalid_share": 0.5, "model_retries": 1,
                     # the circuit breaker would stop the stage first: this test is about the invalid share
                     "max_model_failures": 10_000}
        complaint = (r"(\d+) of \1 eval_before episodes are invalid \(100%\), "
                     r"above max_invalid_share 0.5: model_api/server_error x\1")
        with pytest.raises(InvalidEpisodesError, match=complaint) as raised:
            curriculum_round(RoundParams(campaign="bad-model", round_index=0, overrides=overrides))
    found = re.search(complaint, str(raised.value))
    assert found is not None
    invalid = int(found.group(1))
    assert len(requests) == 2 * invalid, "each episode's request is sent once and retried model_retries (1) times"
    registry = Registry(f"sqlite:///{gymloop_home / 'registry.db'}")
    info = registry.rounds(registry.campaign("bad-model").id)[0]
    assert info.status == "failed" and "eval_before episodes are invalid" in (info.error or "")

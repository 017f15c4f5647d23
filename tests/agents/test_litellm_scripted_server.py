"""The scripted OpenAI-compatible model server, spoken to over real HTTP."""

from __future__ import annotations

import json
from typing import Any

import httpx
import pytest

from arena.agents.scripted_server import (
    SERVER_TIME_HEADER,
    Cue,
    DelayCue,
    ErrorCue,
    MalformedToolCallCue,
    ReplyCue,
    ScriptedModelServer,
    ToolCallCue,
)

BODY = {"model": "scripted", "messages": [{"role": "user", "content": "hello"}]}


def test_cues_are_answered_in_order_in_the_openai_format() -> None:
    script: list[Cue] = [
        ToolCallCue("get_ticket", '{"ticket_id": "T-1"}', prompt_tokens=11, completion_tokens=4),
        MalformedToolCallCue("get_ticket", "{not json"),
        ReplyCue("bye"),
    ]
    with ScriptedModelServer(script) as server, httpx.Client(base_url=server.base_url) as client:
        first = client.post("/v1/chat/completions", json=BODY)
        second = client.post("/chat/completions", json=BODY)
        third = client.post("/v1/chat/completions", json=BODY)
        recorded = list(server.requests)
    call = first.json()["choices"][0]
    assert call["finish_reason"] == "tool_calls"
    assert call["message"]["tool_calls"][0]["function"] == {"name": "get_ticket", "arguments": '{"ticket_id": "T-1"}'}
    assert first.json()["usage"] == {"prompt_tokens": 11, "completion_tokens": 4, "total_tokens": 15}
    assert second.json()["choices"][0]["message"]["tool_calls"][0]["function"]["arguments"] == "{not json"
    reply = third.json()["choices"][0]
    assert reply["message"]["content"] == "bye" and reply["finish_reason"] == "stop"
    assert third.json()["usage"]["prompt_tokens"] > 0
    assert [r.path for r in recorded] == ["/v1/chat/completions", "/chat/completions", "/v1/chat/completions"]
    assert all(r.body == BODY and r.status == 200 and r.server_time_s > 0 for r in recorded)
    assert float(first.headers[SERVER_TIME_HEADER]) >= 0
    assert server.server_time_s == pytest.approx(sum(r.server_time_s for r in recorded))


def test_a_server_that_keeps_no_requests_still_counts_them() -> None:
    with ScriptedModelServer([ReplyCue("one")], keep_requests=False) as server, \
            httpx.Client(base_url=server.base_url) as client:
        answered = client.post("/v1/chat/completions", json=BODY)
        exhausted = client.post("/v1/chat/completions", json=BODY)
    assert answered.json()["choices"][0]["message"]["content"] == "one"
    assert "script exhausted at request 2" in exhausted.json()["error"]["message"]
    assert server.requests == [] and server.peak_in_flight == 1


def test_errors_carry_status_message_and_retry_after() -> None:
    script: list[Cue] = [ErrorCue(429, "slow down", retry_after=0.25), ErrorCue(400, "context length exceeded")]
    with ScriptedModelServer(script) as server, httpx.Client(base_url=server.base_url) as client:
        limited = client.post("/v1/chat/completions", json=BODY)
        too_long = client.post("/v1/chat/completions", json=BODY)
    assert limited.status_code == 429 and limited.headers["retry-after"] == "0.25"
    assert limited.json()["error"]["message"] == "slow down"
    assert too_long.status_code == 400 and too_long.json()["error"]["code"] == "context_length_exceeded"


def test_a_callable_script_sees_the_messages_and_an_exhausted_list_answers_500() -> None:
    seen: list[list[dict[str, Any]]] = []

    def script(messages: list[dict[str, Any]]) -> Cue:
        seen.append(messages)
        return ReplyCue(f"you said {messages[-1]['content']}")

    with ScriptedModelServer(script) as server, httpx.Client(base_url=server.base_url) as client:
        answer = client.post("/v1/chat/completions", json=BODY)
    assert answer.json()["choices"][0]["message"]["content"] == "you said hello" and seen == [BODY["messages"]]
    with ScriptedModelServer([]) as server, httpx.Client(base_url=server.base_url) as client:
        exhausted = client.post("/v1/chat/completions", json=BODY)
        missing = client.post("/v1/embeddings", content=json.dumps(BODY))
    assert exhausted.status_code == 500 and "script exhausted at request 1" in exhausted.json()["error"]["message"]
    assert missing.status_code == 404


def test_a_delay_outlasts_the_client_timeout_and_stopping_cuts_it_short() -> None:
    with ScriptedModelServer([DelayCue(30.0, then=ReplyCue("late"))]) as server:
        with httpx.Client(base_url=server.base_url, timeout=0.2) as client, pytest.raises(httpx.ReadTimeout):
            client.post("/v1/chat/completions", json=BODY)
        assert len(server.requests) == 1 and server.requests[0].status == 0
    with pytest.raises(RuntimeError, match="not running"):
        _ = server.base_url

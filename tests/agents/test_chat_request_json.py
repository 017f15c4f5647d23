"""The ``openai`` client's request JSON: what it sends, with each list of tools encoded once."""

import json

import openai
import pytest

from arena.agents.chat_client import ChatClient

TOOLS = [{"type": "function", "function": {"name": "get_ticket", "description": "Fetch a ticket — by id.",
                                           "parameters": {"type": "object", "properties": {"id": {"type": "string"}}}}}]


def _client() -> ChatClient:
    return ChatClient("openai", "hosted_vllm/m", "http://127.0.0.1:9/v1", "sk-not-sent")


def test_the_json_holds_the_request_without_litellms_keys_and_with_the_servers_model_name():
    request = {"model": "hosted_vllm/Qwen/Qwen2.5-7B", "messages": [{"role": "user", "content": "hi \u2603"}],
               "tools": TOOLS, "seed": 3, "timeout": 5.0, "api_key": "sk-secret", "api_base": "http://x",
               "num_retries": 0, "drop_params": True}
    body = _client().request_json(request)
    assert json.loads(body) == {"model": "Qwen/Qwen2.5-7B", "messages": request["messages"], "tools": TOOLS,
                                "seed": 3}
    assert b"sk-secret" not in body


def test_a_request_without_tools_has_no_tools_key():
    body = _client().request_json({"model": "m", "messages": [], "tool_choice": None})
    assert json.loads(body) == {"model": "m", "messages": [], "tool_choice": None}


def test_each_list_of_tools_gives_its_own_json_and_the_same_list_the_same_bytes():
    client = _client()
    first = client.request_json({"model": "m", "messages": [], "tools": TOOLS})
    other = [{**TOOLS[0], "function": {**TOOLS[0]["function"], "name": "close_ticket"}}]
    second = client.request_json({"model": "m", "messages": [], "tools": other})
    assert json.loads(second)["tools"] == other and json.loads(first)["tools"] == TOOLS
    assert client.request_json({"model": "m", "messages": [], "tools": TOOLS}) == first
    for _ in range(100):
        fresh = [dict(TOOLS[0])]
        assert json.loads(client.request_json({"model": "m", "messages": [], "tools": fresh}))["tools"] == fresh


def test_the_openai_path_keeps_the_query_of_the_base_url_and_sends_its_userinfo() -> None:
    """``http://user:pw@host/v1?api-key=...``: the query stays the query, the userinfo goes as basic auth."""
    import asyncio
    import base64

    from arena.agents.chat_client import chat_url
    from arena.agents.scripted_server import ReplyCue, ScriptedModelServer

    assert chat_url("http://h:1/v1/?api-key=q") == "http://h:1/v1/chat/completions?api-key=q"
    assert chat_url("http://h:1/v1") == "http://h:1/v1/chat/completions"
    basic = "Basic " + base64.b64encode(b"user:pw-1234").decode()
    with ScriptedModelServer([], default=ReplyCue("ok"), authorization=basic) as server:
        base = server.base_url.replace("http://", "http://user:pw-1234@") + "/v1?api-key=q-5678"
        client = ChatClient("openai", "hosted_vllm/m", base, None)
        request = {"model": "hosted_vllm/m", "messages": [{"role": "user", "content": "hi"}], "timeout": 10}
        assert client.complete(request).choices[0].message.content == "ok"
        assert asyncio.run(client.acomplete(request)).choices[0].message.content == "ok"
        assert [r.path for r in server.requests] == ["/v1/chat/completions"] * 2 and server.refused == 0
        wrong = ChatClient("openai", "hosted_vllm/m", base.replace("pw-1234", "pw-0000"), None)
        with pytest.raises(openai.AuthenticationError) as info:
            wrong.complete(request)
        assert "pw-0000" not in str(info.value) and server.refused == 1

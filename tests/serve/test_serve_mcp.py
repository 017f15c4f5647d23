"""The same episode gives byte-identical results and verdicts in-process and over MCP (in-process, stdio, HTTP)."""

from __future__ import annotations

import asyncio
import json
import sys
from typing import Any

import pytest
from mcp import Client, StdioServerParameters

from arena.core.domains import BUILTIN_DOMAINS
from arena.core.pack import Pack
from arena.serve import GymService, build_mcp_server
from arena.serve.client import http_client, tool_text
from tests.serve.conftest import Call, LiveServer, episode_calls, reference, write_task


async def play(client: Client, task_id: str, seed: int, calls: list[Call], reply: str) -> tuple[list[str], str]:
    started = await client.call_tool("start_episode", {"task_id": task_id, "seed": seed})
    handle = json.loads(tool_text(started))["episode"]
    results = []
    for name, args in calls:
        result = await client.call_tool(name, {**args, "episode": handle})
        assert result.is_error == (not json.loads(tool_text(result))["ok"])
        results.append(tool_text(result))
    ended = await client.call_tool("end_episode", {"episode": handle, "reply": reply})
    assert not ended.is_error
    return results, tool_text(ended)


def check_same(pack: Pack, client_factory: Any, seed: int = 3) -> None:
    task = write_task(pack)
    calls = episode_calls(task)
    expected = reference(pack, task, seed, calls, task.gold.reply)

    async def run() -> tuple[list[str], str]:
        async with client_factory() as client:
            return await play(client, task.id, seed, calls, task.gold.reply)

    got = asyncio.run(run())
    assert got[0] == expected[0]
    assert got[1] == expected[1]
    outcome = json.loads(got[1])
    assert outcome["score"] == 1.0 and outcome["passed"]
    assert json.loads(got[0][0])["error"]["kind"] == "validation"


@pytest.mark.parametrize("domain", BUILTIN_DOMAINS)
def test_mcp_in_process_matches_in_process_gym(packs: dict[str, Pack], domain: str) -> None:
    server = build_mcp_server(GymService(packs[domain]))
    check_same(packs[domain], lambda: Client(server))


@pytest.mark.parametrize("domain", BUILTIN_DOMAINS)
def test_mcp_streamable_http_matches_in_process_gym(
    packs: dict[str, Pack], live_servers: dict[str, LiveServer], domain: str
) -> None:
    check_same(packs[domain], lambda: http_client(live_servers[domain].url + "/mcp"))


@pytest.mark.parametrize("domain", BUILTIN_DOMAINS)
def test_mcp_stdio_matches_in_process_gym(packs: dict[str, Pack], domain: str) -> None:
    params = StdioServerParameters(command=sys.executable, args=["-m", "arena.serve", domain, "--transport", "stdio"])
    check_same(packs[domain], lambda: Client(params))

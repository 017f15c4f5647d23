"""The OpenEnv surface (openenv-core 0.3) gives the same results and verdicts as the in-process gym."""

from __future__ import annotations

import asyncio
import json
from typing import Any

import pytest
from openenv.core.env_server.mcp_types import CallToolAction, ListToolsAction
from openenv.core.generic_client import GenericEnvClient

from arena.core.domains import BUILTIN_DOMAINS
from arena.core.pack import Pack
from arena.core.results import ToolResult
from arena.serve import GymService, McpGym
from arena.serve.openenv_surface import GymEnvironment
from tests.serve.conftest import LiveServer, episode_calls, reference, write_task


def _canonical(result: dict[str, Any]) -> str:
    return ToolResult.model_validate(result).model_dump_json()


@pytest.mark.parametrize("domain", BUILTIN_DOMAINS)
def test_openenv_environment_matches_in_process_gym(packs: dict[str, Pack], domain: str) -> None:
    pack = packs[domain]
    task = write_task(pack)
    calls = episode_calls(task)
    expected = reference(pack, task, 2, calls, task.gold.reply)
    env = GymEnvironment(McpGym(GymService(pack)))
    tools = env.step(ListToolsAction())
    assert {t.name for t in tools.tools} == {s.name for s in pack.tools} | {"list_tasks", "end_episode"}
    assert all("episode" not in t.input_schema["properties"] for t in tools.tools)
    first = env.reset(seed=2, task_id=task.id)
    assert first.task_id == task.id and first.prompt == task.prompt and not first.done
    results = [env.step(CallToolAction(tool_name=name, arguments=args)).result for name, args in calls]
    assert [json.dumps(r, separators=(",", ":")) for r in results] == expected[0]
    end = env.step(CallToolAction(tool_name="end_episode", arguments={"reply": task.gold.reply}))
    assert end.done and end.reward == 1.0
    assert json.dumps(end.result, separators=(",", ":")) == expected[1]
    assert env.state.done and env.state.step_count == len(calls) + 1


@pytest.mark.parametrize("domain", BUILTIN_DOMAINS)
def test_openenv_websocket_session_matches_in_process_gym(packs: dict[str, Pack], domain: str) -> None:
    pack = packs[domain]
    task = write_task(pack)
    calls = episode_calls(task)
    expected = reference(pack, task, 0, calls, "")

    async def run(url: str) -> tuple[list[str], dict[str, Any]]:
        async with GenericEnvClient(base_url=url) as env:
            await env.reset(task_id=task.id, seed=0)
            results = []
            for name, args in calls:
                step = await env.step({"type": "call_tool", "tool_name": name, "arguments": args})
                results.append(_canonical(step.observation["result"]))
            end = await env.step({"type": "call_tool", "tool_name": "end_episode", "arguments": {"reply": ""}})
            assert end.done
            return results, {"reward": end.reward, "result": end.observation["result"]}

    with LiveServer(GymService(pack), openenv=True) as server:
        results, end = asyncio.run(run(server.url + "/openenv"))
    assert results == expected[0]
    assert json.dumps(end["result"], separators=(",", ":")) == expected[1]
    assert end["reward"] == json.loads(expected[1])["score"] < 1.0

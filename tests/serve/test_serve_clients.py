"""A client that is not gymloop's plays a served gym; sessions keep separate worlds; bad input gets one line."""

from __future__ import annotations

import asyncio
import json
import socket
import sys
from contextlib import AsyncExitStack
from pathlib import Path

import httpx
import pytest
from mcp import Client
from pydantic import SecretStr

from arena.core.pack import Pack, build_pack, write_pack
from arena.serve import GymService, ServeLimits, build_mcp_server
from arena.serve.__main__ import main
from arena.serve.client import http_client, tool_text
from tests.serve.conftest import LiveServer, episode_calls, reference, reference_outcome, train_task, write_task

SDK_SCRIPT = '''
import asyncio, json, sys
from mcp import Client, StdioServerParameters

def text(result):
    return result.content[0].text

async def main(domain):
    seen = []
    params = StdioServerParameters(command=sys.executable, args=["-m", "arena.serve", domain])
    async with Client(params) as client:
        tools = await client.list_tools()
        seen.append(json.dumps([t.model_dump(mode="json") for t in tools.tools]))
        tasks = json.loads(text(await client.call_tool("list_tasks", {})))
        seen.append(json.dumps(tasks))
        plays = json.loads(sys.stdin.read())
        rewards = []
        for play in plays:
            started = await client.call_tool("start_episode", {"task_id": play["task_id"], "seed": 0})
            seen.append(text(started))
            handle = json.loads(text(started))["episode"]
            for step in play["steps"]:
                seen.append(text(await client.call_tool(step["tool"], {**step["arguments"], "episode": handle})))
            cheat = await client.call_tool("end_episode", {"episode": handle, "reply": "done", "reward": 1.0})
            seen.append(text(cheat))
            for name in ("verify", "gold", "assertions"):
                seen.append(text(await client.call_tool(name, {"episode": handle})))
            ended = await client.call_tool("end_episode", {"episode": handle, "reply": play["reply"]})
            again = await client.call_tool("end_episode", {"episode": handle, "reply": play["reply"]})
            seen.append(text(again))
            rewards.append([json.loads(text(ended))["score"], cheat.is_error, again.is_error])
    print(json.dumps({"tools": [t.name for t in tools.tools], "tasks": [t["task_id"] for t in tasks],
                      "rewards": rewards, "seen": seen}))

asyncio.run(main(sys.argv[1]))
'''


def test_sdk_client_script_plays_gold_and_null_and_cannot_reach_the_verifier(tmp_path: Path) -> None:
    import subprocess

    pack = build_pack("helpdesk", seed=0)
    task = write_task(pack)
    plays = [
        {"task_id": task.id, "steps": [s.model_dump(mode="json") for s in task.gold.steps], "reply": task.gold.reply},
        {"task_id": task.id, "steps": [], "reply": ""},
    ]
    script = tmp_path / "sdk_client.py"
    script.write_text(SDK_SCRIPT)
    proc = subprocess.run([sys.executable, str(script), "helpdesk"], input=json.dumps(plays), capture_output=True,
                          text=True, timeout=300, cwd=Path(__file__).resolve().parents[2])
    assert proc.returncode == 0, proc.stderr[-2000:]
    report = json.loads(proc.stdout.strip().splitlines()[-1])
    assert set(report["tools"]) == {s.name for s in pack.tools} | {"list_tasks", "start_episode", "end_episode"}
    assert report["tasks"] == [t.id for t in pack.tasks if t.split == "train"]
    # gold -> 1, null -> the in-process score (below 1); a chosen reward is refused; an ended episode cannot end again
    null_score = reference_outcome(pack, task, 0, [], "")[1].score
    assert null_score < 1.0
    assert report["rewards"] == [[1.0, True, True], [null_score, True, True]]
    seen = "\n".join(report["seen"])
    for t in pack.tasks:
        for assertion in t.assertions:
            secret = getattr(assertion, "sql", None)
            if secret:
                assert secret not in seen
        assert json.dumps(t.gold.model_dump(mode="json")) not in seen
    assert '"assertions"' not in seen and '"gold"' not in seen


def test_twenty_concurrent_http_sessions_keep_separate_worlds(packs: dict[str, Pack]) -> None:
    pack = packs["tracker"]
    task = write_task(pack)
    calls = [(s.tool, dict(s.arguments)) for s in task.gold.steps]
    expected = reference(pack, task, 0, calls, task.gold.reply)

    async def run(url: str) -> list[tuple[list[str], str]]:
        async with AsyncExitStack() as stack:
            clients = [await stack.enter_async_context(http_client(url)) for _ in range(20)]
            starts = await asyncio.gather(*(c.call_tool("start_episode", {"task_id": task.id}) for c in clients))
            handles = [json.loads(tool_text(s))["episode"] for s in starts]
            results: list[list[str]] = [[] for _ in clients]
            for name, args in calls:  # every session makes the same write in lockstep
                answers = await asyncio.gather(
                    *(c.call_tool(name, {**args, "episode": h}) for c, h in zip(clients, handles, strict=True)))
                for out, answer in zip(results, answers, strict=True):
                    out.append(tool_text(answer))
            ends = await asyncio.gather(*(c.call_tool("end_episode", {"episode": h, "reply": task.gold.reply})
                                          for c, h in zip(clients, handles, strict=True)))
            return [(r, tool_text(e)) for r, e in zip(results, ends, strict=True)]

    service = GymService(pack, limits=ServeLimits(max_episodes=20))
    with LiveServer(service) as server:
        outcomes = asyncio.run(run(server.url + "/mcp"))
        assert service.active() == 0
    assert len({json.dumps(o) for o in outcomes}) == 1
    assert outcomes[0] == expected


def test_a_token_guards_the_http_surface(packs: dict[str, Pack]) -> None:
    token = SecretStr("s3cret-token")
    with LiveServer(GymService(packs["helpdesk"]), token=token) as server:
        assert httpx.get(server.url + "/health", timeout=10).status_code == 401

        async def tools(with_token: bool) -> int:
            async with http_client(server.url + "/mcp", token if with_token else None) as client:
                return len((await client.list_tools()).tools)

        assert asyncio.run(tools(True)) == len(packs["helpdesk"].tools) + 3
        with pytest.raises(Exception):  # noqa: B017 - the SDK's error for a 401 varies by transport
            asyncio.run(tools(False))


def test_episode_tools_refuse_bad_input_in_one_line(packs: dict[str, Pack]) -> None:
    server = build_mcp_server(GymService(packs["procurement"], limits=ServeLimits(max_episodes=1)))
    task = train_task(packs["procurement"])

    async def run() -> list[tuple[bool, str]]:
        async with Client(server) as client:
            out = []
            for name, args in [("start_episode", {"task_id": "no-such-task"}), ("start_episode", {}),
                               (task.gold.steps[0].tool, dict(task.gold.steps[0].arguments)),
                               (task.gold.steps[0].tool, {"episode": "forged"}),
                               ("start_episode", {"task_id": task.id}), ("start_episode", {"task_id": task.id})]:
                result = await client.call_tool(name, args)
                out.append((result.is_error, tool_text(result)))
            return out

    results = asyncio.run(run())
    assert all(error for error, _ in results[:4]) and not results[4][0] and results[5][0]
    assert "'no-such-task' is not served by pack" in results[0][1]
    assert "needs 'task_id'" in results[1][1]
    assert "needs the 'episode' argument" in results[2][1]
    assert "no running episode has this handle" in results[3][1]
    assert "1 episodes are open on this gym (its limit)" in results[5][1]
    assert all("\n" not in text for _, text in results)


def test_the_entry_point_ends_bad_input_with_one_line(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["no-such-gym"]) == 2
    assert main(["helpdesk", "--transport", "http", "--host", "0.0.0.0"]) == 2
    with socket.socket() as busy:
        busy.bind(("127.0.0.1", 0))
        busy.listen()
        assert main(["helpdesk", "--transport", "http", "--port", str(busy.getsockname()[1])]) == 2
    folder = write_pack(build_pack("helpdesk", seed=0), tmp_path / "pack")
    task_file = sorted((folder / "tasks").glob("*.json"))[0]
    task_file.write_text(task_file.read_text().replace('"split": "train"', '"split": "heldout"', 1)
                         .replace('"split": "heldout"', '"split": "train"', 1) + " ")
    assert main([str(folder)]) == 2
    lines = [line for line in capsys.readouterr().err.splitlines() if line]
    assert len(lines) == 4
    assert "'no-such-gym' is neither a pack folder nor an installed gym" in lines[0]
    assert "refusing to serve on 0.0.0.0 without a token" in lines[1]
    assert "is in use" in lines[2]
    assert f"pack {folder} refused" in lines[3]


def test_in_process_service_reuses_worlds_without_leaks(packs: dict[str, Pack]) -> None:
    pack = packs["helpdesk"]
    task = write_task(pack)
    calls = episode_calls(task)
    service = GymService(pack)
    first, _ = service.start(task.id, 1)
    for name, args in calls:
        service.call(first, name, dict(args))
    service.finish(first, task.gold.reply)
    again, _ = service.start(task.id, 1)
    results = [service.call(again, name, dict(args)).model_dump_json() for name, args in calls]
    outcome = service.finish(again, task.gold.reply)
    assert (results, outcome) == reference_outcome(pack, task, 1, calls, task.gold.reply)

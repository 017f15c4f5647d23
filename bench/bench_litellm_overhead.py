"""LiteLLMAgent overhead per turn against the local scripted model server.

Plays episodes of ``--turns`` model turns (tool calls, then a reply) through
litellm against ``ScriptedModelServer`` on 127.0.0.1, served from its own process
as a real local model server would be, and reports, per turn:

- overhead: wall time minus the server's own time (the figure held to the target);
- of which litellm + HTTP client: time inside ``litellm.completion`` minus the server's time;
- of which agent code: the rest (prompt building, parsing, bookkeeping), tool time excluded.

Target: overhead <= 2 ms per turn. Run: ``python bench/bench_litellm_overhead.py [--model hosted_vllm/scripted]``.
"""

from __future__ import annotations

import argparse
import multiprocessing
import os
import time
from multiprocessing.connection import Connection
from typing import Any

os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")

from arena.agents.litellm_agent import LiteLLMAgent, LiteLLMConfig  # noqa: E402
from arena.agents.scripted_server import Cue, ReplyCue, ScriptedModelServer, ToolCallCue  # noqa: E402
from arena.core.gym import Observation  # noqa: E402
from arena.core.results import ToolResult  # noqa: E402
from arena.core.toolkit import ToolSpec  # noqa: E402

TARGET_MS = 2.0
"""Most agent overhead per turn beyond the server's time, in milliseconds."""


def _observation(n_tools: int) -> Observation:
    tools = [
        ToolSpec(
            name=f"tool_{i}",
            description=f"Tool number {i}: fetch or update one record of kind {i}.",
            parameters={"type": "object", "properties": {"record_id": {"type": "string", "description": "Record id."},
                                                         "note": {"type": "string"}},
                        "required": ["record_id"]},
            mode="read",
        )
        for i in range(n_tools)
    ]
    policy = "\n".join(f"- Rule {i}: check the record before changing it and never share internal notes."
                       for i in range(30))
    return Observation(task={"task_id": "bench", "prompt": "Update record R-1 and confirm.",
                             "persona": {"name": "Ada", "role": "agent", "permissions": []}},
                       policy=policy, tools=tools, graph={})


def _script(turns: int) -> list[Cue]:
    calls: list[Cue] = [ToolCallCue(f"tool_{i % 8}", f'{{"record_id": "R-{i}"}}', prompt_tokens=900 + 60 * i,
                                    completion_tokens=20) for i in range(turns - 1)]
    return [*calls, ReplyCue("Record R-1 updated.", prompt_tokens=900 + 60 * turns, completion_tokens=8)]


def _serve(script: list[Cue], conn: Connection) -> None:
    """Run the scripted server in its own process: send its URL, then its busy time once told to stop."""
    with ScriptedModelServer(script) as server:
        conn.send(server.base_url)
        while conn.recv() == "time":
            conn.send(server.server_time_s)
        conn.send(server.server_time_s)


class _Tools:
    def __init__(self) -> None:
        self.seconds = 0.0

    def __call__(self, name: str, arguments: dict[str, Any] | str | None) -> ToolResult:
        started = time.perf_counter()
        result = ToolResult(ok=True, output={"record_id": "R-1", "status": "ok", "tool": name})
        self.seconds += time.perf_counter() - started
        return result


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--episodes", type=int, default=40, help="episodes to time (after one warm-up)")
    parser.add_argument("--turns", type=int, default=10, help="model turns per episode")
    parser.add_argument("--model", default="openai/scripted",
                        help="litellm model string, e.g. openai/scripted or hosted_vllm/scripted")
    args = parser.parse_args()
    observation = _observation(8)
    parent, child = multiprocessing.get_context("spawn").Pipe()
    process = multiprocessing.get_context("spawn").Process(
        target=_serve, args=(_script(args.turns) * (args.episodes + 1), child), daemon=True)
    process.start()
    base_url = parent.recv()
    config = LiteLLMConfig(model=args.model, api_base=base_url + "/v1", api_key="bench", timeout_s=10.0,
                           max_steps=args.turns, input_cost_per_token=1e-7, output_cost_per_token=4e-7)
    agent = LiteLLMAgent(config)
    agent.run_episode(observation, _Tools(), seed=0)
    parent.send("time")
    server_before = parent.recv()
    tools = _Tools()
    latency = 0.0
    turns = 0
    started = time.perf_counter()
    for episode in range(args.episodes):
        run = agent.run_episode(observation, tools, seed=episode)
        latency += run.latency_s
        turns += run.turns
    wall = time.perf_counter() - started
    parent.send("stop")
    server_time = parent.recv() - server_before
    process.join(timeout=10)
    per_turn = 1e3 / turns
    overhead = (wall - tools.seconds - server_time) * per_turn
    client = (latency - server_time) * per_turn
    agent_code = (wall - tools.seconds - latency) * per_turn
    print(f"model route:                 {args.model}")
    print(f"turns timed:                 {turns} ({args.episodes} episodes x {args.turns} turns)")
    print(f"wall per turn:               {(wall - tools.seconds) * per_turn:.3f} ms")
    print(f"server time per turn:        {server_time * per_turn:.3f} ms")
    print(f"overhead per turn:           {overhead:.3f} ms  (target <= {TARGET_MS:g} ms)")
    print(f"  litellm + HTTP client:     {client:.3f} ms")
    print(f"  agent code:                {agent_code:.3f} ms")
    verdict = "meets" if overhead <= TARGET_MS else "misses"
    print(f"ratio overhead / target:     {overhead / TARGET_MS:.2f}  ({verdict})")
    print(f"ratio agent code / target:   {agent_code / TARGET_MS:.3f}")


if __name__ == "__main__":
    main()

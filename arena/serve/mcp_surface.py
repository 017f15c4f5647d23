"""A gym as an MCP server: the pack's tools (schemas, permissions) plus three episode tools.

``list_tasks`` names the tasks; ``start_episode(task_id, seed)`` starts an episode on a fresh world and
returns its handle and observation; every gym tool takes that handle as its ``episode`` argument and runs
through the gym's own dispatch; ``end_episode(episode, reply)`` ends the episode, and only then does the
verdict (reward, per-check results, side effects) leave the server, with the trace. The episode handle
travels as an argument, so an episode works the same on every transport and protocol era (the
2026 MCP protocol has no connection sessions). Nothing served holds the gold program or the assertions,
and no tool takes a reward.
"""

from __future__ import annotations

import json
from typing import Any

import mcp_types as types
from mcp.server.context import ServerRequestContext
from mcp.server.lowlevel import Server

from arena.core.toolkit import ToolSpec
from arena.serve.session import GymService, ServeError

LIST_TASKS = "list_tasks"
START_EPISODE = "start_episode"
END_EPISODE = "end_episode"
EPISODE_ARG = "episode"
EPISODE_TOOLS = (LIST_TASKS, START_EPISODE, END_EPISODE)
"""Tools every served gym adds to its pack's tools."""

RESERVED_NAMES = frozenset({*EPISODE_TOOLS, "reset", "step", "state", "close"})
"""Names a pack's tool may not take when served (episode tools and OpenEnv's reserved names)."""

_INSTRUCTIONS = (
    "A gymloop gym. Call list_tasks, then start_episode(task_id, seed) to get an episode handle and the "
    "task; pass that handle as 'episode' to every tool; finish with end_episode(episode, reply) to get the "
    "verdict. Each episode runs on its own fresh world."
)


def check_servable(service: GymService) -> None:
    """Refuse a pack whose tool names collide with the served surface's own names.

    Raises:
        ServeError: A tool of the pack uses a reserved name.
    """
    clash = sorted(s.name for s in service.pack.tools if s.name in RESERVED_NAMES)
    if clash:
        raise ServeError(f"pack {service.pack.id[:12]} has tools named {', '.join(clash)}, which a served gym "
                         f"reserves ({', '.join(sorted(RESERVED_NAMES))})")


def _episode_property() -> dict[str, Any]:
    return {"type": "string", "description": "The episode handle start_episode returned."}


def gym_tool(spec: ToolSpec) -> types.Tool:
    """The MCP form of one of the pack's tools: its schema plus the ``episode`` argument."""
    schema = json.loads(json.dumps(spec.parameters))
    schema.setdefault("type", "object")
    schema["properties"] = {**schema.get("properties", {}), EPISODE_ARG: _episode_property()}
    schema["required"] = [*schema.get("required", []), EPISODE_ARG]
    needs = f" Needs permission {spec.permission!r}." if spec.permission else ""
    return types.Tool(
        name=spec.name,
        description=spec.description + needs,
        input_schema=schema,
        annotations=types.ToolAnnotations(
            read_only_hint=spec.mode == "read", destructive_hint=spec.irreversible, open_world_hint=False
        ),
        meta={"gymloop/mode": spec.mode, "gymloop/permission": spec.permission, "gymloop/irreversible":
              spec.irreversible, "gymloop/operation": spec.operation, "gymloop/entity": spec.entity},
    )


def episode_tools(service: GymService) -> list[types.Tool]:
    """The three episode tools of a served gym."""
    task_ids = [t.id for t in service.pack.tasks]
    return [
        types.Tool(
            name=LIST_TASKS, description="List the tasks of this gym (id, split, category, prompt).",
            input_schema={"type": "object", "properties": {}, "additionalProperties": False},
            annotations=types.ToolAnnotations(read_only_hint=True, open_world_hint=False),
        ),
        types.Tool(
            name=START_EPISODE,
            description="Start an episode of a task on a fresh world; returns the episode handle and the task's "
                        "observation (prompt, persona, intent, policy, tools, dependency graph).",
            input_schema={
                "type": "object",
                "properties": {"task_id": {"type": "string", "enum": task_ids},
                               "seed": {"type": "integer", "default": 0}},
                "required": ["task_id"], "additionalProperties": False,
            },
        ),
        types.Tool(
            name=END_EPISODE,
            description="End the episode with your reply to the user; returns the verdict and the trace.",
            input_schema={
                "type": "object",
                "properties": {EPISODE_ARG: _episode_property(), "reply": {"type": "string"}},
                "required": [EPISODE_ARG, "reply"], "additionalProperties": False,
            },
        ),
    ]


def _result(text: str, structured: Any, *, error: bool) -> types.CallToolResult:
    return types.CallToolResult(
        content=[types.TextContent(type="text", text=text)],
        structured_content=structured if isinstance(structured, dict) else {"result": structured},
        is_error=error,
    )


def _refusal(message: str) -> types.CallToolResult:
    return _result(message, {"error": message}, error=True)


class McpGym:
    """The request handlers of a served gym (one per :class:`GymService`)."""

    def __init__(self, service: GymService) -> None:
        check_servable(service)
        self.service = service
        self.tools = [*episode_tools(service), *(gym_tool(s) for s in service.pack.tools)]
        self._gym_tools = {s.name for s in service.pack.tools}

    async def list_tools(
        self, ctx: ServerRequestContext[Any], params: types.PaginatedRequestParams | None
    ) -> types.ListToolsResult:
        """Every tool the gym serves."""
        return types.ListToolsResult(tools=self.tools)

    async def call_tool(
        self, ctx: ServerRequestContext[Any], params: types.CallToolRequestParams
    ) -> types.CallToolResult:
        """Route one call: an episode tool, or a gym tool through the gym's own dispatch."""
        return self.call(params.name, dict(params.arguments or {}))

    def call(self, name: str, arguments: dict[str, Any]) -> types.CallToolResult:
        """Handle one tool call (transport-free, so every surface shares it)."""
        try:
            if name == LIST_TASKS:
                tasks = [t.model_dump() for t in self.service.tasks()]
                return _result(json.dumps(tasks), {"tasks": tasks}, error=False)
            if name == START_EPISODE:
                return self._start(arguments)
            if name == END_EPISODE:
                return self._end(arguments)
            handle = arguments.pop(EPISODE_ARG, None)
            if not isinstance(handle, str):
                if name not in self._gym_tools:
                    known = ", ".join(sorted([*EPISODE_TOOLS, *self._gym_tools]))
                    return _refusal(f"unknown tool {name!r}; tools: {known}")
                return _refusal(f"{name} needs the '{EPISODE_ARG}' argument: the handle start_episode returned")
            result = self.service.call(handle, name, arguments)
        except ServeError as exc:
            return _refusal(str(exc))
        return _result(result.model_dump_json(), result.model_dump(mode="json"), error=not result.ok)

    def _start(self, arguments: dict[str, Any]) -> types.CallToolResult:
        task_id, seed = arguments.get("task_id"), arguments.get("seed", 0)
        if not isinstance(task_id, str):
            return _refusal("start_episode needs 'task_id' (a string; list_tasks names them)")
        if not isinstance(seed, int) or isinstance(seed, bool):
            return _refusal(f"start_episode: seed must be an integer, got {seed!r}")
        handle, observation = self.service.start(task_id, seed)
        payload = {EPISODE_ARG: handle, "observation": observation.model_dump(mode="json")}
        return _result(json.dumps(payload), payload, error=False)

    def _end(self, arguments: dict[str, Any]) -> types.CallToolResult:
        handle, reply = arguments.get(EPISODE_ARG), arguments.get("reply")
        extra = sorted(set(arguments) - {EPISODE_ARG, "reply"})
        if extra:
            return _refusal(f"end_episode takes only '{EPISODE_ARG}' and 'reply'; unexpected: {', '.join(extra)}")
        if not isinstance(handle, str) or not isinstance(reply, str):
            return _refusal(f"end_episode needs '{EPISODE_ARG}' (the episode handle) and 'reply' (a string)")
        outcome = self.service.finish(handle, reply)
        return _result(outcome.model_dump_json(), outcome.model_dump(mode="json"), error=False)


def build_mcp_server(service: GymService, handlers: McpGym | None = None) -> Server[Any]:
    """An MCP server (the SDK's low-level ``Server``) serving ``service``'s gym.

    Raises:
        ServeError: The pack cannot be served (a tool name collides with a reserved one).
    """
    handlers = handlers or McpGym(service)
    return Server(
        service.name,
        version="1",
        instructions=_INSTRUCTIONS,
        on_list_tools=handlers.list_tools,
        on_call_tool=handlers.call_tool,
    )

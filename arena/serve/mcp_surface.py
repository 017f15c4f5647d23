"""A gym as an MCP server: the pack's tools (schemas, permissions) plus three episode tools.

``list_tasks`` names the tasks a client may start (the train split; an operator also gets the held-out tasks);
``start_episode(task_id, seed)`` starts an episode on a fresh world and
returns its handle and observation (prompt, persona, policy, tools, dependency graph); every gym tool takes
that handle as its ``episode`` argument and runs through the gym's own dispatch; ``end_episode(episode,
reply)`` ends the episode, and only then does the verdict leave the server: the score, passed, and per-check
pass/fail by kind. The judged details (each check's result and detail, the changed rows, the trace) are added
only for a caller whose request carries the operator token in ``_meta["gymloop/operator"]``; a held-out task is
listed and started only for such a caller. Nothing served
holds the task's intent, gold program or assertions, and no tool takes a reward.

An episode belongs to the MCP session that started it: over stdio the process is the session; over streamable
HTTP the server advertises only handshake protocol versions, so SDK clients open a session (``Mcp-Session-Id``)
and a sessionless request is refused every episode tool. Handlers run the gym (tool calls, verification) on
worker threads, never on the event loop.
"""

from __future__ import annotations

import json
from typing import Any

import anyio
import mcp_types as types
from mcp.server.context import ServerRequestContext
from mcp.server.lowlevel import Server
from mcp_types.version import HANDSHAKE_PROTOCOL_VERSIONS

from arena.core.toolkit import ToolSpec
from arena.serve.session import LOCAL_CLIENT, GymService, ServeError

LIST_TASKS = "list_tasks"
START_EPISODE = "start_episode"
END_EPISODE = "end_episode"
EPISODE_ARG = "episode"
EPISODE_TOOLS = (LIST_TASKS, START_EPISODE, END_EPISODE)
"""Tools every served gym adds to its pack's tools."""

OPERATOR_META = "gymloop/operator"
"""The ``_meta`` key (MCP) or action ``metadata`` key (OpenEnv) under which an operator sends its token."""

SESSION_HEADER = "mcp-session-id"
_WORKER_THREADS = 32

RESERVED_NAMES = frozenset({*EPISODE_TOOLS, "reset", "step", "state", "close"})
"""Names a pack's tool may not take when served (episode tools and OpenEnv's reserved names)."""

_INSTRUCTIONS = (
    "A gymloop gym. Call list_tasks, then start_episode(task_id, seed) to get an episode handle and the "
    "task; pass that handle as 'episode' to every tool; finish with end_episode(episode, reply) to get the "
    "verdict (score, passed, per-check pass/fail by kind). Each episode runs on its own fresh world."
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
    task_ids = service.served_task_ids()
    return [
        types.Tool(
            name=LIST_TASKS, description="List the tasks this client may start (id, split, category, prompt).",
            input_schema={"type": "object", "properties": {}, "additionalProperties": False},
            annotations=types.ToolAnnotations(read_only_hint=True, open_world_hint=False),
        ),
        types.Tool(
            name=START_EPISODE,
            description="Start an episode of a task on a fresh world; returns the episode handle and the "
                        "observation (task_id, prompt, persona, policy, tools, graph).",
            input_schema={
                "type": "object",
                "properties": {"task_id": {"type": "string", "enum": task_ids},
                               "seed": {"type": "integer", "default": 0}},
                "required": ["task_id"], "additionalProperties": False,
            },
        ),
        types.Tool(
            name=END_EPISODE,
            description="End the episode with your reply to the user; returns the verdict: score (fraction of "
                        "checks held), passed, and per-check pass/fail by kind.",
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


def client_of(ctx: ServerRequestContext[Any]) -> str | None:
    """The client an MCP request comes from: its session, or ``None`` for a sessionless HTTP request.

    In process and over stdio there is one client (the process); over streamable HTTP the client is the MCP
    session the SDK's session manager admitted (its ``Mcp-Session-Id``).
    """
    request = ctx.request
    if request is None:
        return LOCAL_CLIENT
    headers = getattr(request, "headers", None)
    session = headers.get(SESSION_HEADER) if headers is not None else None
    return f"mcp:{session}" if session else None


class McpGym:
    """The request handlers of a served gym (one per :class:`GymService`)."""

    def __init__(self, service: GymService) -> None:
        check_servable(service)
        self.service = service
        self.tools = [*episode_tools(service), *(gym_tool(s) for s in service.pack.tools)]
        self._gym_tools = {s.name for s in service.pack.tools}
        self._limiter = anyio.CapacityLimiter(_WORKER_THREADS)

    async def list_tools(
        self, ctx: ServerRequestContext[Any], params: types.PaginatedRequestParams | None
    ) -> types.ListToolsResult:
        """Every tool the gym serves."""
        return types.ListToolsResult(tools=self.tools)

    async def call_tool(
        self, ctx: ServerRequestContext[Any], params: types.CallToolRequestParams
    ) -> types.CallToolResult:
        """Route one call on a worker thread: an episode tool, or a gym tool through the gym's own dispatch."""
        meta = dict(params.meta or {})
        operator = self.service.is_operator(meta.get(OPERATOR_META))
        client = client_of(ctx)
        arguments = dict(params.arguments or {})
        return await anyio.to_thread.run_sync(
            lambda: self.call(params.name, arguments, client=client, operator=operator), limiter=self._limiter)

    def call(self, name: str, arguments: dict[str, Any], *, client: str | None = LOCAL_CLIENT,
             operator: bool = False) -> types.CallToolResult:
        """Handle one tool call of ``client`` (transport-free, so every surface shares it).

        Args:
            name: The tool.
            arguments: Its arguments (gym tools and ``end_episode`` carry the episode handle).
            client: Who calls; ``None`` for a sessionless request, which may only list the tasks.
            operator: Whether the caller presented the operator token (held-out tasks are then listed and started,
                and ``end_episode`` adds the details).
        """
        try:
            if name == LIST_TASKS:
                tasks = [t.model_dump() for t in self.service.tasks(operator=operator)]
                return _result(json.dumps(tasks), {"tasks": tasks}, error=False)
            if client is None:
                return _refusal("episodes belong to an MCP session and this request has none: connect with the "
                                "initialize handshake (the MCP SDK's Client does by default) and keep the session")
            if name == START_EPISODE:
                return self._start(arguments, client, operator)
            if name == END_EPISODE:
                return self._end(arguments, client, operator)
            handle = arguments.pop(EPISODE_ARG, None)
            if not isinstance(handle, str):
                if name not in self._gym_tools:
                    known = ", ".join(sorted([*EPISODE_TOOLS, *self._gym_tools]))
                    return _refusal(f"unknown tool {name!r}; tools: {known}")
                return _refusal(f"{name} needs the '{EPISODE_ARG}' argument: the handle start_episode returned")
            result = self.service.call(handle, name, arguments, client=client)
        except ServeError as exc:
            return _refusal(str(exc))
        return _result(result.model_dump_json(), result.model_dump(mode="json"), error=not result.ok)

    def _start(self, arguments: dict[str, Any], client: str, operator: bool) -> types.CallToolResult:
        task_id, seed = arguments.get("task_id"), arguments.get("seed", 0)
        if not isinstance(task_id, str):
            return _refusal("start_episode needs 'task_id' (a string; list_tasks names them)")
        if not isinstance(seed, int) or isinstance(seed, bool):
            return _refusal(f"start_episode: seed must be an integer, got {type(seed).__name__}")
        handle, observation = self.service.start(task_id, seed, client=client, operator=operator)
        payload = {EPISODE_ARG: handle, "observation": observation.model_dump(mode="json")}
        return _result(json.dumps(payload), payload, error=False)

    def _end(self, arguments: dict[str, Any], client: str, operator: bool) -> types.CallToolResult:
        handle, reply = arguments.get(EPISODE_ARG), arguments.get("reply")
        extra = sorted(set(arguments) - {EPISODE_ARG, "reply"})
        if extra:
            return _refusal(f"end_episode takes only '{EPISODE_ARG}' and 'reply'; unexpected: {', '.join(extra)}")
        if not isinstance(handle, str) or not isinstance(reply, str):
            return _refusal(f"end_episode needs '{EPISODE_ARG}' (the episode handle) and 'reply' (a string)")
        outcome = self.service.finish(handle, reply, client=client)
        served = outcome.served()
        payload = served.model_dump(mode="json")
        if not operator:
            return _result(served.model_dump_json(), payload, error=False)
        payload["operator"] = outcome.model_dump(mode="json")
        return _result(json.dumps(payload, separators=(",", ":"), ensure_ascii=False), payload, error=False)


def build_mcp_server(service: GymService, handlers: McpGym | None = None, *, sessions: bool = False) -> Server[Any]:
    """An MCP server (the SDK's low-level ``Server``) serving ``service``'s gym.

    Args:
        service: The served gym.
        handlers: Its request handlers (shared with the OpenEnv surface), made here if not given.
        sessions: Advertise only the handshake protocol versions, so that streamable-HTTP clients open a session
            (over stdio the process is the session, and a stdio connection that answered ``server/discover``
            stays on the sessionless protocol).

    Raises:
        ServeError: The pack cannot be served (a tool name collides with a reserved one).
    """
    handlers = handlers or McpGym(service)
    server: Server[Any] = Server(
        service.name,
        version="1",
        instructions=_INSTRUCTIONS,
        on_list_tools=handlers.list_tools,
        on_call_tool=handlers.call_tool,
    )

    async def discover(ctx: ServerRequestContext[Any], params: types.RequestParams) -> types.DiscoverResult:
        # Handshake versions only: SDK clients fall back to the initialize handshake and open a session.
        return types.DiscoverResult(supported_versions=list(HANDSHAKE_PROTOCOL_VERSIONS),
                                    capabilities=server.get_capabilities(protocol_version=ctx.protocol_version),
                                    instructions=_INSTRUCTIONS)

    if sessions:
        server.add_request_handler("server/discover", types.RequestParams, discover)
    return server

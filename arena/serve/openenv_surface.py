"""A gym as an OpenEnv environment (openenv-core 0.3): reset / step / state with the MCP tool surface inside.

``reset(seed=..., task_id=...)`` starts an episode of a train task on a fresh world (a held-out task only with
``operator=`` the operator token) and returns the served observation
(``task_id``, ``prompt``, ``persona``, ``policy``, ``tools``, ``graph``); ``step`` takes OpenEnv's MCP actions:
``ListToolsAction`` lists the pack's tools plus ``end_episode``, ``CallToolAction`` runs one through the
served gym's MCP handlers (the WebSocket session is the client and holds the episode handle, which it never
shows). ``CallToolAction("end_episode", {"reply": ...})`` ends the episode: the observation is ``done`` with
``reward`` = the score (fraction of checks held), and its result is the served verdict (score, passed,
per-check pass/fail by kind); an action whose ``metadata["gymloop/operator"]`` holds the operator token also
gets the judged details. ``state`` never holds verdict data. OpenEnv's direct-MCP routes (``/mcp``) are not
served: episodes run over ``/ws``. Idle WebSocket sessions are closed after the service's idle timeout.
"""

from __future__ import annotations

import secrets
from typing import Any

from openenv.core.env_server.http_server import create_fastapi_app
from openenv.core.env_server.interfaces import Environment
from openenv.core.env_server.mcp_types import (
    CallToolAction,
    CallToolObservation,
    ListToolsAction,
    ListToolsObservation,
    Tool,
    ToolError,
    ToolErrorType,
)
from openenv.core.env_server.types import Action, ConcurrencyConfig, Observation, State
from pydantic import Field

from arena.serve.mcp_surface import END_EPISODE, EPISODE_ARG, OPERATOR_META, START_EPISODE, McpGym
from arena.serve.session import GymService, ServeError, ServeLimits


class GymObservation(Observation):  # type: ignore[misc]
    """The start of an episode, as the agent sees it: what a human operator of the software would see.

    Attributes:
        task_id: The task's id.
        prompt: The request, as the requester wrote it.
        persona: Who the agent acts as (name, role, permissions).
        policy: The business rules.
        tools: Tool specs (the pack's tools; ``end_episode`` ends the episode).
        graph: Weighted tool dependency graph (the software's workflows, the same for every task).
    """

    task_id: str = ""
    prompt: str = ""
    persona: dict[str, Any] = Field(default_factory=dict)
    policy: str = ""
    tools: list[dict[str, Any]] = Field(default_factory=list)
    graph: dict[str, Any] = Field(default_factory=dict)


class GymState(State):  # type: ignore[misc]
    """Where the session's episode stands (no verdict data).

    Attributes:
        task_id: The running task, if any.
        seed: The episode seed.
        done: Whether the episode has ended.
    """

    task_id: str | None = None
    seed: int = 0
    done: bool = True


def _openenv_tool(tool: Any) -> Tool:
    schema = dict(tool.input_schema)
    properties = {k: v for k, v in schema.get("properties", {}).items() if k != EPISODE_ARG}
    required = [r for r in schema.get("required", []) if r != EPISODE_ARG]
    return Tool(name=tool.name, description=tool.description or "",
                input_schema={**schema, "properties": properties, "required": required})


class GymEnvironment(Environment[Action, Observation, GymState]):  # type: ignore[misc]
    """One OpenEnv session: one episode at a time of the served gym.

    Args:
        handlers: The served gym's MCP handlers (shared by every session of a server).
    """

    SUPPORTS_CONCURRENT_SESSIONS = True

    def __init__(self, handlers: McpGym) -> None:
        super().__init__()
        self._handlers = handlers
        self._service: GymService = handlers.service
        self._handle: str | None = None
        self._client = f"openenv:{secrets.token_hex(16)}"
        self._state = GymState()
        self._tools = [_openenv_tool(t) for t in handlers.tools if t.name != START_EPISODE]

    def reset(self, seed: int | None = None, episode_id: str | None = None, task_id: str | None = None,
              operator: str | None = None, **kwargs: Any) -> GymObservation:
        """Start an episode of ``task_id`` on a fresh world (an earlier unfinished one is dropped).

        Args:
            seed: The episode seed.
            episode_id: OpenEnv's episode id (one is made when not given).
            task_id: The task (a train task, or any task with the operator token).
            operator: The operator token, for a held-out task.
            **kwargs: Further reset arguments OpenEnv passes (ignored).

        Raises:
            ServeError: No or unknown task id, a held-out task without the operator token, or too many episodes.
        """
        self._abandon()
        if task_id is None:
            raise ServeError("reset needs task_id (the list_tasks tool names them)")
        self._handle, observation = self._service.start(task_id, seed or 0, client=self._client,
                                                        operator=self._service.is_operator(operator))
        self._state = GymState(episode_id=episode_id or secrets.token_hex(8), task_id=task_id, seed=seed or 0,
                               done=False)
        return GymObservation(**observation.model_dump(mode="json"))

    def step(self, action: Action, timeout_s: float | None = None, **kwargs: Any) -> Observation:
        """List the tools, or call one (``end_episode`` ends the episode with the reward)."""
        if isinstance(action, ListToolsAction):
            return ListToolsObservation(tools=self._tools)
        if not isinstance(action, CallToolAction):
            raise ServeError(f"unsupported action {type(action).__name__}: send list_tools or call_tool")
        name = action.tool_name
        if self._handle is None and name not in ("list_tasks",):
            return CallToolObservation(tool_name=name, error=ToolError(
                error_type=ToolErrorType.EXECUTION_ERROR, message="no running episode: call reset(task_id=...) first"))
        arguments = dict(action.arguments)
        if self._handle is not None:
            arguments[EPISODE_ARG] = self._handle
        if name == START_EPISODE:
            return CallToolObservation(tool_name=name, error=ToolError(
                error_type=ToolErrorType.TOOL_NOT_FOUND, message="episodes start with reset(task_id=...)"))
        operator = self._service.is_operator(action.metadata.get(OPERATOR_META))
        result = self._handlers.call(name, arguments, client=self._client, operator=operator)
        payload = result.structured_content or {}
        if result.is_error and "error" in payload and isinstance(payload["error"], str):
            return CallToolObservation(tool_name=name, error=ToolError(
                error_type=ToolErrorType.EXECUTION_ERROR, message=payload["error"]))
        self._state.step_count += 1
        if name == END_EPISODE:
            self._handle = None
            self._state.done = True
            return CallToolObservation(tool_name=name, result=payload, done=True, reward=payload["score"])
        return CallToolObservation(tool_name=name, result=payload)

    @property
    def state(self) -> GymState:
        """The session's episode state."""
        return self._state

    def close(self) -> None:
        """Drop an unfinished episode."""
        self._abandon()

    def _abandon(self) -> None:
        if self._handle is not None:
            self._service.abandon(self._handle, client=self._client)
            self._handle = None


def openenv_app(handlers: McpGym, limits: ServeLimits) -> Any:
    """The OpenEnv HTTP/WebSocket app (``/reset``, ``/step``, ``/state``, ``/ws``, ...) of a served gym.

    At most ``limits.max_episodes`` WebSocket sessions at once; one idle for ``limits.idle_timeout_s`` is closed.
    The app's lifespan (``app.router.lifespan_context``) runs that idle reaper: enter it when mounting the app.
    """
    config = ConcurrencyConfig(max_concurrent_envs=limits.max_episodes, session_timeout=limits.idle_timeout_s)
    app = create_fastapi_app(lambda: GymEnvironment(handlers), Action, GymObservation, concurrency_config=config)
    app.router.routes = [r for r in app.router.routes if getattr(r, "path", None) != "/mcp"]
    return app

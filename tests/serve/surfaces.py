"""Served gyms as a client sees them: one episode surface per protocol, keeping every text the client read."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

from mcp import Client, StdioServerParameters

from arena.serve.client import RemoteGym, http_client
from arena.serve.openenv_client import TokenEnvClient
from arena.serve.session import ServeError

ROOT = Path(__file__).resolve().parents[2]


class McpSurface:
    """An episode surface over MCP (any transport), recording every text served."""

    def __init__(self, client: Client) -> None:
        self.remote = RemoteGym(client, timeout_s=120)
        self.seen: list[str] = []
        self._handle = ""

    def __enter__(self) -> McpSurface:
        self.remote.__enter__()
        return self

    def __exit__(self, *exc: object) -> None:
        self.remote.close()

    def _raw(self, name: str, arguments: dict[str, Any]) -> dict[str, Any]:
        error, text = self.remote.raw(name, arguments)
        self.seen.append(text)
        if error and not text.startswith("{"):
            raise ServeError(text)
        payload: dict[str, Any] = json.loads(text)
        return payload

    def list_tasks(self) -> list[dict[str, Any]]:
        error, text = self.remote.raw("list_tasks", {})
        tasks: list[dict[str, Any]] = json.loads(text)
        return tasks

    def start(self, task_id: str, seed: int) -> dict[str, Any]:
        payload = self._raw("start_episode", {"task_id": task_id, "seed": seed})
        self._handle = payload["episode"]
        observation: dict[str, Any] = payload["observation"]
        return observation

    def call(self, name: str, arguments: dict[str, Any]) -> dict[str, Any]:
        return self._raw(name, {**arguments, "episode": self._handle})

    def end(self, reply: str) -> dict[str, Any]:
        return self._raw("end_episode", {"episode": self._handle, "reply": reply})


def stdio_surface(domain: str) -> McpSurface:
    params = StdioServerParameters(command=sys.executable, args=["-m", "arena.serve", domain], cwd=str(ROOT))
    return McpSurface(Client(params))


def http_surface(url: str) -> McpSurface:
    return McpSurface(http_client(url))


class OpenEnvSurface:
    """An episode surface over OpenEnv's WebSocket session, recording every observation served."""

    def __init__(self, url: str, token: str | None = None) -> None:
        self.env = TokenEnvClient(url, token=token).sync()
        self.seen: list[str] = []

    def __enter__(self) -> OpenEnvSurface:
        self.env.connect()
        return self

    def __exit__(self, *exc: object) -> None:
        self.env.close()

    def list_tasks(self) -> list[dict[str, Any]]:
        tasks: list[dict[str, Any]] = self._step("list_tasks", {})["tasks"]
        return tasks

    def start(self, task_id: str, seed: int) -> dict[str, Any]:
        try:
            result = self.env.reset(task_id=task_id, seed=seed)
        except RuntimeError as exc:  # OpenEnv's client raises a server error as RuntimeError
            raise ServeError(str(exc)) from exc
        observation: dict[str, Any] = result.observation
        self.seen.append(json.dumps(observation))
        return observation

    def _step(self, name: str, arguments: dict[str, Any]) -> dict[str, Any]:
        step = self.env.step({"type": "call_tool", "tool_name": name, "arguments": arguments})
        self.seen.append(json.dumps({"observation": step.observation, "reward": step.reward}))
        observation: dict[str, Any] = step.observation
        return observation["result"] or {"error": observation["error"]}

    def call(self, name: str, arguments: dict[str, Any]) -> dict[str, Any]:
        return self._step(name, arguments)

    def end(self, reply: str) -> dict[str, Any]:
        return self._step("end_episode", {"reply": reply})

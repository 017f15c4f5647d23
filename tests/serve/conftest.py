"""Served-gym fixtures: reference episodes played in-process, and live HTTP servers on loopback."""

from __future__ import annotations

import socket
import threading
import time
from collections.abc import Iterator
from typing import Any

import httpx
import pytest
import uvicorn
from pydantic import SecretStr

from arena.core.domains import BUILTIN_DOMAINS
from arena.core.gym import Gym
from arena.core.pack import Pack, build_pack
from arena.core.task import Task
from arena.serve import EpisodeOutcome, GymService, http_app, outcome_of
from arena.serve.http_guard import MAX_REQUEST_BYTES
from bench._dockerd import ThrowawayDockerd

Call = tuple[str, dict[str, Any]]


def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


def write_task(pack: Pack) -> Task:
    """A train task whose gold program writes (so shared worlds would show); agents are served the train split."""
    specs = {s.name: s for s in pack.tools}
    return next(t for t in pack.tasks
                if t.split == "train" and any(specs[s.tool].mode == "write" for s in t.gold.steps))


def train_task(pack: Pack) -> Task:
    """The pack's first train task (a client without the operator token starts only those)."""
    return next(t for t in pack.tasks if t.split == "train")


def episode_calls(task: Task) -> list[Call]:
    """The gold program with bad calls in front: wrong arguments and an unknown tool."""
    first = task.gold.steps[0]
    bad: list[Call] = [(first.tool, {**first.arguments, "__unexpected__": 1}), ("no_such_tool", {"x": 1})]
    return bad + [(s.tool, dict(s.arguments)) for s in task.gold.steps]


def reference(pack: Pack, task: Task, seed: int, calls: list[Call], reply: str) -> tuple[list[str], str]:
    """The episode played in-process on a plain gym: each call's result JSON and the served verdict's JSON."""
    results, outcome = reference_outcome(pack, task, seed, calls, reply)
    return results, outcome.served().model_dump_json()


def reference_outcome(pack: Pack, task: Task, seed: int, calls: list[Call], reply: str
                      ) -> tuple[list[str], EpisodeOutcome]:
    """The episode played in-process on a plain gym: each call's result JSON and the judged outcome."""
    with Gym.from_pack(pack) as gym:
        gym.reset(task.id, seed=seed)
        results = [gym.call_tool(name, dict(args)).model_dump_json() for name, args in calls]
        verdict = gym.verify(reply)
        return results, outcome_of(gym, seed, reply, verdict)


@pytest.fixture(scope="session")
def packs() -> dict[str, Pack]:
    return {d: build_pack(d, seed=0) for d in BUILTIN_DOMAINS}


class LiveServer:
    """A served gym's HTTP app under uvicorn on a loopback port, in a thread."""

    def __init__(self, service: GymService, token: SecretStr | None = None, openenv: bool = False) -> None:
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        config = uvicorn.Config(http_app(service, token, openenv=openenv), host="127.0.0.1", port=self.port,
                                log_level="warning", access_log=False, ws_max_size=MAX_REQUEST_BYTES)
        self.server = uvicorn.Server(config)
        self.thread = threading.Thread(target=self.server.run, daemon=True)

    def __enter__(self) -> LiveServer:
        self.thread.start()
        deadline = time.monotonic() + 60
        while not self.server.started:
            if time.monotonic() > deadline or not self.thread.is_alive():
                raise RuntimeError("served gym did not start")
            time.sleep(0.05)
        return self

    def __exit__(self, *exc: object) -> None:
        self.server.should_exit = True
        self.thread.join(timeout=30)


@pytest.fixture(scope="session")
def live_servers(packs: dict[str, Pack]) -> Iterator[dict[str, LiveServer]]:
    servers = {d: LiveServer(GymService(p)) for d, p in packs.items()}
    for server in servers.values():
        server.__enter__()
    for server in servers.values():
        assert httpx.get(server.url + "/health", timeout=10).json()["status"] == "ok"
    yield servers
    for server in servers.values():
        server.__exit__()


@pytest.fixture(scope="session")
def docker_host() -> Iterator[str]:
    try:
        daemon = ThrowawayDockerd()
        daemon.start()
    except (RuntimeError, OSError) as exc:
        pytest.skip(f"no throwaway Docker daemon: {exc}")
    try:
        yield daemon.socket
    finally:
        daemon.stop()


@pytest.fixture(scope="session")
def gym_image(docker_host: str) -> str:
    from arena.serve.docker_image import build_gym_image, docker_client, import_host_python

    client = docker_client(docker_host)
    base = import_host_python(client)
    return build_gym_image(client, "helpdesk", base=base, tag="gymloop-gym-test:latest")


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """Keep every test of the throwaway Docker daemon on one xdist worker (one daemon per machine)."""
    for item in items:
        if "docker_host" in getattr(item, "fixturenames", ()):
            item.add_marker(pytest.mark.xdist_group("docker"))

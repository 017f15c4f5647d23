"""Gyms in Docker containers: the same episode as in-process, and clear refusals for bad setups."""

from __future__ import annotations

from arena.gyms import BUILTIN_DOMAINS
from arena.pack import Pack
from arena.serve.client import http_client
from arena.serve.docker_container import GymContainer
from arena.serve.docker_image import docker_client
from tests.serve.test_serve_mcp import check_same


def test_a_container_serves_every_gym_like_the_in_process_gym(
    docker_host: str, gym_image: str, packs: dict[str, Pack]
) -> None:
    client = docker_client(docker_host)
    for domain in BUILTIN_DOMAINS:
        with GymContainer(client, gym_image, target=domain) as container:
            check_same(packs[domain], lambda c=container: http_client(c.mcp_url))
    assert client.containers.list(all=True, filters={"label": "org.gymloop"}) == []

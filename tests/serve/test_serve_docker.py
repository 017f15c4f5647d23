"""Gyms in Docker containers: the same episode as in-process, and clear refusals for bad setups.

The first test builds the session's images (a base from this machine's Python, then the gym image) on a
throwaway daemon with vfs storage: minutes on a loaded 2-core machine, hence the longer time limit.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from arena.core.domains import BUILTIN_DOMAINS
from arena.core.pack import Pack
from arena.serve.client import http_client
from arena.serve.docker_container import GymContainer
from arena.serve.docker_image import docker_client
from tests.serve.test_serve_mcp import check_same

pytestmark = pytest.mark.timeout(900)


def test_a_container_serves_every_gym_like_the_in_process_gym(
    docker_host: str, gym_image: str, packs: dict[str, Pack]
) -> None:
    client = docker_client(docker_host)
    for domain in BUILTIN_DOMAINS:
        with GymContainer(client, gym_image, target=domain) as container:
            check_same(packs[domain], lambda c=container: http_client(c.mcp_url))
    assert client.containers.list(all=True, filters={"label": "org.gymloop"}) == []


@pytest.fixture()
def own_tempdir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """This test's own temporary folder: containers of tests running beside it keep their packs elsewhere."""
    import tempfile

    folder = tmp_path / "temp"
    folder.mkdir()
    monkeypatch.setattr(tempfile, "tempdir", str(folder))
    return folder


def _leftovers(folder: Path) -> list[str]:
    return [str(p) for p in folder.glob("gymloop-run-pack-*")]


def test_docker_backend_records_the_same_episodes_as_in_process(
    docker_host: str, gym_image: str, tmp_path: Path, own_tempdir: Path
) -> None:
    import threading

    from arena.agents.reference import PolicyParams, ReferencePolicy
    from arena.core.episode import EpisodeRecord
    from arena.core.pack import build_pack, read_pack, write_pack
    from arena.rollout import RolloutConfig, RolloutStopped, plan_episodes, run_episodes
    from arena.serve.docker_backend import run_episodes_in_docker

    # As rounds do: the pack as the pack store holds it (files on disk, keys in canonical order).
    pack = read_pack(write_pack(build_pack("procurement", seed=0), tmp_path / "pack"))
    keys = plan_episodes([pack], RolloutConfig(seeds=[0, 1]))[:9]
    agent = ReferencePolicy(PolicyParams.initial())
    local = run_episodes(agent, [pack], keys[:6])
    stop, seen = threading.Event(), []

    def stop_after_six(record: EpisodeRecord) -> None:  # as a SIGTERM sets the batch's stop event
        seen.append(record)
        if len(seen) == 6:
            stop.set()

    with pytest.raises(RolloutStopped) as stopped:
        run_episodes_in_docker(agent, [pack], keys, image=gym_image, docker_host=docker_host,
                               on_episode=stop_after_six, stop=stop)
    remote = stopped.value.records
    assert len(seen) == 6, "the batch went on after it was stopped"
    assert [r.model_dump_json(include={"trace", "verdict", "reply", "failure"}) for r in remote] == \
        [r.model_dump_json(include={"trace", "verdict", "reply", "failure"}) for r in local]
    assert docker_client(docker_host).containers.list(all=True, filters={"label": "org.gymloop"}) == []
    assert _leftovers(own_tempdir) == []


def test_docker_refusals_are_one_line_and_leave_nothing_behind(docker_host: str, gym_image: str,
                                                               own_tempdir: Path) -> None:
    import socket

    from arena.agents.reference import PolicyParams, ReferencePolicy
    from arena.core.pack import build_pack
    from arena.rollout import RolloutConfig, plan_episodes
    from arena.serve.client import RemoteGym
    from arena.serve.docker_backend import play_remote_episode
    from arena.serve.session import ServeError

    client = docker_client(docker_host)
    with pytest.raises(ServeError, match="no Docker daemon answers at unix:///nonexistent.sock"):
        docker_client("unix:///nonexistent.sock")
    with pytest.raises(ServeError, match="image 'gymloop-no-such-image' is not on the Docker daemon"):
        GymContainer(client, "gymloop-no-such-image", target="helpdesk").__enter__()
    with socket.socket() as busy:
        busy.bind(("127.0.0.1", 0))
        busy.listen()
        with pytest.raises(ServeError, match=f"port {busy.getsockname()[1]} on 127.0.0.1 is in use"):
            GymContainer(client, gym_image, target="helpdesk", port=busy.getsockname()[1]).__enter__()
    with pytest.raises(ServeError, match="exited before serving: gymloop: 'nope' is neither a pack folder"):
        GymContainer(client, gym_image, target="nope").__enter__()
    pack = build_pack("helpdesk", seed=0)
    key = plan_episodes([pack], RolloutConfig())[0]
    with GymContainer(client, gym_image, pack=pack) as container, \
            RemoteGym(http_client(container.mcp_url), timeout_s=20) as remote:
        container.container.kill()
        record = play_remote_episode(remote, pack, ReferencePolicy(PolicyParams.expert()), key)
    assert record.failure is not None and record.failure.boundary == "environment"
    assert client.containers.list(all=True, filters={"label": "org.gymloop"}) == []
    assert _leftovers(own_tempdir) == []

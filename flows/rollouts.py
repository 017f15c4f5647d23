"""A round's episodes: which ones each stage plays, and playing them in batches on a worker."""

from __future__ import annotations

import json
import os
from collections.abc import Sequence
from functools import cache
from pathlib import Path
from typing import TYPE_CHECKING, Any

from arena.core.episode import EpisodeRecord
from arena.core.pack import Pack
from arena.rollout import EpisodeKey, run_episodes
from flows import model_spec
from flows.campaign_config import round_settings
from flows.focus import in_focus
from flows.interrupt import batch_running
from flows.live import EpisodeSink, rollout_config
from flows.packs import load_pack
from flows.registered_models import make_agent
from flows.registry_access import open_registry
from flows.settings import CONFIG_ENV, GymloopSettings, load_settings
from registry import Registry

if TYPE_CHECKING:
    from curriculum import Wave

EVAL_BEFORE, TRAIN, EVAL_AFTER = "eval_before", "train", "eval_after"
"""Stages of a round's episodes in the registry."""


def heldout_keys(packs: Sequence[Pack], settings: GymloopSettings) -> list[EpisodeKey]:
    """The held-out suite's episodes: every held-out task in focus x eval seeds x eval_k attempts."""
    return [EpisodeKey(p.id, t.id, seed, attempt) for p in packs for t in p.tasks
            if t.split == "heldout" and in_focus(t.id, settings.gyms.tasks)
            for seed in settings.evaluation.eval_seeds for attempt in range(settings.evaluation.eval_k)]


def wave_keys(wave: Wave, round_index: int) -> list[EpisodeKey]:
    """A wave's training episodes: k attempts of each entry on a round-specific seed."""
    seed = 1000 + round_index
    return [EpisodeKey(e.pack_id, e.task_id, seed, attempt) for e in wave.entries for attempt in range(wave.k)]


def batches(keys: Sequence[EpisodeKey], size: int) -> list[list[EpisodeKey]]:
    """Split episodes into batches of at most ``size`` (one Prefect task each)."""
    return [list(keys[i:i + size]) for i in range(0, len(keys), size)]


@cache
def _worker_settings(overrides_json: str, sources: str) -> GymloopSettings:
    return load_settings(**json.loads(overrides_json))


def worker_settings(overrides: dict[str, Any]) -> GymloopSettings:
    """Settings of a rollout worker, loaded once per process for the same overrides, GYMLOOP_* and gymloop.toml."""
    config = Path(os.environ.get(CONFIG_ENV, "gymloop.toml")).resolve()
    stamp = config.stat().st_mtime_ns if config.is_file() else 0
    sources = json.dumps([sorted((k, v) for k, v in os.environ.items() if k.startswith("GYMLOOP_")), str(config),
                          stamp])
    return _worker_settings(json.dumps(overrides, sort_keys=True, default=str), sources)


def run_batch(round_id: int, stage: str, model_id: int, keys: list[EpisodeKey],
              local: dict[str, Any]) -> list[EpisodeRecord]:
    """Run one batch of episodes of one model not yet in the registry, record them as they finish, return them.

    The registry is found from this machine's settings (``local``, the flow's overrides of the machine's own
    settings, over gymloop.toml and GYMLOOP_*), never from a URL passed in: task parameters must not carry secrets.
    What the round plays is read from the registry by its id (``campaign_config.round_settings``).
    """
    machine = worker_settings(local)
    registry = open_registry(machine)
    settings = round_settings(registry, round_id, machine)
    done = {(d.pack_id, d.task_id, d.seed, d.attempt)
            for d in registry.finished_episode_keys(round_id, stage=stage, model_id=model_id)}
    todo = [k for k in keys if (k.pack_id, k.task_id, k.seed, k.attempt) not in done]
    if not todo:
        return []
    packs = [load_pack(registry, pid) for pid in sorted({k.pack_id for k in todo})]
    agent = make_agent(model_spec.local_model(registry.model(model_id), settings), settings, sampled=stage == TRAIN)
    config = rollout_config(settings, agent)
    with batch_running() as stop, EpisodeSink(registry, round_id, stage, model_id) as sink:
        if settings.runner.arena_backend == "docker":
            # The Docker SDK loads only for arena_backend = docker.
            from arena.serve.docker_backend import run_episodes_in_docker

            return run_episodes_in_docker(agent, packs, todo, config, image=settings.runner.docker_image,
                                          docker_host=settings.runner.docker_host, token=settings.serving.serve_token,
                                          on_episode=sink, stop=stop)
        return run_episodes(agent, packs, todo, config, on_episode=sink, stop=stop)


def copy_stage(registry: Registry, source_round: int, source_stage: str, round_id: int, stage: str,
               model_id: int, keys: Sequence[EpisodeKey]) -> int:
    """Reuse an earlier round's episodes of ``model_id`` on the same suite; return how many were copied."""
    wanted = {(k.pack_id, k.task_id, k.seed, k.attempt) for k in keys}
    records = [r for r in registry.round_episodes(source_round, stage=source_stage, model_id=model_id)
               if (r.pack_id, r.task_id, r.seed, r.attempt) in wanted]
    if len(records) < len(wanted):
        return 0
    return registry.record_episodes(round_id, records, stage=stage, model_id=model_id)

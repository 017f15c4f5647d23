"""A ``gymloop round`` SIGKILLed in each stage in turn and resumed each time ends as the same round run whole.

One round is killed in ``eval_before``, resumed and killed in ``generate``, resumed and killed in the training
rollouts, resumed and killed in ``eval_after``, then resumed to its end, on SQLite and on PostgreSQL. It must
hold the same episodes, packs, pool, wave, weaknesses, models and lift as the same round run without a stop
(same seed), never two models in one stage, and no resume may redo a stage that had finished.
"""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

import pytest

from registry import Registry
from tests.flows.gymloop_child import child_env, kill_group, run, start

SETTINGS = {"domains": ["procurement"], "eval_k": 1, "batch_size": 1, "workers": 1, "variants_per_round": 1,
            "tasks_per_variant": 4, "wave_budget": 30, "lease_wait_s": 0}
"""A small round whose stages last long enough to be caught: one episode per Prefect task."""

KILL_IN = ("eval_before", "generate", "train", "eval_after")

pytestmark = [pytest.mark.timeout(1500), pytest.mark.xdist_group("prefect-server")]


def _round(registry: Registry, campaign: str) -> Any:
    info = registry.find_campaign(campaign)
    rounds = registry.rounds(info.id) if info is not None else []
    return rounds[0] if rounds else None


def _in_stage(registry: Registry, campaign: str, stage: str, suite: int) -> bool:
    """Whether the round is part-way through ``stage`` (some of its work recorded, not all)."""
    found = _round(registry, campaign)
    if found is None:
        return False
    done = registry.stages(found.id)
    if stage == "generate":
        return "diagnose" in done and "generate" not in done
    before = {"train": "plan", "eval_after": "train_model"}.get(stage)
    if stage in done or (before is not None and before not in done):
        return False
    planned = suite
    if stage == "train":
        wave = registry.wave(found.id)
        planned = len(wave.entries) * 6 if wave is not None else 0
    recorded = sum(registry.stage_models(found.id, stage).values())
    return 0 < recorded < planned


def snapshot(registry: Registry, campaign: str) -> dict[str, Any]:
    """Everything a round leaves, by content (ids of rows differ between registries)."""
    found = _round(registry, campaign)
    assert found is not None and found.status == "finished"

    def model(model_id: int | None) -> tuple[str, str, str | None]:
        assert model_id is not None
        info = registry.model(model_id)
        return info.name, info.version, info.params_hash

    out: dict[str, Any] = {"model_in": model(found.model_in_id), "model_out": model(found.model_out_id),
                           "models": registry.status().counts["models"], "packs": sorted(p.id for p in
                                                                                         registry.list_packs())}
    for stage in ("eval_before", "train", "eval_after"):
        summaries = registry.episode_summaries(found.id, stage=stage)
        out[f"{stage}/models"] = sorted({model(s.model_id) for s in summaries})
        out[stage] = sorted((s.pack_id, s.task_id, s.seed, s.attempt, s.episode_id, s.passed, round(s.score, 9))
                            for s in summaries)
    out["pool"] = [(p.pack_id, p.role) for p in registry.pool(found.id)]
    wave = registry.wave(found.id)
    assert wave is not None
    out["wave"] = [(e.pack_id, e.task_id, round(e.weight, 9), e.reason) for e in wave.entries]
    out["weaknesses"] = [(w.kind, w.rank, round(w.score, 9), round(w.share, 9)) for w in registry.weaknesses(found.id)]
    summary = found.details["summary"]
    out["lift"] = {k: summary[k] for k in ("before", "after", "lift", "lift_low", "lift_high", "variants", "wave_size")}
    return out


@pytest.fixture(scope="module")
def uninterrupted(prefect_server, tmp_path_factory) -> dict[str, Any]:
    """The same round run without a stop, in a registry of its own."""
    root = tmp_path_factory.mktemp("uninterrupted")
    env = child_env(root / "home", SETTINGS, prefect_api=prefect_server.api, prefect_home=root / "prefect")
    done = run(["round", "--campaign", "k"], env, timeout_s=900)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    with Registry(None, root / "home") as registry:
        return snapshot(registry, "k")


def _kill_in(stage: str, env: dict[str, str], registry: Registry, suite: int, log: Path) -> None:
    child = start(["round", "--campaign", "k"], env, log)
    deadline = time.monotonic() + 600
    try:
        while time.monotonic() < deadline and child.poll() is None:
            if _in_stage(registry, "k", stage, suite):
                kill_group(child)
                return
            time.sleep(0.005)
    finally:
        if child.poll() is None:
            kill_group(child)
    pytest.fail(f"never caught the round in {stage} (exit {child.returncode}): {log.read_text()[-3000:]}")


@pytest.mark.parametrize("backend", [
    "sqlite", pytest.param("postgresql", marks=[pytest.mark.postgres, pytest.mark.slow])])
def test_a_round_killed_in_every_stage_resumes_to_the_uninterrupted_round(request, backend, uninterrupted,
                                                                          prefect_server, tmp_path):
    settings = dict(SETTINGS)
    if backend == "postgresql":
        settings["registry_url"] = request.getfixturevalue("pg_server").create_database()
    env = child_env(tmp_path / "home", settings, prefect_api=prefect_server.api, prefect_home=tmp_path / "prefect")
    registry = Registry(settings.get("registry_url"), tmp_path / "home")
    suite = len(uninterrupted["eval_before"])
    finished: dict[str, Any] = {}
    kept: dict[tuple[Any, ...], tuple[Any, ...]] = {}
    for n, stage in enumerate(KILL_IN):
        log = tmp_path / f"run-{n}.log"
        _kill_in(stage, env, registry, suite, log)
        found = _round(registry, "k")
        assert found is not None and found.status == "running", f"killed in {stage}: {found}"
        for name, info in registry.stages(found.id).items():
            assert finished.setdefault(name, info.finished_at) == info.finished_at, \
                f"the resume before the kill in {stage} redid the finished stage {name}"
        for s in ("eval_before", "train", "eval_after"):
            assert len(registry.stage_models(found.id, s)) <= 1, f"{s} holds two models after the kill in {stage}"
            for e in registry.episode_summaries(found.id, stage=s):
                key = (s, e.model_id, e.pack_id, e.task_id, e.seed, e.attempt)
                assert kept.setdefault(key, (e.episode_id, e.passed, e.score)) == (e.episode_id, e.passed, e.score)
        if n > 0:
            assert "took over the lease" in log.read_text(), "the resume waited for the killed holder's lease"
    last = tmp_path / "run-last.log"
    done = run(["round", "--campaign", "k"], env, timeout_s=900)
    last.write_text(done.stdout + done.stderr)
    assert done.returncode == 0, last.read_text()[-3000:]
    found = _round(registry, "k")
    assert found is not None
    assert all(registry.stages(found.id)[name].finished_at == at for name, at in finished.items())
    resumed = snapshot(registry, "k")
    assert all(len(resumed[f"{s}/models"]) == 1 for s in ("eval_before", "train", "eval_after"))
    differing = sorted(k for k in uninterrupted if uninterrupted[k] != resumed[k])
    assert not differing, f"the resumed round differs in {differing}"
    now = {(e.stage, e.model_id, e.pack_id, e.task_id, e.seed, e.attempt): (e.episode_id, e.passed, e.score)
           for e in registry.episode_summaries(found.id, stage=None)}
    assert all(now.get(key) == value for key, value in kept.items()), "an episode recorded before a kill changed"
    states = [(r.name, r.state_type.value) for r in prefect_server.flow_runs() if r.name.startswith("k-")]
    assert not [s for s in states if s[1] in ("RUNNING", "PENDING")], f"a killed run still shows running: {states}"
    assert [s for _, s in states].count("CRASHED") >= 2 * len(KILL_IN), states
    registry.close()

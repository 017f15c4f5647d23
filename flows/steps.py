"""The work of each round step, as plain functions; ``flows.stages`` runs them once per round, resumably.

Every step reads its inputs from the registry and writes its outputs there; the round's folder under the
gymloop home only receives artifacts (reports, plots) that nothing reads back.
"""

from __future__ import annotations

import json
import logging
import os
import random
import time
from collections import defaultdict
from collections.abc import Sequence
from functools import cache
from pathlib import Path
from typing import Any

from arena.agents.base import Agent
from arena.agents.reference import PolicyParams
from arena.core.domains import get_domain
from arena.core.episode import EpisodeRecord
from arena.core.metrics import Metrics, Outcome, compute_metrics, metrics_by, paired_lift
from arena.core.pack import Pack, build_pack
from arena.rollout import EpisodeKey, run_episodes
from curriculum import (
    CurriculumConfig,
    GroupResult,
    History,
    TaskRef,
    Wave,
    WaveEntry,
    coverage_ranked,
    plan_wave,
    task_refs,
)
from diagnosis import DiagnosisContext, WeaknessReport, detector_names, diagnose, get_detector
from factory_client import (
    FactoryResult,
    GateConfig,
    VariantRequest,
    make_factory_client,
    targetable,
    targets_from_report,
)
from flows import model_spec
from flows.focus import check_focus, in_focus
from flows.interrupt import batch_running
from flows.live import EpisodeSink, rollout_config
from flows.registry_access import open_registry
from flows.settings import CONFIG_ENV, GymloopSettings, load_settings
from registry import TARGETED_ARM, EpisodeSummary, ModelInfo, Registry, WaveInfo, WeaknessEntry
from registry import WaveEntry as RegistryWaveEntry
from trainers import Blame, GRPOConfig, GRPOTrainer, ModelRef, TRLTrainer, get_trainer

EVAL_BEFORE, TRAIN, EVAL_AFTER = "eval_before", "train", "eval_after"
"""Stages of a round's episodes in the registry."""
_log = logging.getLogger(__name__)



def arm_dir(settings: GymloopSettings, campaign: str, arm: str = TARGETED_ARM) -> Path:
    """Folder of an arm's artifacts: the campaign's folder for the targeted arm, ``<campaign>/<arm>`` for a control."""
    path = settings.store.home / "campaigns" / campaign
    return path if arm == TARGETED_ARM else path / arm


def round_dir(settings: GymloopSettings, campaign: str, index: int, arm: str = TARGETED_ARM) -> Path:
    """Folder of a round's artifacts (weakness report, wave manifest, plots), created on first use."""
    path = arm_dir(settings, campaign, arm) / f"round-{index:03d}"
    path.mkdir(parents=True, exist_ok=True)
    return path


def model_ref(info: ModelInfo) -> ModelRef:
    """The trainers' view of a registered model."""
    kind = info.kind if info.kind in ("reference", "litellm", "external", "transformers") else "external"
    return ModelRef(name=info.name, version=info.ref.version or 0, kind=kind, artifact=info.artifact,
                    endpoint=info.endpoint, params_hash=info.params_hash)


def register_ref(registry: Registry, ref: ModelRef, parent_id: int | None) -> ModelInfo:
    """Register a trainer's model reference (idempotent for the same name, version and content).

    A reference policy's parameters (a few KB) are kept with the model, so a machine without its file can play it.
    """
    details = ({"params": json.loads(Path(ref.artifact).read_text())}
               if ref.kind == "reference" and ref.artifact and Path(ref.artifact).is_file() else {})
    return registry.register_model(ref.name, ref.registry_version, kind=ref.kind, parent_id=parent_id,
                                   artifact=ref.artifact, endpoint=ref.endpoint, params_hash=ref.params_hash,
                                   details=details)


def initial_model(registry: Registry, settings: GymloopSettings) -> ModelInfo:
    """Register the campaign's starting model (any form of the ``model`` setting, see ``flows.model_spec``)."""
    return model_spec.register_start(registry, settings)


def make_agent(info: ModelInfo, settings: GymloopSettings, *, sampled: bool = False) -> Agent:
    """The agent playing a registered model.

    Args:
        info: The model.
        settings: The campaign's settings.
        sampled: The agent plays training rollouts (or the gate's baseline attempts): a local checkpoint samples
            with ``local_train_sampling``; otherwise it decodes with ``local_eval_sampling`` (greedy by default).
    """
    return model_spec.agent_for_model(info, settings, sampled=sampled)


@cache
def built_pack(domain: str, seed: int) -> Pack:
    """A gym's generated pack, built once per process (packs are deterministic in their domain and seed)."""
    return build_pack(domain, seed=seed)


_ADDED: set[tuple[str, str]] = set()
_LOADED: dict[tuple[str, str], Pack] = {}


def add_pack(registry: Registry, pack: Pack) -> None:
    """Add a pack to the registry (once per process and registry; adding is idempotent anyway)."""
    key = (registry.display_url, pack.id)
    if key not in _ADDED:
        registry.add_pack(pack)
        _ADDED.add(key)
        _LOADED[key] = pack


def load_pack(registry: Registry, pack_id: str) -> Pack:
    """A registered pack, validated on first load and then kept for the process (packs are content-addressed)."""
    key = (registry.display_url, pack_id)
    if key not in _LOADED:
        _LOADED[key] = registry.load_pack(pack_id)
    return _LOADED[key]


def base_packs(registry: Registry, settings: GymloopSettings) -> list[Pack]:
    """The campaign's base packs (seed 0 of each domain), added to the registry once.

    Raises:
        ValueError: A pattern of ``settings.gyms.tasks`` chooses no task of these packs (``flows.focus``).
    """
    packs = [built_pack(domain, 0) for domain in settings.gyms.domains]
    check_focus(packs, settings.gyms.tasks)
    for pack in packs:
        add_pack(registry, pack)
    return packs


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
              overrides: dict[str, Any]) -> list[EpisodeRecord]:
    """Run one batch of episodes of one model not yet in the registry, record them as they finish, return them.

    The registry is found from the settings (``overrides`` over gymloop.toml and GYMLOOP_*), never
    from a URL passed in: task parameters must not carry secrets.
    """
    settings = worker_settings(overrides)
    registry = open_registry(settings)
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


def diagnosis_context(packs: Sequence[Pack]) -> DiagnosisContext:
    """Tool specs, dependency graphs and tasks of the packs, for the detectors."""
    tools = [t for p in packs for t in p.tools]
    edges = [e for p in packs for e in p.graph.get("edges", p.graph.get("links", []))]
    nodes = [n for p in packs for n in p.graph.get("nodes", [])]
    graph = {"directed": True, "multigraph": False, "graph": {}, "nodes": nodes, "edges": edges}
    tasks = {(p.id, t.id): t for p in packs for t in p.tasks}
    return DiagnosisContext.build(tools=tools, graph=graph, tasks=tasks)


def diagnose_round(records: Sequence[EpisodeRecord], packs: Sequence[Pack], previous: WeaknessReport | None,
                   round_id: int, seed: int) -> WeaknessReport:
    """Diagnose a round's held-out episodes into ranked weaknesses."""
    return diagnose(records, diagnosis_context(packs), previous, seed, round_id=str(round_id))


def weakness_entries(report: WeaknessReport) -> list[WeaknessEntry]:
    """The registry's view of a weakness report."""
    return [
        WeaknessEntry(kind=w.kind, label=w.label, rank=w.rank, score=w.impact, share=min(1.0, max(0.0, w.share)),
                      interval_low=w.share_interval.low, interval_high=w.share_interval.high,
                      evidence={"examples": w.example_episode_ids, "knobs": w.knobs, "focus_tags": w.focus_tags,
                                "domains": w.domains, "tools": w.tools})
        for w in report.weaknesses
    ]


def variant_requests(settings: GymloopSettings, report: WeaknessReport, base: Sequence[Pack], round_index: int,
                     pool: Sequence[TaskRef], baseline: PolicyParams | None, key: str,
                     baseline_model: str = "reference") -> list[VariantRequest]:
    """The factory requests of a round: one per domain, aimed at the report's weaknesses.

    The weaknesses are ranked and weighted by practice value (``curriculum.coverage_ranked``: failures explained
    x (1 + how poorly the campaign's pool covers the grain)), so grains only a variant can practise get variants
    first. A ``uniform`` control arm asks for none; a ``random-variants`` control arm asks for untargeted ones.

    Args:
        settings: The campaign's settings (variants, tasks per variant, the gate, the seed).
        report: The round's weakness report.
        base: The gyms' base packs (one request per pack's domain).
        round_index: The round.
        pool: The tasks the campaign can schedule now.
        baseline: The reference-policy parameters the round starts from, given inline as the gate's baseline
            (``None`` for another kind of model).
        key: What identifies the campaign and its model in the requests' idempotency keys (two campaigns
            starting from the same model ask for different variants, so their keys must differ).
        baseline_model: The gate's baseline as the factory names it (``reference``, or a local checkpoint's
            registered name, ``<name>@v<step>:<hash>``, that the embedded factory plays sampled).
    """
    untargeted = settings.curriculum.arm == "random-variants"
    if settings.gate.variants_per_round == 0 or settings.curriculum.arm == "uniform" \
            or not (report.weaknesses or untargeted):
        return []
    report = coverage_ranked(report, pool, settings.curriculum.wave_budget // settings.curriculum.train_k)
    gate = GateConfig(k=settings.gate.gate_k, band_min=settings.gate.gate_band_min,
                      band_max=settings.gate.gate_band_max)
    # The gate's baseline is given inline: a request (and so the packs' provenance and ids) must not depend on
    # where the gymloop home happens to be.
    inline = baseline.model_dump(mode="json") if baseline is not None else None
    requests = []
    for pack in base:
        targets = [] if untargeted else targets_from_report(report, domain=pack.manifest.domain, top=5)
        targets, refused = targetable(targets, get_domain(pack.manifest.domain),
                                      {tag for t in pack.tasks for tag in t.tags})
        for reason in refused:
            _log.warning("round %d, gym %s: %s", round_index, pack.manifest.domain, reason)
        if not targets and not untargeted:
            continue
        requests.append(VariantRequest(
            domain=pack.manifest.domain, targets=targets, variants=settings.gate.variants_per_round,
            tasks_per_variant=settings.gate.tasks_per_variant, seed=settings.curriculum.seed * 1000 + round_index,
            parent_pack_id=pack.id, baseline_model=baseline_model, baseline_params=inline, gate=gate,
            idempotency_key=f"{pack.manifest.domain}-{round_index}-{key}"
                            + ("-untargeted" if untargeted else ""),
        ))
    return requests


def generate_variants(settings: GymloopSettings, report: WeaknessReport, base: Sequence[Pack],
                      model: ModelInfo, round_index: int, pool: Sequence[Pack] | None = None,
                      campaign: str = "") -> list[FactoryResult]:
    """Ask the factory for the round's variants (``variant_requests``) and wait for them.

    Args:
        settings: The campaign's settings.
        report: The round's weakness report.
        base: The gyms' base packs (one request per pack's domain).
        model: The model the round starts from (the gate's baseline).
        round_index: The round.
        pool: The packs the campaign can schedule now (default: ``base``).
        campaign: The campaign's name (part of the requests' idempotency keys).
    """
    baseline = PolicyParams.load(model.artifact) if model.kind == "reference" and model.artifact else None
    # A local checkpoint plays in the embedded factory as it plays its training rollouts (sampled), named in the
    # request by name and version; reference parameters go inline.
    local = model.kind == "transformers" and bool(model.artifact) and not settings.gate.factory_url
    tasks = [t for t in task_refs(pool if pool is not None else base) if in_focus(t.task_id, settings.gyms.tasks)]
    requests = variant_requests(settings, report, base, round_index, tasks, baseline,
                                f"{campaign}/{model.params_hash or model.id}" if campaign
                                else model.params_hash or str(model.id),
                                model.ref.label if local else "reference")
    if not requests:
        return []
    options = {"baseline": make_agent(model, settings, sampled=True)} if local else {}
    client = make_factory_client(settings.gate.factory_url, token=settings.gate.factory_token, **options)
    return [client.request(request, timeout=600.0) for request in requests]


def plan(report: WeaknessReport, pool_packs: Sequence[Pack], history: History, settings: GymloopSettings,
         round_index: int) -> Wave:
    """Plan the round's wave over the pool's training tasks in focus (a control arm plans uniform waves)."""
    pool = [t for t in task_refs(pool_packs) if in_focus(t.task_id, settings.gyms.tasks)]
    return plan_tasks(report, pool, history, settings, round_index)


def plan_tasks(report: WeaknessReport, pool: Sequence[TaskRef], history: History, settings: GymloopSettings,
               round_index: int) -> Wave:
    """Plan the round's wave over the pool's tasks (``plan`` with the pool given as tasks)."""
    strategy = settings.curriculum.strategy if settings.curriculum.arm == "targeted" else "uniform"
    config = CurriculumConfig(strategy=strategy, budget=settings.curriculum.wave_budget, k=settings.curriculum.train_k,
                              seed=settings.curriculum.seed * 1000 + round_index)
    history = history.model_copy(deep=True)
    if not history.waves or history.waves[-1].round_index != round_index - 1:
        history.waves = [w for w in history.waves if w.round_index < round_index]
    wave = plan_wave(report, list(pool), history, config)
    return wave.model_copy(update={"round_index": round_index})


def wave_entries(wave: Wave) -> list[RegistryWaveEntry]:
    """The registry's view of a wave."""
    return [RegistryWaveEntry(pack_id=e.pack_id, task_id=e.task_id, weight=max(e.weight, 1e-9),
                      reason=f"{e.source}:{e.weakness}" if e.weakness else f"{e.source}: {e.reason}")
            for e in wave.entries]


def update_history(history: History, wave: Wave, records: Sequence[EpisodeRecord | EpisodeSummary]) -> History:
    """Add the wave's group results (one group per task) and the wave (with its bandit state) to the history."""
    updated = history.model_copy(deep=True)
    groups: dict[tuple[str, str], list[EpisodeRecord | EpisodeSummary]] = defaultdict(list)
    for r in records:
        if not r.invalid:
            groups[(r.pack_id, r.task_id)].append(r)
    for (pack_id, task_id), rs in sorted(groups.items()):
        rs.sort(key=lambda r: r.attempt)
        updated.record_group(pack_id, task_id, GroupResult(round_index=wave.round_index, scores=[r.score for r in rs],
                                                           passed=[r.passed for r in rs]))
    updated.record_wave(wave)
    return updated


def rollout_blame(records: Sequence[EpisodeRecord], packs: Sequence[Pack]) -> dict[str, list[Blame]]:
    """What the detectors ``diagnose`` runs say of each failed rollout: its tags, by episode id.

    Passed and invalid rollouts, and failures at another boundary than the agent's, are not diagnosed (as in
    ``diagnose``). Each tag keeps its kind and the tools its evidence names (the tool called and a tool an
    argument names), which is what the builtin trainer's per-decision credit reads.
    """
    ctx = diagnosis_context(packs)
    detectors = [get_detector(name) for name in detector_names()]
    out: dict[str, list[Blame]] = {}
    for r in records:
        if r.passed or r.invalid or (r.failure is not None and r.failure.boundary != "agent"):
            continue
        tags = [tag for detector in detectors for tag in detector.detect(r, ctx)]
        if tags:
            out[r.episode_id] = [Blame(kind=tag.kind, tools=tuple(sorted(
                {x for e in tag.evidence for x in (e.tool, e.argument) if x}))) for tag in tags]
    return out


def train_builtin(settings: GymloopSettings, ref: ModelRef, wave: Wave, records: Sequence[EpisodeRecord],
                  packs: Sequence[Pack], out_dir: Path, learning_rate: float | None = None) -> ModelRef:
    """The builtin trainer's step with the settings' credit (diagnosing the rollouts for per-decision credit).

    Args:
        settings: The campaign's settings (``credit``).
        ref: The model to train.
        wave: The wave the rollouts played.
        records: The wave's rollouts.
        packs: Packs holding the rollouts' tasks (the detectors read them).
        out_dir: Where the new parameters are written.
        learning_rate: The trainer's learning rate (default: the trainer's).
    """
    config = GRPOConfig(credit=settings.training.credit,
                        **({} if learning_rate is None else {"learning_rate": learning_rate}))
    blame = rollout_blame(records, packs) if settings.training.credit == "decision" else None
    return GRPOTrainer(out_dir, config).train(ref, wave, records, blame=blame)


def recorded_wave(info: WaveInfo, round_index: int) -> Wave:
    """The planner's wave of a recorded round (rebuilt from its entries for a round recorded before plans were)."""
    if info.plan is not None:
        return Wave.model_validate(info.plan)
    entries = []
    for e in info.entries:
        source, _, why = e.reason.partition(":")
        known = source if source in ("targeted", "replay", "explore") else "explore"
        entries.append(WaveEntry(pack_id=e.pack_id, task_id=e.task_id, weight=e.weight, source=known,
                                 weakness=why if known == "targeted" and why and not why.startswith(" ") else None,
                                 reason=why.strip()))
    details = info.details
    return Wave(round_index=round_index, strategy=str(details.get("strategy", "targeted")), entries=entries,
                budget=int(details.get("budget", 0)), k=int(details.get("k", 1)),
                message=str(details.get("message", "")))


def train(settings: GymloopSettings, model: ModelInfo, wave: Wave, records: Sequence[EpisodeRecord],
          packs: Sequence[Pack], out_dir: Path) -> ModelRef:
    """Train the model on the wave's rollouts with the configured trainer."""
    ref = model_ref(model)
    if settings.training.trainer == "builtin":
        return train_builtin(settings, ref, wave, records, packs, settings.store.home / "models")
    if settings.training.trainer == "trl":
        return TRLTrainer(settings.store.home / "models", list(packs), settings.training.trl).train(ref, wave, records)
    if settings.training.trainer == "export":
        return get_trainer("export", out_dir=out_dir / "dataset", packs=list(packs)).train(ref, wave, records)
    return get_trainer("command", command=settings.training.trainer_command, workdir=out_dir / "train",
                       packs=list(packs)).train(ref, wave, records)


def outcomes(registry: Registry, round_id: int, stage: str, model_id: int) -> list[Outcome]:
    """A stage's episodes of one model as metric outcomes, from the registry's summary columns (no trace decoding)."""
    domains = {p.id: p.domain for p in registry.list_packs()}
    return [Outcome(pack_id=s.pack_id, task_id=s.task_id, domain=domains.get(s.pack_id, ""), passed=s.passed,
                    score=s.score, invalid=s.invalid, failure_boundary=s.failure_boundary,
                    failure_kind=s.failure_kind, tokens=s.tokens_in + s.tokens_out, cost=s.cost)
            for s in registry.episode_summaries(round_id, stage=stage, model_id=model_id)]


def stage_model(registry: Registry, round_id: int, stage: str) -> int:
    """The model a finished round's stage played: the model in, or for ``eval_after`` the model out."""
    info = registry.round(round_id)
    model = info.model_out_id if stage == EVAL_AFTER else info.model_in_id
    return model if model is not None else info.model_in_id


def finished_rounds(registry: Registry, campaign: str, arm: str = TARGETED_ARM) -> list[Any]:
    """An arm's finished rounds, oldest first (none when the campaign is not in the registry)."""
    info = registry.find_campaign(campaign)
    if info is None:
        return []
    return [r for r in registry.rounds(info.id, arm=arm) if r.status == "finished"]


def campaign_lift(registry: Registry, campaign: str, seed: int = 0,
                  arm: str = TARGETED_ARM) -> tuple[float, float, float, float, float]:
    """Held-out pass rate before an arm's first round and after its last, and the paired lift with its interval.

    Returns:
        ``(before, after, lift, low, high)``.

    Raises:
        ValueError: The arm has no finished round.
    """
    rounds = finished_rounds(registry, campaign, arm)
    if not rounds:
        raise ValueError(f"campaign {campaign!r}" + ("" if arm == TARGETED_ARM else f" ({arm} arm)")
                         + " has no finished round")
    before = outcomes(registry, rounds[0].id, EVAL_BEFORE, rounds[0].model_in_id)
    after = outcomes(registry, rounds[-1].id, EVAL_AFTER, stage_model(registry, rounds[-1].id, EVAL_AFTER))
    lift = paired_lift(before, after, seed=seed)
    rate_before = compute_metrics(before, rounds=1).pass_rate.value
    rate_after = compute_metrics(after, rounds=1).pass_rate.value
    return rate_before, rate_after, lift.value, lift.low, lift.high


def round_metrics(before: Sequence[Outcome], after: Sequence[Outcome], report: WeaknessReport,
                  train: Sequence[Outcome], k: int, seed: int) -> dict[str, float]:
    """Every metric of a round: held-out pass rates, lift and interval, pass^k, per domain and weakness kind, usage."""
    mb, ma = compute_metrics(before, k=k, seed=seed), compute_metrics(after, k=k, seed=seed)
    lift = paired_lift(before, after, seed=seed)
    everything = [*before, *after, *train]
    out = {
        "heldout_pass_rate_before": mb.pass_rate.value, "heldout_pass_rate_after": ma.pass_rate.value,
        "lift": lift.value, "lift_low": lift.low, "lift_high": lift.high,
        f"pass_hat_{k}_before": mb.pass_hat_k.value, f"pass_hat_{k}_after": ma.pass_hat_k.value,
        f"pass_at_{k}_after": ma.pass_at_k.value, "mean_score_after": ma.mean_score.value,
        "episodes_eval": float(len(before) + len(after)), "episodes_train": float(len(train)),
        "invalid_episodes": float(mb.invalid + ma.invalid),
        **validity_metrics(mb, ma),
        "tokens": float(sum(o.tokens for o in everything)), "cost_usd": float(sum(o.cost for o in everything)),
    }
    for domain, m in metrics_by(after, lambda o: [o.domain], k=k, seed=seed).items():
        out[f"heldout_pass_rate_after/{domain}"] = m.pass_rate.value
    for domain, m in metrics_by(before, lambda o: [o.domain], k=k, seed=seed).items():
        out[f"heldout_pass_rate_before/{domain}"] = m.pass_rate.value
    out.update(kind_metrics(report))
    return out


def kind_metrics(report: WeaknessReport) -> dict[str, float]:
    """Each weakness kind's failures summed over its grains: share of failures, count, rate per held-out episode.

    A failure counts for its primary kind; the failures that show a kind as secondary are counted apart
    (``weakness_secondary/<kind>``).
    """
    out: dict[str, float] = {}
    for k in report.kinds:
        out[f"weakness_share/{k.kind}"] = k.share
        out[f"weakness_count/{k.kind}"] = float(k.count)
        out[f"weakness_rate/{k.kind}"] = k.rate
        out[f"weakness_secondary/{k.kind}"] = float(k.secondary)
    return out


def validity_metrics(before: Metrics, after: Metrics) -> dict[str, float]:
    """Valid and invalid held-out episodes before and after, their causes, and the rates with invalid ones failed.

    The pass rates leave invalid episodes out; these are shown beside them.
    """
    out = {"valid_episodes_before": float(before.episodes), "valid_episodes_after": float(after.episodes),
           "invalid_episodes_before": float(before.invalid), "invalid_episodes_after": float(after.invalid),
           "heldout_pass_rate_before_invalid_failed": before.pass_rate_invalid_failed.value,
           "heldout_pass_rate_after_invalid_failed": after.pass_rate_invalid_failed.value}
    for stage, m in (("before", before), ("after", after)):
        out.update({f"invalid_{stage}/{cause}": float(n) for cause, n in m.invalid_causes.items()})
    return out


def write_json(path: Path, data: Any) -> Path:
    """Write JSON atomically."""
    tmp = path.with_suffix(path.suffix + ".tmp")
    tmp.write_text(json.dumps(data, indent=2, sort_keys=True, default=str))
    tmp.replace(path)
    return path


def timed(seconds: dict[str, float], name: str, started: float) -> None:
    """Record a step's wall-clock seconds."""
    seconds[name] = round(time.perf_counter() - started, 3)


def jitter_free_seed(*parts: object) -> int:
    """A stable integer seed from parts (independent of PYTHONHASHSEED)."""
    return random.Random("|".join(map(str, parts))).randrange(2**31)

"""The factory's variants of a round: the requests aimed at its weaknesses, and asking for them."""

from __future__ import annotations

import logging
from collections.abc import Sequence
from typing import Any

from arena.agents.reference import PolicyParams
from arena.core.domains import get_domain
from arena.core.pack import Pack
from curriculum import TaskRef, coverage_ranked, task_refs
from diagnosis import WeaknessReport
from factory_client import (
    FactoryResult,
    GateConfig,
    VariantRequest,
    make_factory_client,
    targetable,
    targets_from_report,
)
from flows.focus import in_focus
from flows.registered_models import make_agent
from flows.settings import GymloopSettings
from registry import ModelInfo

_log = logging.getLogger(__name__)


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
    options: dict[str, Any] = {"baseline": make_agent(model, settings, sampled=True)} if local else {}
    if not settings.gate.factory_url:  # the embedded factory derives from the campaign's packs (gym_knobs too)
        options["base_packs"] = {p.id: p for p in base}
    client = make_factory_client(settings.gate.factory_url, token=settings.gate.factory_token, **options)
    return [client.request(request, timeout=600.0) for request in requests]

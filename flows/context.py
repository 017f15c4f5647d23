"""One round's context, opened once and handed to every step: settings, registry, the round, its model and suite.

``open_round`` loads the settings (the arm's), opens the registry, finds the model the round starts from (the
last promoted round's model out, or the campaign's starting model) and starts or resumes the round in the registry
(creating the campaign and the arm with their first round). Steps read everything else through it.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from arena.core.pack import Pack
from arena.rollout import EpisodeKey
from flows import model_spec, transfer
from flows.campaign_config import campaign_contract, campaign_settings, check_contract
from flows.models import RoundParams
from flows.packs import base_packs, load_pack
from flows.promotion import last_promoted
from flows.registered_models import initial_model
from flows.registry_access import open_registry
from flows.rollouts import heldout_keys
from flows.round_files import round_dir
from flows.settings import GymloopSettings, load_settings
from registry import TARGETED_ARM, BaselineInfo, ModelInfo, Registry, RoundInfo, StageInfo


@dataclass
class RoundContext:
    """Everything a round's steps share.

    Attributes:
        params: Which round.
        settings: The arm's settings (``arm`` set to the round's arm).
        registry: The registry.
        round: The round's registry record (as it was when opened).
        model_in: The model the round starts from.
        base: The campaign's base packs (their held-out tasks are the suite).
        suite: The held-out suite's episodes.
        baseline: The campaign baseline the round is measured against.
        say: Where the round's progress lines go (the flow's logger).
        transfer_packs: The transfer suites' packs (never trained, diagnosed or varied: ``flows.transfer``).
        transfer_keys: The transfer suites' episodes, played by the model in and by the model out.
    """

    params: RoundParams
    settings: GymloopSettings
    registry: Registry
    round: RoundInfo
    model_in: ModelInfo
    base: list[Pack]
    suite: list[EpisodeKey]
    baseline: BaselineInfo
    say: Callable[[str], None] = field(default=print)
    transfer_packs: list[Pack] = field(default_factory=list)
    transfer_keys: list[EpisodeKey] = field(default_factory=list)

    @property
    def campaign(self) -> str:
        """Campaign name."""
        return self.params.campaign

    @property
    def arm(self) -> str:
        """The round's arm."""
        return self.params.arm

    @property
    def index(self) -> int:
        """The round's index within its arm."""
        return self.params.round_index

    @property
    def where(self) -> str:
        """The round, as lines name it: ``campaign c round 2`` (and the arm when it is a control)."""
        arm = "" if self.arm == TARGETED_ARM else f" ({self.arm} arm)"
        return f"campaign {self.campaign}{arm} round {self.index}"

    @property
    def folder(self) -> Path:
        """The round's artifact folder under the gymloop home (plots, reports; never state a resume reads)."""
        return round_dir(self.settings, self.campaign, self.index, self.arm)

    def stage(self, name: str) -> StageInfo | None:
        """The stage ``name`` of the round, if it finished."""
        return self.registry.stages(self.round.id).get(name)

    def previous_round(self) -> RoundInfo | None:
        """The arm's round before this one (``None`` for round 0)."""
        if self.index == 0:
            return None
        rounds = self.registry.rounds(self.round.campaign_id, arm=self.arm)
        return next((r for r in rounds if r.index == self.index - 1), None)

    def earlier_rounds(self) -> list[RoundInfo]:
        """The arm's finished rounds before this one, oldest first."""
        return [r for r in self.registry.rounds(self.round.campaign_id, arm=self.arm)
                if r.index < self.index and r.status == "finished"]

    def pack(self, pack_id: str) -> Pack:
        """A registered pack (read once per process)."""
        return load_pack(self.registry, pack_id)


def round_overrides(params: RoundParams) -> dict[str, Any]:
    """A round's overrides, recorded with it: the flow's, with ``arm`` set to the round's arm."""
    return {**params.overrides, "arm": params.arm}


def open_round(params: RoundParams, say: Callable[[str], None] = print) -> RoundContext:
    """Open a round: start it, or resume it when it has not finished.

    Its settings are the campaign's recorded ones, the round's overrides and this machine's own
    (``campaign_config.campaign_settings``); the overrides are recorded with the round, for its workers.

    Raises:
        ValueError: The arm's previous round has not finished, or produced no model.
        RegistryError: The registry refused the round (e.g. it already finished).
    """
    overrides = round_overrides(params)
    local = load_settings(**overrides)
    registry = open_registry(local)
    settings = campaign_settings(registry, params.campaign, overrides, local)
    model_in = model_spec.local_model(_model_in(registry, settings, params), settings)
    transfer.check_suites(settings, params.overrides)
    base, suite, contract = round_contract(registry, settings)
    change = check_contract(registry.baselines(params.campaign), contract, settings, params.overrides,
                            where=_round_name(params.campaign, params.arm, params.round_index),
                            accept_change=params.accept_change, sources=params.sources)
    info = registry.open_round(params.campaign, params.arm, params.round_index, model_in.id,
                               settings=settings.public_dict(), contract=contract, change=change)
    info = registry.update_round(info.id, {"overrides": overrides, "settings": settings.public_dict()})
    baseline = [b for b in registry.baselines(params.campaign) if b.first_round <= params.round_index][-1]
    suites = transfer.suite_packs(registry, settings)
    return RoundContext(params=params, settings=settings, registry=registry, round=info, model_in=model_in,
                        base=base, suite=suite, baseline=baseline, say=say, transfer_packs=suites,
                        transfer_keys=transfer.suite_keys(suites, settings))


def round_contract(registry: Registry, settings: GymloopSettings) -> tuple[list[Pack], list[EpisodeKey],
                                                                         dict[str, Any]]:
    """A round's base packs (added to the registry), its held-out suite and its contract (``flows.campaign_config``).

    The contract holds the transfer suites too (their packs are added to the registry).

    Raises:
        ValueError: A pattern of the ``tasks`` setting chooses no task of the gyms.
    """
    base = base_packs(registry, settings)
    suite = heldout_keys(base, settings)
    suites = transfer.suite_packs(registry, settings)
    return base, suite, campaign_contract(settings, base, len(suite), suites,
                                          len(transfer.suite_keys(suites, settings)))


def check_next_round(registry: Registry, settings: GymloopSettings, campaign: str, overrides: dict[str, Any], *,
                     accept_change: bool) -> None:
    """Stop a command before it starts any flow when its next round would be refused (``check_contract``).

    Raises:
        ContractChanged: The gyms or measuring settings changed since the campaign's baseline, not accepted.
    """
    baselines = registry.baselines(campaign)
    if baselines:
        contract = round_contract(registry, settings)[2]
        where = _round_name(campaign, TARGETED_ARM, next_index(registry, campaign, TARGETED_ARM))
        check_contract(baselines, contract, settings, overrides, where=where, accept_change=accept_change)


def _round_name(campaign: str, arm: str, index: int) -> str:
    return f"round {index} of campaign {campaign!r}" + ("" if arm == TARGETED_ARM else f" ({arm} arm)")


def _model_in(registry: Registry, settings: GymloopSettings, params: RoundParams) -> ModelInfo:
    """The model the round starts from: the arm's last promoted model (``flows.promotion``), else its first model in.

    A round 0 starts from the campaign's starting model (the ``model`` setting).
    """
    campaign = registry.find_campaign(params.campaign)
    rounds = registry.rounds(campaign.id, arm=params.arm) if campaign is not None else []
    existing = next((r for r in rounds if r.index == params.round_index), None)
    if existing is not None and existing.status != "finished":
        return registry.model(existing.model_in_id)
    label = f"campaign {params.campaign!r}" + ("" if params.arm == TARGETED_ARM else f" ({params.arm} arm)")
    previous = [r for r in rounds if r.index < params.round_index]
    if params.round_index > 0 and not previous:
        raise ValueError(f"{label} has no round {params.round_index - 1}")
    if previous and (previous[-1].status != "finished" or previous[-1].index != params.round_index - 1):
        raise ValueError(f"{label}: round {params.round_index - 1} has not finished; run or resume it first")
    if not previous:
        return initial_model(registry, settings)
    if previous[-1].model_out_id is None:
        raise ValueError(f"{label}: round {params.round_index - 1} produced no model")
    promoted = last_promoted(previous)
    return registry.model(promoted.model_out_id if promoted is not None and promoted.model_out_id is not None
                          else previous[0].model_in_id)


def next_index(registry: Registry, campaign: str, arm: str) -> int:
    """The index of an arm's next round: its unfinished round, else one past its last."""
    info = registry.find_campaign(campaign)
    rounds = registry.rounds(info.id, arm=arm) if info is not None else []
    return next((r.index for r in rounds if r.status != "finished"), len(rounds))


def sorted_records(records: list[Any]) -> list[Any]:
    """Episodes in their key's order (pack, task, seed, attempt): the same input whatever order they finished in."""
    return sorted(records, key=lambda r: (r.pack_id, r.task_id, r.seed, r.attempt))

"""One paired campaign of the neural benchmark, run in its own process through gymloop's flows.

The targeted arm and its uniform control start from the same base checkpoint (``transformers:<folder>``), spend
the same budget per round with the ``trl`` trainer, and are judged on the same held-out suite (the held-out tasks
in the campaign's focus, the ``tasks`` setting, at world seed 0, greedy decoding). The rounds run through
``flows.campaign.campaign`` with a uniform control (Prefect flows, the SQLite registry, the local MLflow store and
the embedded factory under the process's own gymloop home); the arms' results are then read back from the registry.

Run by ``bench.bench_neural`` as ``python -m bench.neural_campaigns SPEC.json OUT.json``.
"""

from __future__ import annotations

import json
import os
import sys
import time
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from arena.core.flips import Flips
from bench.neural_data import template_of
from bench.neural_repro import pin
from flows.registry_access import open_registry
from trainers.trl import MANIFEST_FILE

ARMS = ("targeted", "uniform")


class CampaignSpec(BaseModel):
    """One paired campaign to run.

    Attributes:
        home: The gymloop home of this campaign (registry, MLflow store, models).
        base: The base checkpoint's folder.
        seed: The campaign seed (waves, variants, sampling, the trainer's data order).
        rounds: Rounds of each arm.
        templates: The templates the base checkpoint was trained on (a subset of the suite is reported on them).
        threads: Torch threads of the campaign's process (``bench.neural_repro.pin``).
        overrides: Further gymloop settings of both arms.
    """

    model_config = ConfigDict(extra="forbid")

    home: str
    base: str
    seed: int
    rounds: int = Field(ge=1)
    templates: list[str]
    threads: int = Field(default=1, ge=1)
    overrides: dict[str, Any] = Field(default_factory=dict)

    @property
    def campaign(self) -> str:
        """The targeted arm's campaign name (the control's is ``<name>.uniform``)."""
        return f"neural-s{self.seed}"


class ArmRound(BaseModel):
    """One arm's round.

    Attributes:
        arm: ``targeted`` or ``uniform``.
        round_index: The round.
        before: Held-out pass rate of the model the round started from (whole suite).
        after: Held-out pass rate after the round (whole suite).
        before_trained: The same on the held-out tasks of the trained templates.
        after_trained: After the round, on those tasks.
        heldout: Held-out episodes, and those of trained templates: ``{task_id: passed}`` after the round.
        pass_to_fail: Held-out tasks the round lost (passed by the model it started from, failed after;
            ``arena.core.flips``, the round's own figure).
        fail_to_pass: Held-out tasks the round gained.
        lost: The lost tasks' names.
        train_episodes: Training rollouts of the round.
        train_passed: Of those, how many passed (the SFT data when the method is ``sft``).
        demonstrations: Demonstrations of unsolved wave tasks the trainer added (``[trl] demonstrations``).
        sft_steps: SFT optimizer steps of the round's training (0 when it trained no new checkpoint).
        variants: Variant packs the factory added.
        tokens: Tokens the round's episodes used (prompt and generated).
        seconds: Wall-clock seconds of the round's steps, by step (evaluate, diagnose, generate, train,
            re_evaluate).
    """

    model_config = ConfigDict(extra="forbid")

    arm: str
    round_index: int
    before: float
    after: float
    before_trained: float
    after_trained: float
    heldout: dict[str, bool]
    pass_to_fail: int = 0
    fail_to_pass: int = 0
    lost: list[str] = Field(default_factory=list)
    train_episodes: int
    train_passed: int
    demonstrations: int = 0
    sft_steps: int = 0
    variants: int
    tokens: float
    seconds: dict[str, float]


class CampaignResult(BaseModel):
    """A paired campaign's rounds, both arms.

    Attributes:
        seed: The campaign seed.
        rounds: Every arm's rounds, in the order run.
        base_heldout: The base checkpoint's held-out results ``{task_id: passed}`` (round 0, before training).
        seconds: Wall-clock seconds of the whole campaign, Prefect's start included.
    """

    model_config = ConfigDict(extra="forbid")

    seed: int
    rounds: list[ArmRound]
    base_heldout: dict[str, bool]
    seconds: float


def _rate(results: dict[str, bool], templates: set[str] | None = None) -> float:
    chosen = [v for k, v in results.items() if templates is None or template_of(k) in templates]
    return sum(chosen) / len(chosen) if chosen else 0.0


def _training_stats(registry: Any, info: Any) -> dict[str, Any]:
    """The training stats in the round's new checkpoint's manifest; empty when the round trained none."""
    if info.model_out_id is None or info.model_out_id == info.model_in_id:
        return {}
    artifact = registry.model(info.model_out_id).artifact
    manifest = Path(artifact) / MANIFEST_FILE if artifact else None
    if manifest is None or not manifest.is_file():
        return {}
    return dict(json.loads(manifest.read_text()).get("stats", {}))


def run(spec: CampaignSpec) -> CampaignResult:
    """Run the paired campaign and read both arms' rounds back from the registry."""
    os.environ["GYMLOOP_HOME"] = spec.home
    from flows._offline import apply_offline_defaults

    apply_offline_defaults()
    os.environ.setdefault("PREFECT_LOGGING_LEVEL", "WARNING")
    os.environ.setdefault("MLFLOW_LOGGING_LEVEL", "WARNING")
    from flows.campaign import campaign
    from flows.models import CampaignParams
    from flows.outcomes import finished_rounds
    from flows.rollouts import EVAL_AFTER, EVAL_BEFORE, TRAIN
    from flows.settings import load_settings

    overrides = {"domains": ["tracker"], "model": f"transformers:{spec.base}", "trainer": "trl", "seed": spec.seed,
                 "max_rounds": spec.rounds, **spec.overrides}
    started = time.perf_counter()
    outcome = campaign(CampaignParams(campaign=spec.campaign, rounds=spec.rounds, control="uniform",
                                      overrides=overrides))
    seconds = time.perf_counter() - started
    settings = load_settings(**overrides)
    registry = open_registry(settings)
    templates = set(spec.templates)
    rounds: list[ArmRound] = []
    base: dict[str, bool] = {}
    for arm in ("targeted", "uniform"):
        summaries = {r.round_index: r for r in outcome.rounds if r.arm == arm}
        for info in finished_rounds(registry, spec.campaign, arm):
            summary = summaries.get(info.index)
            if summary is None:
                continue
            before = {s.task_id: s.passed for s in registry.episode_summaries(info.id, stage=EVAL_BEFORE)}
            after = {s.task_id: s.passed for s in registry.episode_summaries(info.id, stage=EVAL_AFTER)}
            train = registry.episode_summaries(info.id, stage=TRAIN)
            if info.index == 0 and not base:
                base = before
            trained = _training_stats(registry, info)
            flips = summary.flips or Flips()
            rounds.append(ArmRound(
                arm=arm, round_index=info.index, before=_rate(before), after=_rate(after),
                before_trained=_rate(before, templates), after_trained=_rate(after, templates), heldout=after,
                pass_to_fail=flips.pass_to_fail, fail_to_pass=flips.fail_to_pass, lost=flips.lost,
                train_episodes=len(train), train_passed=sum(s.passed for s in train),
                demonstrations=int(trained.get("demonstrations", 0)), sft_steps=int(trained.get("sft_steps", 0)),
                variants=summary.variants,
                tokens=summary.metrics.get("tokens", 0.0),
                seconds={k.split("/", 1)[1]: v for k, v in summary.metrics.items() if k.startswith("seconds/")}))
    return CampaignResult(seed=spec.seed, rounds=rounds, base_heldout=base, seconds=seconds)


def main() -> None:
    """Run the campaign a spec file describes and write its result."""
    spec = CampaignSpec.model_validate_json(Path(sys.argv[1]).read_text())
    pin(spec.threads)
    result = run(spec)
    Path(sys.argv[2]).write_text(json.dumps(result.model_dump(mode="json"), indent=1))


if __name__ == "__main__":
    main()

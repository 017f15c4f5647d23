"""A round's training wave: planned over the pool, recorded in the registry, added to the history."""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Mapping, Sequence

from arena.core.episode import EpisodeRecord
from arena.core.pack import Pack
from curriculum import CurriculumConfig, GroupResult, History, TaskRef, Wave, WaveEntry, plan_wave, task_refs
from diagnosis import WeaknessReport
from flows.focus import in_focus
from flows.settings import GymloopSettings
from registry import EpisodeSummary, WaveInfo
from registry import WaveEntry as RegistryWaveEntry


def plan(report: WeaknessReport, pool_packs: Sequence[Pack], history: History, settings: GymloopSettings,
         round_index: int, regressed: Mapping[str, int] | None = None) -> Wave:
    """Plan the round's wave over the pool's training tasks in focus (a control arm plans uniform waves).

    ``regressed``: the held-out tasks the model in lost per template in the round that produced it (the retention
    share's measure, ``curriculum.CurriculumConfig.regressed``).
    """
    pool = [t for t in task_refs(pool_packs) if in_focus(t.task_id, settings.gyms.tasks)]
    return plan_tasks(report, pool, history, settings, round_index, regressed)


def plan_tasks(report: WeaknessReport, pool: Sequence[TaskRef], history: History, settings: GymloopSettings,
               round_index: int, regressed: Mapping[str, int] | None = None) -> Wave:
    """Plan the round's wave over the pool's tasks (``plan`` with the pool given as tasks)."""
    strategy = settings.curriculum.strategy if settings.curriculum.arm == "targeted" else "uniform"
    config = CurriculumConfig(strategy=strategy, budget=settings.curriculum.wave_budget, k=settings.curriculum.train_k,
                              seed=settings.curriculum.seed * 1000 + round_index, regressed=dict(regressed or {}),
                              retention_per_flip=settings.curriculum.retention_per_flip)
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

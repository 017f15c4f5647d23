"""Curriculum: plan waves of targeted, replayed and explored tasks, and decide when to stop."""

from curriculum._fill import PlanContext
from curriculum.bandit import arm_weights, learning_progress, update_bandit
from curriculum.coverage import coverage_ranked, pool_coverage, practice_value
from curriculum.matching import band_score, estimated_success, grain_label, matches, uniform_drop
from curriculum.models import (
    ArmStats,
    BanditState,
    CurriculumConfig,
    GroupResult,
    History,
    RoundResult,
    Source,
    StopDecision,
    StopRules,
    TaskHistory,
    TaskRef,
    Wave,
    WaveEntry,
)
from curriculum.planner import plan_wave, task_refs
from curriculum.stop import should_stop
from curriculum.strategies import (
    BanditStrategy,
    Strategy,
    TargetedStrategy,
    UniformStrategy,
    get_strategy,
    register_strategy,
    strategy_names,
)

__all__ = [
    "ArmStats",
    "BanditState",
    "BanditStrategy",
    "CurriculumConfig",
    "GroupResult",
    "History",
    "PlanContext",
    "RoundResult",
    "Source",
    "StopDecision",
    "StopRules",
    "Strategy",
    "TargetedStrategy",
    "TaskHistory",
    "TaskRef",
    "UniformStrategy",
    "Wave",
    "WaveEntry",
    "arm_weights",
    "band_score",
    "coverage_ranked",
    "estimated_success",
    "get_strategy",
    "grain_label",
    "learning_progress",
    "matches",
    "plan_wave",
    "pool_coverage",
    "practice_value",
    "register_strategy",
    "should_stop",
    "strategy_names",
    "task_refs",
    "uniform_drop",
    "update_bandit",
]

"""Diagnosis: detectors tag failed episodes, clustering finds unnamed groups, ranking orders the weaknesses."""

from arena.core.weakness import DETECTOR_KINDS, WeaknessKind
from diagnosis._render import render_markdown
from diagnosis.clustering import METHODS, ClusterResult, cluster_rows
from diagnosis.context import DiagnosisContext, ToolInfo, infer_tool
from diagnosis.detector import Detector, detector_names, get_detector, register_detector
from diagnosis.detectors import (
    BUILTIN_DETECTORS,
    BrittleParametersDetector,
    ClaimedUnverifiedSuccessDetector,
    GaveUpEarlyDetector,
    LeakedInternalDataDetector,
    MissedPolicyDependencyDetector,
    NoErrorRecoveryDetector,
    SearchWithoutFetchDetector,
    StaleStateDetector,
    UnintendedSideEffectDetector,
    WrongIdDetector,
)
from diagnosis.engine import diagnose
from diagnosis.features import episode_features
from diagnosis.io import iter_episodes_jsonl, read_episodes_jsonl
from diagnosis.knobs import KIND_TARGETS, KindTarget, target_for
from diagnosis.models import (
    ClusterSummary,
    Evidence,
    KindSummary,
    ShareInterval,
    Tag,
    Weakness,
    WeaknessReport,
    grain_key,
)
from diagnosis.primary import episode_tags, ordered_kinds
from diagnosis.ranking import (
    FocusGrain,
    focus,
    focus_grains,
    focus_weights,
    impact,
    rank_report,
    read_report,
    share_interval,
)

__all__ = [
    "BUILTIN_DETECTORS",
    "DETECTOR_KINDS",
    "KIND_TARGETS",
    "METHODS",
    "BrittleParametersDetector",
    "ClaimedUnverifiedSuccessDetector",
    "ClusterResult",
    "ClusterSummary",
    "Detector",
    "DiagnosisContext",
    "Evidence",
    "FocusGrain",
    "GaveUpEarlyDetector",
    "KindSummary",
    "KindTarget",
    "LeakedInternalDataDetector",
    "MissedPolicyDependencyDetector",
    "NoErrorRecoveryDetector",
    "SearchWithoutFetchDetector",
    "ShareInterval",
    "StaleStateDetector",
    "Tag",
    "ToolInfo",
    "UnintendedSideEffectDetector",
    "Weakness",
    "WeaknessKind",
    "WeaknessReport",
    "WrongIdDetector",
    "cluster_rows",
    "detector_names",
    "diagnose",
    "episode_features",
    "episode_tags",
    "focus",
    "focus_grains",
    "focus_weights",
    "get_detector",
    "grain_key",
    "impact",
    "infer_tool",
    "iter_episodes_jsonl",
    "ordered_kinds",
    "rank_report",
    "read_report",
    "render_markdown",
    "read_episodes_jsonl",
    "register_detector",
    "share_interval",
    "target_for",
]

"""The registry: the only state of gymloop's rounds, and their lineage.

Models, packs (with their files), tasks, campaigns and their arms, rounds with their stages, pools and
weakness reports, episodes (keyed with the model that played them), weaknesses and waves.

``Registry(url=None, home=None)`` opens the database (SQLite under the gymloop
home folder by default, any SQLAlchemy URL by setting) and applies the
shipped Alembic migrations on first use. ``PackStore`` keeps packs on disk by
content id and refuses tampered entries. See docs/registry.md.
"""

from registry.database import HOME_ENV, URL_ENV, resolve_home, resolve_url, safe_url
from registry.errors import RegistryError
from registry.packstore import PackStore
from registry.records import (
    DEFAULT_STAGE,
    TARGETED_ARM,
    ArmInfo,
    BaselineInfo,
    CampaignInfo,
    EpisodeKey,
    EpisodeSummary,
    LeaseInfo,
    Lineage,
    LineageStep,
    ModelInfo,
    PackInfo,
    PoolPack,
    PoolRole,
    RegistryStatus,
    RoundInfo,
    RoundStatus,
    StageDone,
    StageInfo,
    TaskKey,
    TaskRef,
    TaskRoundStats,
    WaveEntry,
    WaveInfo,
    WeaknessEntry,
)
from registry.registry import Registry

__all__ = [
    "DEFAULT_STAGE",
    "TARGETED_ARM",
    "HOME_ENV",
    "URL_ENV",
    "ArmInfo",
    "BaselineInfo",
    "CampaignInfo",
    "EpisodeKey",
    "LeaseInfo",
    "EpisodeSummary",
    "Lineage",
    "LineageStep",
    "ModelInfo",
    "PackInfo",
    "PackStore",
    "PoolPack",
    "PoolRole",
    "Registry",
    "RegistryError",
    "RegistryStatus",
    "RoundInfo",
    "RoundStatus",
    "StageDone",
    "StageInfo",
    "TaskKey",
    "TaskRef",
    "TaskRoundStats",
    "WaveEntry",
    "WaveInfo",
    "WeaknessEntry",
    "resolve_home",
    "resolve_url",
    "safe_url",
]

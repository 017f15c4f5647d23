"""The registry: lineage store of models, packs, tasks, rounds, episodes, weaknesses and waves.

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
    CampaignInfo,
    EpisodeKey,
    EpisodeSummary,
    LeaseInfo,
    Lineage,
    LineageStep,
    ModelInfo,
    PackInfo,
    RegistryStatus,
    RoundInfo,
    RoundStatus,
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
    "HOME_ENV",
    "URL_ENV",
    "CampaignInfo",
    "EpisodeKey",
    "LeaseInfo",
    "EpisodeSummary",
    "Lineage",
    "LineageStep",
    "ModelInfo",
    "PackInfo",
    "PackStore",
    "Registry",
    "RegistryError",
    "RegistryStatus",
    "RoundInfo",
    "RoundStatus",
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

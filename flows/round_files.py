"""The folders and files of a campaign's artifacts under the gymloop home (nothing reads them back)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from flows.settings import GymloopSettings
from registry import TARGETED_ARM


def arm_dir(settings: GymloopSettings, campaign: str, arm: str = TARGETED_ARM) -> Path:
    """Folder of an arm's artifacts: the campaign's folder for the targeted arm, ``<campaign>/<arm>`` for a control."""
    path = settings.store.home / "campaigns" / campaign
    return path if arm == TARGETED_ARM else path / arm


def round_dir(settings: GymloopSettings, campaign: str, index: int, arm: str = TARGETED_ARM) -> Path:
    """Folder of a round's artifacts (weakness report, wave manifest, plots), created on first use."""
    path = arm_dir(settings, campaign, arm) / f"round-{index:03d}"
    path.mkdir(parents=True, exist_ok=True)
    return path


def write_json(path: Path, data: Any) -> Path:
    """Write JSON atomically."""
    tmp = path.with_suffix(path.suffix + ".tmp")
    tmp.write_text(json.dumps(data, indent=2, sort_keys=True, default=str))
    tmp.replace(path)
    return path

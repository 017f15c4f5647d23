"""Reading episode records from JSONL files, skipping and counting bad lines."""

from __future__ import annotations

import json
import logging
from collections import Counter
from collections.abc import Iterator
from pathlib import Path

from pydantic import ValidationError

from arena.core.episode import EPISODE_SCHEMA_VERSION, EpisodeRecord

logger = logging.getLogger(__name__)


def iter_episodes_jsonl(path: str | Path, skipped: Counter[str] | None = None) -> Iterator[EpisodeRecord]:
    """Yield the episode records of a JSONL file one by one, counting skipped lines in ``skipped``.

    Lines that are not JSON objects or fail validation count as ``malformed``; records of another
    schema version count as ``schema_version``. Blank lines are ignored.

    Raises:
        FileNotFoundError: ``path`` does not exist.
    """
    counts = skipped if skipped is not None else Counter()
    with Path(path).open(encoding="utf-8") as handle:
        for number, line in enumerate(handle, start=1):
            if not line.strip():
                continue
            try:
                data = json.loads(line)
            except json.JSONDecodeError as exc:
                logger.warning("%s:%d: not JSON (%s); skipped", path, number, exc.msg)
                counts["malformed"] += 1
                continue
            if not isinstance(data, dict):
                logger.warning("%s:%d: not a JSON object; skipped", path, number)
                counts["malformed"] += 1
                continue
            version = data.get("schema_version", EPISODE_SCHEMA_VERSION)
            if version != EPISODE_SCHEMA_VERSION:
                logger.warning("%s:%d: schema version %r, this gymloop reads %d; skipped",
                               path, number, version, EPISODE_SCHEMA_VERSION)
                counts["schema_version"] += 1
                continue
            try:
                yield EpisodeRecord.model_validate(data)
            except ValidationError as exc:
                first = exc.errors()[0]
                where = ".".join(str(p) for p in first["loc"])
                logger.warning("%s:%d: invalid episode record at %s: %s; skipped", path, number, where, first["msg"])
                counts["malformed"] += 1


def read_episodes_jsonl(path: str | Path) -> tuple[list[EpisodeRecord], dict[str, int]]:
    """Read every valid episode record of a JSONL file.

    Returns:
        The records and the number of skipped lines by reason (``malformed``, ``schema_version``).

    Raises:
        FileNotFoundError: ``path`` does not exist.
    """
    skipped: Counter[str] = Counter()
    records = list(iter_episodes_jsonl(path, skipped))
    return records, dict(sorted(skipped.items()))

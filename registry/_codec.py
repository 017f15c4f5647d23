"""Episode records to rows and back: summary columns plus the record as zlib-compressed JSON."""

from __future__ import annotations

import zlib
from typing import Any

from pydantic import ValidationError

from arena.core.episode import EpisodeRecord
from registry.errors import RegistryError

COMPRESSION_LEVEL = 3


def episode_row(round_id: int, stage: str, model_id: int, record: EpisodeRecord) -> dict[str, Any]:
    """Return the ``episodes`` row values of ``record``, played by the registered model ``model_id``."""
    verdict = record.verdict
    failed = sorted({r.kind for r in verdict.results if not r.passed}) if verdict is not None else []
    failure = record.failure
    return {
        "round_id": round_id,
        "stage": stage,
        "model_id": model_id,
        "pack_id": record.pack_id,
        "task_id": record.task_id,
        "seed": record.seed,
        "attempt": record.attempt,
        "episode_id": record.episode_id,
        "agent": record.agent,
        "model_ref": record.model_ref,
        "passed": record.passed,
        "verified": verdict is not None,
        "score": record.score,
        "invalid": record.invalid,
        "side_effect_penalty": verdict.side_effect_penalty if verdict is not None else 0.0,
        "failure_boundary": failure.boundary if failure is not None else None,
        "failure_kind": failure.kind if failure is not None else None,
        "failed_kinds": ",".join(failed),
        "steps": len(record.trace),
        "turns": record.turns,
        "tokens_in": record.tokens_in,
        "tokens_out": record.tokens_out,
        "cost": record.cost,
        "latency_s": record.latency_s,
        "wall_time_s": record.wall_time_s,
        "record": zlib.compress(record.model_dump_json().encode("utf-8"), COMPRESSION_LEVEL),
    }


def decode_record(blob: bytes, where: str) -> EpisodeRecord:
    """Return the episode record stored in ``blob``.

    Raises:
        RegistryError: The blob is damaged or not an episode record, naming ``where``.
    """
    try:
        return EpisodeRecord.model_validate_json(zlib.decompress(blob))
    except (zlib.error, ValidationError) as exc:
        raise RegistryError(f"stored episode {where} is unreadable: {exc}") from exc


def split_kinds(value: str) -> list[str]:
    """Return the failed assertion kinds stored as a comma-joined string."""
    return [k for k in value.split(",") if k]

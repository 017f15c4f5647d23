"""The detector contract and the registry of detectors by name."""

from __future__ import annotations

from typing import Protocol, runtime_checkable

from arena.core.episode import EpisodeRecord
from arena.core.weakness import WeaknessKind
from diagnosis.context import DiagnosisContext
from diagnosis.models import Tag


@runtime_checkable
class Detector(Protocol):
    """Reads one failed episode and tags the weakness it shows, with evidence."""

    name: WeaknessKind
    """Weakness kind the detector tags, e.g. ``WeaknessKind.WRONG_ID``."""

    def detect(self, episode: EpisodeRecord, ctx: DiagnosisContext) -> list[Tag]:
        """Return the tags of ``episode`` (empty when the weakness is absent)."""
        ...


_REGISTRY: dict[WeaknessKind, Detector] = {}


def register_detector(detector: Detector, *, replace: bool = False) -> Detector:
    """Register ``detector`` under its name and return it.

    Raises:
        ValueError: A different detector already holds the name and ``replace`` is false.
    """
    existing = _REGISTRY.get(detector.name)
    if existing is not None and existing is not detector and not replace:
        raise ValueError(f"a detector named {detector.name!r} is already registered ({type(existing).__name__})")
    _REGISTRY[detector.name] = detector
    return detector


def get_detector(name: str) -> Detector:
    """Return the detector registered as ``name``.

    Raises:
        KeyError: No such detector; the message lists the registered names.
    """
    if name not in _REGISTRY:
        raise KeyError(f"unknown detector {name!r}; registered: {', '.join(detector_names())}")
    return _REGISTRY[WeaknessKind(name)]


def detector_names() -> list[WeaknessKind]:
    """Names of the registered detectors, in registration order."""
    return list(_REGISTRY)

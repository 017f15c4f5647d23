"""The Trainer protocol and the registry of trainers by name."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any, Protocol, runtime_checkable

from arena.core.episode import EpisodeRecord
from trainers.models import ModelRef

if TYPE_CHECKING:
    from curriculum import Wave


@runtime_checkable
class Trainer(Protocol):
    """Turns a model and a wave's rollouts into the next model."""

    name: str
    """Registered name."""

    def train(self, model_ref: ModelRef, wave: Wave, rollouts: Sequence[EpisodeRecord]) -> ModelRef:
        """Train on the wave's rollouts and return the new model's reference.

        Raises:
            TrainerError: The step failed (the message names why).
        """
        ...


_TRAINERS: dict[str, Callable[..., Trainer]] = {}


def register_trainer(name: str, factory: Callable[..., Trainer]) -> None:
    """Make a trainer available by name; ``factory(**config)`` builds it.

    Raises:
        ValueError: The name is taken.
    """
    if name in _TRAINERS:
        raise ValueError(f"trainer {name!r} is already registered")
    _TRAINERS[name] = factory


def trainer_names() -> list[str]:
    """Registered trainer names."""
    return sorted(_TRAINERS)


def get_trainer(name: str, **config: Any) -> Trainer:
    """Build a registered trainer with its configuration.

    Raises:
        KeyError: Unknown name, listing the registered ones.
    """
    factory = _TRAINERS.get(name)
    if factory is None:
        raise KeyError(f"unknown trainer {name!r}; registered: {', '.join(trainer_names())}")
    return factory(**config)

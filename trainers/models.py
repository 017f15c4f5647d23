"""Model references and trainer errors."""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

from arena.core.model_id import ModelId, version_label

ModelKind = Literal["reference", "litellm", "external", "transformers"]
"""What a model reference points at: reference-policy parameters, a served model, an outside artifact, or a local
transformers checkpoint folder."""


class ModelRef(BaseModel):
    """A trained (or starting) model, as trainers hand it on.

    Attributes:
        name: Model name.
        version: Training step count (0 for a starting model).
        kind: ``reference``, ``litellm``, ``external`` or ``transformers``.
        artifact: Path of the model's artifact (reference-policy parameters, checkpoint), if any.
        endpoint: Served endpoint or provider model string (``litellm``), if any.
        parent: Reference string (or parameter hash) of the model it was trained from.
        params_hash: Content hash of the parameters, if known.
    """

    model_config = ConfigDict(extra="forbid", frozen=True)

    name: str = Field(min_length=1)
    version: int = Field(default=0, ge=0)
    kind: ModelKind = "reference"
    artifact: str | None = None
    endpoint: str | None = None
    parent: str | None = None
    params_hash: str | None = None

    @property
    def ref(self) -> str:
        """The model's name as gymloop prints it: ``name@vN`` plus ``:hash`` when known (``arena.core.model_id``)."""
        return ModelId(form="registered", name=self.name, version=self.version, params_hash=self.params_hash).label

    @property
    def registry_version(self) -> str:
        """The version label the registry stores the model under (``3-<12 hash digits>``, or ``3``)."""
        return version_label(self.version, self.params_hash)


class TrainerError(RuntimeError):
    """A training step failed; the message names the step, the bad value and, for commands, the log's tail."""

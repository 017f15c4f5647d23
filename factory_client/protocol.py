"""The factory protocol: versioned JSON models exchanged between the loop and a factory.

Every request and every answer carries ``protocol_version``; a side that reads a
version it does not know refuses the message. The OpenAPI schema served by
``gymloop factory serve`` is published in ``docs/factory-openapi.json``.
"""

from __future__ import annotations

import hashlib
import json
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, model_validator

from arena.core.weakness import WeaknessKind

PROTOCOL_VERSION = 1
"""The factory protocol version this gymloop speaks."""

GATES = (
    "no_leakage", "gold_passes", "ground_truth", "null_fails", "adversaries_fail", "replay_deterministic",
    "baseline_band",
)
"""The quality gates, in the order a candidate task meets them."""

RequestState = Literal["queued", "running", "done", "failed", "cancelled"]
"""Where a request is: waiting, generating, finished with packs, or failed."""


class TargetEvidence(BaseModel):
    """One observation behind a weakness: where in a failed trace it showed.

    Attributes:
        tool: Tool called at that step (empty when the evidence is the reply or the final state).
        argument: Argument name concerned, if any.
        note: Short explanation naming the observed value.
    """

    model_config = ConfigDict(extra="forbid")

    tool: str = ""
    argument: str | None = None
    note: str = ""


class WeaknessTarget(BaseModel):
    """A weakness the requested variants should stress.

    Attributes:
        kind: Weakness kind (a diagnosis detector kind, or ``novel``; ``arena.core.weakness``).
        weight: Relative weight (> 0); variants are shared among targets in proportion.
        focus_tags: Task tags that exercise the weakness.
        knobs: Knobs of the shared vocabulary (``arena.authoring.knobs``) and the values that target it; a
            request naming a knob the domain cannot honour is refused with the reason.
        tools: Tools named in the evidence; tasks whose gold program reaches them rank higher.
        evidence: Observations from the failed episodes.
        domain: Domain of the weakness's grain (kind, domain, tool), when it has one.
        tool: Tool of the weakness's grain: the variant's tasks call it (they rank first).
    """

    model_config = ConfigDict(extra="forbid")

    kind: WeaknessKind
    weight: float = Field(default=1.0, gt=0.0, le=1e6)
    focus_tags: list[str] = Field(default_factory=list, max_length=50)
    knobs: dict[str, Any] = Field(default_factory=dict)
    tools: list[str] = Field(default_factory=list, max_length=100)
    evidence: list[TargetEvidence] = Field(default_factory=list, max_length=100)
    domain: str | None = Field(default=None, max_length=80)
    tool: str | None = Field(default=None, max_length=200)


class GateConfig(BaseModel):
    """Settings of the quality gate a candidate task must pass to enter the pool.

    Attributes:
        k: Baseline attempts by the current model.
        band_min: Fewest baseline passes accepted.
        band_max: Most baseline passes accepted.
        near_duplicate_jaccard: Normalized token Jaccard at or above which a prompt counts as a
            near-duplicate of a held-out prompt.
        near_duplicate_ratio: Character similarity ratio at or above which a prompt counts as a
            near-duplicate of a held-out prompt.
        max_candidates_factor: Candidates gated per variant, at most this many times
            ``tasks_per_variant``.
    """

    model_config = ConfigDict(extra="forbid")

    k: int = Field(default=5, ge=1, le=50)
    band_min: int = Field(default=2, ge=0)
    band_max: int = Field(default=4, ge=0)
    near_duplicate_jaccard: float = Field(default=0.9, gt=0.0, le=1.0)
    near_duplicate_ratio: float = Field(default=0.92, gt=0.0, le=1.0)
    max_candidates_factor: int = Field(default=3, ge=1, le=20)

    @model_validator(mode="after")
    def _band_inside_k(self) -> GateConfig:
        if not 0 <= self.band_min <= self.band_max <= self.k:
            raise ValueError(f"baseline band [{self.band_min}, {self.band_max}] must lie inside [0, k={self.k}]")
        return self


class VariantRequest(BaseModel):
    """Ask a factory for environment variants that stress given weaknesses.

    Attributes:
        protocol_version: Protocol version of the request.
        domain: Built-in domain to vary.
        targets: Weighted weakness targets (none: untargeted variants).
        variants: Number of variants.
        tasks_per_variant: Tasks wanted per variant (the gate may accept fewer).
        complexity: Complexity level 1-5; scales the world's messiness rates.
        seed: Generation seed; the same request and seed give the same packs.
        idempotency_key: Submitting again with the same key returns the same request id.
        parent_pack_id: Base pack the variants derive from (default: the domain's seed-0 pack).
        baseline_model: Current model for the baseline gate: ``reference`` (initial reference
            policy), ``reference-expert``, ``reference-failure:<mode>`` or a parameter artifact path.
        baseline_params: Reference-policy parameters given inline (overrides ``baseline_model``).
        gate: Quality gate settings.
    """

    model_config = ConfigDict(extra="forbid")

    protocol_version: int = PROTOCOL_VERSION
    domain: str = Field(min_length=1, max_length=80)
    targets: list[WeaknessTarget] = Field(default_factory=list, max_length=50)
    variants: int = Field(default=1, ge=1, le=500)
    tasks_per_variant: int = Field(default=10, ge=1, le=200)
    complexity: int = Field(default=3, ge=1, le=5)
    seed: int = Field(default=0, ge=0, le=2**63 - 1)
    idempotency_key: str | None = Field(default=None, min_length=1, max_length=200)
    parent_pack_id: str | None = Field(default=None, pattern=r"^[0-9a-f]{64}$")
    baseline_model: str = Field(default="reference", min_length=1, max_length=500)
    baseline_params: dict[str, Any] | None = None
    gate: GateConfig = Field(default_factory=GateConfig)

    def fingerprint(self) -> str:
        """sha256 of the request without its idempotency key: equal fingerprints give equal packs."""
        data = self.model_dump(mode="json", exclude={"idempotency_key"})
        return hashlib.sha256(json.dumps(data, sort_keys=True).encode()).hexdigest()

    def request_id(self) -> str:
        """The request's id: derived from the fingerprint and the idempotency key."""
        key = f"{self.fingerprint()}|{self.idempotency_key or ''}"
        return "req-" + hashlib.sha256(key.encode()).hexdigest()[:24]


class SubmitResponse(BaseModel):
    """The answer to a submitted request.

    Attributes:
        protocol_version: Protocol version of the answer.
        request_id: Id to poll.
        created: ``False`` when an earlier submission with the same id was found.
    """

    model_config = ConfigDict(extra="forbid")

    protocol_version: int = PROTOCOL_VERSION
    request_id: str
    created: bool = True


class GateCount(BaseModel):
    """How many candidate tasks one gate judged, and how many it let through.

    Attributes:
        checked: Candidates that reached the gate.
        accepted: Candidates that passed it.
    """

    model_config = ConfigDict(extra="forbid")

    checked: int = 0
    accepted: int = 0

    @property
    def rejected(self) -> int:
        """Candidates the gate refused."""
        return self.checked - self.accepted

    @property
    def rate(self) -> float:
        """Share of the checked candidates that passed (1.0 when none were checked)."""
        return self.accepted / self.checked if self.checked else 1.0


class TaskRejection(BaseModel):
    """A candidate task the gate refused.

    Attributes:
        variant: Variant index.
        task_id: Task id in the variant.
        gate: The gate that refused it (see ``GATES``).
        reason: Why, naming the values concerned.
    """

    model_config = ConfigDict(extra="forbid")

    variant: int
    task_id: str
    gate: str
    reason: str


class DroppedVariant(BaseModel):
    """A variant that produced no pack.

    Attributes:
        variant: Variant index.
        reason: Why (no accepted task, or a generation error).
    """

    model_config = ConfigDict(extra="forbid")

    variant: int
    reason: str


class GateReport(BaseModel):
    """What the quality gate accepted and rejected, and why.

    Attributes:
        candidates: Candidate tasks gated.
        accepted: Tasks accepted into packs.
        gates: Per gate (see ``GATES``), how many candidates it checked and accepted.
        rejections: Every refused candidate with its gate and reason.
        dropped_variants: Variants that produced no pack.
        baseline_passes: Histogram of baseline passes (``"0"`` .. ``"k"``) over the candidates that reached
            the baseline gate.
    """

    model_config = ConfigDict(extra="forbid")

    candidates: int = 0
    accepted: int = 0
    gates: dict[str, GateCount] = Field(default_factory=lambda: {g: GateCount() for g in GATES})
    rejections: list[TaskRejection] = Field(default_factory=list)
    dropped_variants: list[DroppedVariant] = Field(default_factory=list)
    baseline_passes: dict[str, int] = Field(default_factory=dict)

    def merge(self, other: GateReport) -> None:
        """Add ``other``'s counts and lists to this report."""
        self.candidates += other.candidates
        self.accepted += other.accepted
        for name, count in other.gates.items():
            mine = self.gates.setdefault(name, GateCount())
            mine.checked += count.checked
            mine.accepted += count.accepted
        self.rejections.extend(other.rejections)
        self.dropped_variants.extend(other.dropped_variants)
        for passes, n in other.baseline_passes.items():
            self.baseline_passes[passes] = self.baseline_passes.get(passes, 0) + n

    @property
    def acceptance_rate(self) -> float:
        """Share of candidates accepted (0.0 when there were none)."""
        return self.accepted / self.candidates if self.candidates else 0.0


class RequestStatus(BaseModel):
    """Where a request stands.

    Attributes:
        protocol_version: Protocol version of the answer.
        request_id: The request.
        state: ``queued``, ``running``, ``done``, ``failed`` or ``cancelled``.
        progress: Fraction of variants finished (0-1).
        message: Human-readable detail (the error when ``failed``).
        pack_ids: Ids of the packs produced so far.
    """

    model_config = ConfigDict(extra="forbid")

    protocol_version: int = PROTOCOL_VERSION
    request_id: str
    state: RequestState
    progress: float = Field(default=0.0, ge=0.0, le=1.0)
    message: str = ""
    pack_ids: list[str] = Field(default_factory=list)


class PackInfo(BaseModel):
    """One downloadable pack of a finished request.

    Attributes:
        id: Content id of the pack.
        sha256: sha256 of the pack's tar.gz archive.
        size: Archive size in bytes.
        domain: Domain of the pack.
        tasks: Number of tasks in the pack.
        variant: Variant index within the request.
    """

    model_config = ConfigDict(extra="forbid")

    id: str = Field(pattern=r"^[0-9a-f]{64}$")
    sha256: str = Field(pattern=r"^[0-9a-f]{64}$")
    size: int = Field(ge=0)
    domain: str
    tasks: int = Field(ge=0)
    variant: int = Field(ge=0)


class PackList(BaseModel):
    """The packs of a finished request and the gate's report.

    Attributes:
        protocol_version: Protocol version of the answer.
        request_id: The request.
        packs: Downloadable packs.
        gate_report: What the quality gate accepted and rejected.
    """

    model_config = ConfigDict(extra="forbid")

    protocol_version: int = PROTOCOL_VERSION
    request_id: str
    packs: list[PackInfo] = Field(default_factory=list)
    gate_report: GateReport = Field(default_factory=GateReport)


class ErrorBody(BaseModel):
    """An error answer.

    Attributes:
        detail: What went wrong, naming the bad value.
    """

    model_config = ConfigDict(extra="forbid")

    detail: str


class ServiceInfo(BaseModel):
    """What a factory service is.

    Attributes:
        protocol_version: Protocol version it speaks.
        generator: Generator name.
        generator_version: Generator version.
        domains: Domains it can vary.
    """

    model_config = ConfigDict(extra="forbid")

    protocol_version: int = PROTOCOL_VERSION
    generator: str
    generator_version: str
    domains: list[str] = Field(default_factory=list)

"""Parameters and results of gymloop's flows (pydantic, so Prefect validates and shows them)."""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import AfterValidator, BaseModel, ConfigDict, Field, field_validator, model_validator

from arena.core.flips import Flips

CAMPAIGN_NAME = r"^[A-Za-z0-9_.-]+$"
"""Campaign names: letters, digits, ``_ . -`` (they name folders, so never ``.`` or ``..``)."""


def check_campaign_name(name: str) -> str:
    """Return ``name`` if it is a campaign name.

    Raises:
        ValueError: It is ``.`` or ``..`` (a campaign's folder would escape the campaigns folder).
    """
    if name in (".", ".."):
        raise ValueError(f"campaign name {name!r} would name a folder outside the campaigns folder")
    return name


def no_secret_overrides(overrides: dict[str, Any]) -> dict[str, Any]:
    """Refuse flow-parameter overrides that carry secrets (``flows.settings.refuse_secret_overrides``).

    Raises:
        ValueError: An override is a secret setting, or a URL or model endpoint holding a password or token.
    """
    # flows.settings loads when a flow's parameters are validated: flows.cli imports this module at start-up.
    from flows.settings import refuse_secret_overrides

    return refuse_secret_overrides(overrides)


def hide_secret_overrides(data: Any) -> Any:
    """Replace secret override values before validation sees them (``flows.settings.hide_secret_overrides``)."""
    # flows.settings loads when a flow's parameters are validated: flows.cli imports this module at start-up.
    from flows.settings import hide_secret_overrides as hide

    return hide(data)


Control = Literal["uniform", "random-variants", "none"]
"""Control arms a campaign may run beside its targeted arm (see ``flows.control``)."""

Arm = Literal["targeted", "uniform", "random-variants"]
"""A campaign's arms: ``targeted`` (the loop as configured) and the controls run beside it."""


class RoundParams(BaseModel):
    """Which round to run.

    Attributes:
        campaign: Campaign name (created with its first round).
        round_index: Round index within the arm (0-based).
        arm: The campaign's arm the round belongs to (its settings get ``arm`` set to it).
        overrides: Settings overriding gymloop.toml and GYMLOOP_* (never secrets).
        accept_change: A change of gyms or measuring settings from the campaign's baseline starts a new baseline
            at this round instead of stopping it (``flows.campaign_config``).
        sources: Where each override came from on the machine that gave it (an option, a variable, a file),
            named in the line of a change.
    """

    model_config = ConfigDict(extra="forbid", hide_input_in_errors=True)

    campaign: Annotated[str, AfterValidator(check_campaign_name)] = Field(min_length=1, max_length=200,
                                                                          pattern=CAMPAIGN_NAME)
    round_index: int = Field(ge=0)
    arm: Arm = "targeted"
    overrides: dict[str, Any] = Field(default_factory=dict)
    accept_change: bool = False
    sources: dict[str, str] = Field(default_factory=dict)

    _hide_secrets = model_validator(mode="before")(hide_secret_overrides)
    _no_secrets = field_validator("overrides")(no_secret_overrides)


class CampaignParams(BaseModel):
    """A campaign: rounds until a stop rule fires.

    Attributes:
        campaign: Campaign name (created with its first round; an existing one continues, every arm of it).
        rounds: Rounds to run at most in this call, per arm (default: the ``max_rounds`` setting).
        control: A control arm to add beside the targeted one (arms already in the registry always run).
        overrides: Settings overriding gymloop.toml and GYMLOOP_* (never secrets).
        accept_change: The next round starts a new baseline when the gyms or measuring settings changed.
        sources: Where each override came from on the machine that gave it (an option, a variable, a file),
            named in the line of a change.
    """

    model_config = ConfigDict(extra="forbid", hide_input_in_errors=True)

    campaign: Annotated[str, AfterValidator(check_campaign_name)] = Field(min_length=1, max_length=200,
                                                                          pattern=CAMPAIGN_NAME)
    rounds: int | None = Field(default=None, ge=1)
    control: Control = "none"
    overrides: dict[str, Any] = Field(default_factory=dict)
    accept_change: bool = False
    sources: dict[str, str] = Field(default_factory=dict)

    _hide_secrets = model_validator(mode="before")(hide_secret_overrides)
    _no_secrets = field_validator("overrides")(no_secret_overrides)


class StageResult(BaseModel):
    """Episodes of one stage of a round.

    Attributes:
        stage: ``eval_before``, ``train`` or ``eval_after``.
        planned: Episodes the stage asks for.
        ran: Episodes run in this call.
        reused: Episodes already in the registry (skipped or copied).
        seconds: Wall-clock time of the stage.
    """

    model_config = ConfigDict(extra="forbid")

    stage: str
    planned: int = 0
    ran: int = 0
    reused: int = 0
    seconds: float = 0.0


class TransferResult(BaseModel):
    """A transfer suite's held-out pass rate before and after a round: a gym the campaign never trains or diagnoses.

    Attributes:
        suite: The suite (a gym's name).
        tasks: Held-out tasks of the suite played on each side.
        episodes: Episodes played on each side (tasks x eval seeds x eval_k).
        invalid: Invalid episodes of both sides (left out of the pass rates).
        before: Held-out pass rate of the round's model in.
        after: Held-out pass rate of the round's model out.
        lift: Pass-rate change on the same tasks (``after - before`` over the tasks both sides have).
        lift_low: Lower bound of the lift's 95% interval (paired bootstrap over tasks).
        lift_high: Upper bound of the lift's interval.
    """

    model_config = ConfigDict(extra="forbid")

    suite: str
    tasks: int
    episodes: int
    invalid: int = 0
    before: float
    after: float
    lift: float
    lift_low: float
    lift_high: float


class Promotion(BaseModel):
    """Whether a round's model was promoted (``@best``/``@current``, the next round's start), and why.

    Attributes:
        promoted: The round's model passed the promotion bounds (``flows.promotion``).
        reason: The bounds and the values read (e.g. ``lift lower bound -0.050 < promote_min_lift_low +0.000``).
    """

    model_config = ConfigDict(extra="forbid")

    promoted: bool = True
    reason: str = ""


class RoundSummary(BaseModel):
    """The outcome of one round.

    Attributes:
        campaign: Campaign name.
        round_index: Round index.
        round_id: Registry id of the round.
        arm: The campaign's arm.
        model_in: Reference of the model evaluated and trained.
        model_out: Reference of the trained model.
        before: Held-out pass rate of ``model_in``.
        after: Held-out pass rate of ``model_out``.
        lift: ``after - before``.
        lift_low: Lower bound of the lift's 95% interval (paired bootstrap over tasks).
        lift_high: Upper bound of the lift's interval.
        weaknesses: Weakness kinds, by rank (each kind once: the failures it explains, all its grains together).
        variants: Variant packs the factory added this round.
        wave_size: Tasks in the wave.
        episodes: Episodes run or reused in the round, by stage.
        metrics: Every metric logged for the round.
        baseline: The campaign baseline the round is measured against (0 until a change is accepted).
        baseline_change: The change the round accepted, starting its baseline (``None`` for the others).
        transfer: Each transfer suite's pass rates before and after the round, with the paired lift.
        flips: Held-out tasks the round flipped pass->fail and fail->pass, over the tasks the lift pairs (``None``
            for a round recorded before flips were measured).
        template_flips: The same for each template (``domain/template``) of the held-out tasks.
        promotion: Whether the round's model was promoted, and why (``flows.promotion``).
    """

    model_config = ConfigDict(extra="forbid")

    campaign: str
    round_index: int
    round_id: int
    arm: Arm = "targeted"
    model_in: str
    model_out: str
    before: float
    after: float
    lift: float
    lift_low: float
    lift_high: float
    weaknesses: list[str] = Field(default_factory=list)
    variants: int = 0
    wave_size: int = 0
    episodes: dict[str, StageResult] = Field(default_factory=dict)
    metrics: dict[str, float] = Field(default_factory=dict)
    baseline: int = 0
    baseline_change: str | None = None
    transfer: list[TransferResult] = Field(default_factory=list)
    flips: Flips | None = None
    template_flips: dict[str, Flips] = Field(default_factory=dict)
    promotion: Promotion = Field(default_factory=Promotion)


class WeaknessChange(BaseModel):
    """One targeted weakness's failures per held-out episode before and after a round.

    Attributes:
        grain: The weakness at its grain (``kind``, ``kind@domain`` or ``kind@domain/tool``).
        before: Failed held-out episodes showing it, per held-out episode, before the round.
        after: The same after the round.
        fell: Whether the rate fell.
    """

    model_config = ConfigDict(extra="forbid")

    grain: str
    before: float
    after: float
    fell: bool


class ArmComparison(BaseModel):
    """The targeted arm against a control after one round.

    Attributes:
        round_index: Round index.
        control: The control arm.
        targeted_after: Targeted arm's held-out pass rate after the round.
        control_after: Control arm's held-out pass rate after the round.
        lift: ``targeted_after - control_after``, paired over the same held-out tasks.
        low: Lower bound of the 95% paired bootstrap interval.
        high: Upper bound.
        weaknesses: The targeted weaknesses' rates before and after the round (targeted arm).
    """

    model_config = ConfigDict(extra="forbid")

    round_index: int
    control: str
    targeted_after: float
    control_after: float
    lift: float
    low: float
    high: float
    weaknesses: list[WeaknessChange] = Field(default_factory=list)


class CampaignOutcome(BaseModel):
    """What one run of the campaign driver did, every arm of it.

    Attributes:
        campaign: Campaign name.
        arms: The campaign's arms, targeted first.
        rounds: The rounds run now, in the order they ran (each names its arm).
        comparisons: Targeting lift against each control after every round both arms finished.
        stopped: Why each arm that stopped did (a stop rule, with the values it read).
    """

    model_config = ConfigDict(extra="forbid")

    campaign: str
    arms: list[Arm] = Field(default_factory=list)
    rounds: list[RoundSummary] = Field(default_factory=list)
    comparisons: list[ArmComparison] = Field(default_factory=list)
    stopped: dict[str, str] = Field(default_factory=dict)

    def arm_rounds(self, arm: str = "targeted") -> list[RoundSummary]:
        """The rounds of one arm run now."""
        return [r for r in self.rounds if r.arm == arm]

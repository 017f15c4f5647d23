"""Parameters and results of gymloop's flows (pydantic, so Prefect validates and shows them)."""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import AfterValidator, BaseModel, ConfigDict, Field, field_validator, model_validator

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
    from flows.settings import refuse_secret_overrides

    return refuse_secret_overrides(overrides)


def hide_secret_overrides(data: Any) -> Any:
    """Replace secret override values before validation sees them (``flows.settings.hide_secret_overrides``)."""
    from flows.settings import hide_secret_overrides as hide

    return hide(data)


Control = Literal["uniform", "random-variants", "none"]
"""Control arms a campaign may run beside its targeted arm (see ``flows.control``)."""


class RoundParams(BaseModel):
    """Which round to run.

    Attributes:
        campaign: Campaign name (created on first use).
        round_index: Round index within the campaign (0-based).
        overrides: Settings overriding gymloop.toml and GYMLOOP_* (never secrets).
    """

    model_config = ConfigDict(extra="forbid", hide_input_in_errors=True)

    campaign: Annotated[str, AfterValidator(check_campaign_name)] = Field(min_length=1, max_length=200,
                                                                          pattern=CAMPAIGN_NAME)
    round_index: int = Field(ge=0)
    overrides: dict[str, Any] = Field(default_factory=dict)

    _hide_secrets = model_validator(mode="before")(hide_secret_overrides)
    _no_secrets = field_validator("overrides")(no_secret_overrides)


class CampaignParams(BaseModel):
    """A campaign: rounds until a stop rule fires.

    Attributes:
        campaign: Campaign name (created on first use; an existing one continues).
        rounds: Rounds to run at most in this call (default: the ``max_rounds`` setting).
        overrides: Settings overriding gymloop.toml and GYMLOOP_* (never secrets).
    """

    model_config = ConfigDict(extra="forbid", hide_input_in_errors=True)

    campaign: Annotated[str, AfterValidator(check_campaign_name)] = Field(min_length=1, max_length=200,
                                                                          pattern=CAMPAIGN_NAME)
    rounds: int | None = Field(default=None, ge=1)
    overrides: dict[str, Any] = Field(default_factory=dict)

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


class RoundSummary(BaseModel):
    """The outcome of one round.

    Attributes:
        campaign: Campaign name.
        round_index: Round index.
        round_id: Registry id of the round.
        model_in: Reference of the model evaluated and trained.
        model_out: Reference of the trained model.
        before: Held-out pass rate of ``model_in``.
        after: Held-out pass rate of ``model_out``.
        lift: ``after - before``.
        lift_low: Lower bound of the lift's 95% interval (paired bootstrap over tasks).
        lift_high: Upper bound of the lift's interval.
        weaknesses: Weakness kinds, by rank.
        variants: Variant packs the factory added this round.
        wave_size: Tasks in the wave.
        episodes: Episodes run or reused in the round, by stage.
        metrics: Every metric logged for the round.
    """

    model_config = ConfigDict(extra="forbid")

    campaign: str
    round_index: int
    round_id: int
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

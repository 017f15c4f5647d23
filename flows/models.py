"""Parameters and results of gymloop's flows (pydantic, so Prefect validates and shows them)."""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import AfterValidator, BaseModel, ConfigDict, Field, field_validator

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
    """Refuse flow-parameter overrides that carry secrets: Prefect stores and shows flow parameters.

    Raises:
        ValueError: An override is a secret setting, or a URL setting holding a password or token.
    """
    from arena.core.redact import MASK, url_secrets
    from flows.model_spec import endpoint_of
    from flows.settings import SECRET_SETTINGS, URL_SETTINGS

    for name, value in overrides.items():
        if name == "model" and isinstance(value, str) and set(url_secrets(endpoint_of(value) or "")) - {MASK}:
            raise ValueError("override 'model' names an endpoint with a password or token: set api_base in "
                             "gymloop.toml or GYMLOOP_API_BASE where the flow runs, never as a flow parameter")
        if name in SECRET_SETTINGS:
            raise ValueError(f"override {name!r} is a secret: set it in gymloop.toml or GYMLOOP_{name.upper()} "
                             "where the flow runs, never as a flow parameter")
        if name in URL_SETTINGS and isinstance(value, str) and url_secrets(value):
            raise ValueError(f"override {name!r} holds a URL with a password or token: set it in gymloop.toml or "
                             f"GYMLOOP_{name.upper()} where the flow runs, never as a flow parameter")
    return overrides

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

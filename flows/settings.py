"""gymloop settings: ``gymloop.toml`` and ``GYMLOOP_*`` variables, validated with pydantic, read in sections.

Every setting has one flat name, the name users write: ``eval_k = 4`` in gymloop.toml, ``GYMLOOP_EVAL_K=4``,
``load_settings(eval_k=4)``. In code a setting lives in its section (``settings.evaluation.eval_k``): the campaign's
sections (``models``, ``gyms``, ``evaluation``, ``transfer``, ``gate``, ``curriculum``, ``training``, ``stop``,
``promotion``, ``runner``) are what a campaign records when it is created (``flows.campaign_config``); the machine's
sections (``store``, ``serving``) and the settings in :data:`LOCAL_SETTINGS` (secrets, endpoints, where gym code
lives) are resolved where each process runs and never recorded.

Precedence: explicit arguments, then ``GYMLOOP_*`` environment variables, then ``gymloop.toml`` (in the working
directory or at ``GYMLOOP_CONFIG``), then defaults. A bad setting stops with a message naming it and where it came
from.

Adding a setting: add a field to the section it belongs to (its name is the setting's name everywhere; the
variable is ``GYMLOOP_<NAME>``), with a ``Field`` description-worthy line in the section's docstring. A campaign
records it from then on (a campaign recorded before reads the default). A setting that changes how a round is
measured belongs to ``gyms`` or ``evaluation``: a change there stops a running campaign's next round
(``flows.campaign_config.MEASURED_SECTIONS``). A secret, an endpoint or a path of this machine goes to
:data:`LOCAL_SETTINGS` (and a secret to :data:`SECRET_SETTINGS`).
"""

from __future__ import annotations

import difflib
import importlib.util
import os
import re
from collections.abc import Mapping, Sequence
from functools import cache
from pathlib import Path
from typing import Any, Literal
from urllib.parse import urlsplit

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    SecretStr,
    ValidationError,
    ValidationInfo,
    create_model,
    field_validator,
    model_validator,
)
from pydantic_settings import BaseSettings, EnvSettingsSource, TomlConfigSettingsSource
from pydantic_settings import SettingsError as SourceError

from arena.agents.transformers_agent import Sampling
from arena.core.domains import BUILTIN_DOMAINS, OPTIONAL_DOMAINS, GymLoadError, available_domains, get_domain
from arena.core.http_auth import token_conflict
from arena.core.model_id import ModelIdError, endpoint_of, parse_model_id
from arena.core.redact import MASK, install_log_redaction, mask_url, redact_text, register_secrets, url_secrets
from arena.core.text import clip
from flows.cli_output import CliError
from flows.model_client import ClientSetting, builtin, choose_client
from trainers.trl import TRLConfig

CONFIG_ENV = "GYMLOOP_CONFIG"
"""Variable naming the settings file (default: ./gymloop.toml)."""

ENV_PREFIX = "GYMLOOP_"
"""Prefix of the variables that set a setting (``GYMLOOP_EVAL_K``)."""

SECRET_SETTINGS = frozenset({"api_key", "factory_token", "serve_token", "serve_operator_token"})
"""Settings that are secrets themselves: never printed, logged, stored or passed as flow parameters."""

LOCAL_SETTINGS = frozenset({"api_base", "api_key", "gym_modules", "tau2_checkout", "factory_url", "factory_token",
                            "docker_host"})
"""Settings of a campaign's sections that belong to the machine a process runs on: never recorded with a campaign
(secrets, endpoints that may hold a password, where gym code is found); each process reads its own."""

ENGINE_PACKAGES = {"dask": "prefect-dask", "ray": "prefect-ray"}
"""Task runner -> the package it needs (installed by the gymloop extra of the same name)."""

URL_SETTINGS = frozenset({"api_base", "registry_url", "mlflow_uri", "factory_url"})
"""Settings whose URLs may carry secrets (userinfo, token-like query values): shown masked."""

MODEL_SETTINGS = frozenset({"user_model", "judge_model"})
"""Settings naming a model whose ``MODEL@URL`` endpoint may carry secrets: shown with the endpoint masked."""


class SettingsError(ValueError):
    """A setting is invalid; the message names it and where it came from."""


def _config_file() -> Path:
    return Path(os.environ.get(CONFIG_ENV, "gymloop.toml"))


class _Section(BaseModel):
    model_config = ConfigDict(extra="forbid", validate_default=True, hide_input_in_errors=True,
                              validate_assignment=False)


class ModelSettings(_Section):
    """Which model a campaign trains and how it is asked (section ``models``).

    Attributes:
        api_base: OpenAI-compatible server of the model (this machine's: never recorded).
        model: The model, any form of ``arena.core.model_id``: ``reference`` (or another built-in policy), a
            registered version, a litellm model string, or ``transformers:<folder>``.
        reference_start: The reference policy's starting parameters, a named set (``untrained``: the documented
            failure modes everywhere; ``few-weak-skills``: competent but for three weak skills, the regime
            ``gymloop demo`` runs in; see ``arena.agents.reference.NAMED_STARTS``).
        api_key: API key for the model provider (a secret: never logged or recorded).
        model_timeout_s: Request timeout for model calls.
        model_retries: Retries of a model request that failed at the provider's side (5xx, 429, a timeout, a lost
            connection), with exponential backoff from 1 s; an episode still failing after them is invalid.
        model_client: How LLM requests are sent: ``litellm`` (any provider) or ``openai`` (the OpenAI protocol
            straight to the OpenAI-compatible server at ``api_base``; about a sixth of litellm's client CPU).
        local_max_new_tokens: Tokens a local checkpoint generates per turn in evaluation and rollouts.
        local_max_steps: Model turns of a local checkpoint in one episode.
        local_train_sampling: How a local checkpoint samples its training rollouts and the factory gate's baseline
            attempts (temperature, top-p, top-k; each rollout draws from its own seed, so a task's attempts differ
            and each repeats exactly).
    """

    api_base: str | None = None
    model: str = "reference"
    reference_start: Literal["untrained", "few-weak-skills"] = "untrained"
    api_key: SecretStr | None = None
    model_timeout_s: float = Field(default=60.0, gt=0)
    model_retries: int = Field(default=4, ge=0, le=20)
    model_client: ClientSetting = "auto"
    local_max_new_tokens: int = Field(default=256, ge=1)
    local_max_steps: int = Field(default=8, ge=1)
    local_train_sampling: Sampling = Field(default_factory=lambda: Sampling(temperature=1.0))

    @field_validator("model")
    @classmethod
    def _model_form(cls, value: str, info: ValidationInfo) -> str:
        try:
            spec = parse_model_id(value, api_base=info.data.get("api_base"))
            if spec.form == "builtin":
                builtin(spec)
        except ModelIdError as exc:
            raise ValueError(str(exc)) from None
        return value

    @field_validator("api_key")
    @classmethod
    def _key_beside_userinfo(cls, value: SecretStr | None, info: ValidationInfo) -> SecretStr | None:
        """Refuse a key the model's server would never see: an OpenAI-compatible endpoint with a user and password.

        Both go in the one ``Authorization`` header (the password as HTTP basic auth, the key as a bearer token):
        the HTTP clients either drop the key for the password or refuse the request.
        """
        model, api_base = info.data.get("model"), info.data.get("api_base")
        if value is None or not isinstance(model, str):
            return value
        spec = parse_model_id(model, api_base=api_base)
        if spec.form == "llm" and spec.endpoint and "@" in urlsplit(spec.endpoint).netloc \
                and choose_client(spec, "auto").client == "openai":
            raise ValueError("api_base holds a user and password (sent as HTTP basic auth) and api_key is set (sent "
                             "as a bearer token): an OpenAI-compatible server gets both in the one Authorization "
                             "header; keep the one the server checks (api_key, or the userinfo of api_base)")
        return value

    @model_validator(mode="after")
    def _one_endpoint(self) -> ModelSettings:
        """Keep a model's endpoint in ``api_base`` alone (``m@URL`` splits), and checkpoint folders absolute."""
        spec = parse_model_id(self.model, api_base=self.api_base)
        if spec.form == "llm":
            self.model, self.api_base = spec.name, spec.endpoint
        elif spec.form == "transformers":
            self.model = spec.label
        return self


class GymSettings(_Section):
    """The gyms a campaign trains and is judged in (section ``gyms``).

    Attributes:
        gym_modules: Modules defining gyms from outside gymloop (``DOMAIN = make_domain(...)`` in each), imported
            by the gym registry in every process, worker processes included, from the folder of gymloop.toml or
            ``sys.path``; gyms of installed packages register by the entry-point group ``gymloop.gyms`` instead.
            Read from gymloop.toml or ``GYMLOOP_GYM_MODULES`` only (``arena.core.domains``); this machine's.
        domains: Gyms the campaign trains and evaluates in (built-in, or external: see ``gym_modules``).
        tasks: Task-id patterns (shell-style, e.g. ``issue_status-*``) that the campaign practises and is judged
            on, and that ``gymloop eval`` plays: a task of any pack, variants included, is in when its id matches
            one of them (empty: every task). A team whose model knows some of a gym's workflows focuses its rounds
            on them; each pattern must match a task of the campaign's gyms.
        gym_knobs: Knobs of each gym's base pack, by gym (``{"tracker": {"tasks_per_template": 18}}``; a gym not
            named keeps its defaults): more tasks of each template give a larger held-out suite and training pool in
            the same world. Names are checked here, values when the pack is built (``gymloop gyms show GYM``
            lists a gym's knobs).
        tau2_checkout: A τ²-bench checkout to read the τ²-bench gyms' data from instead of the ``tau2`` extra's
            packages (read from gymloop.toml or ``GYMLOOP_TAU2_CHECKOUT`` by the gyms themselves); this machine's.
    """

    gym_modules: list[str] = Field(default_factory=list)
    domains: list[str] = Field(default_factory=lambda: list(BUILTIN_DOMAINS))
    tasks: list[str] = Field(default_factory=list)
    gym_knobs: dict[str, dict[str, Any]] = Field(default_factory=dict)
    tau2_checkout: str | None = None

    @field_validator("domains")
    @classmethod
    def _known_domains(cls, value: list[str]) -> list[str]:
        installed = available_domains()  # a gym of gym_modules or an entry point that cannot load stops here
        unknown = [d for d in value if d not in installed]
        if unknown or not value:
            raise ValueError(f"unknown domain(s) {unknown or value}; installed gyms: {', '.join(installed)}")
        return value

    @field_validator("gym_knobs")
    @classmethod
    def _knobs_of_campaign_gyms(cls, value: dict[str, dict[str, Any]],
                                info: ValidationInfo) -> dict[str, dict[str, Any]]:
        domains = info.data.get("domains") or []
        for gym, knobs in value.items():
            if gym not in domains:
                raise ValueError(f"gym_knobs names gym {gym!r}, which is not one of the campaign's domains "
                                 f"({', '.join(domains)})")
            known = get_domain(gym).knobs
            unknown = sorted(set(knobs) - set(known))
            if unknown:
                raise ValueError(f"unknown {gym} knob(s) {unknown} in gym_knobs; known knobs: "
                                 f"{', '.join(sorted(known))}")
        return value

    @field_validator("tasks")
    @classmethod
    def _task_patterns(cls, value: list[str]) -> list[str]:
        blank = [p for p in value if not p.strip()]
        if blank:
            raise ValueError(f"task pattern {blank[0]!r} is blank; give task ids or shell-style patterns "
                             "such as 'issue_status-*'")
        return value


class EvaluationSettings(_Section):
    """How the held-out suite is played and judged (section ``evaluation``).

    Attributes:
        eval_k: Attempts per held-out task.
        eval_seeds: Episode seeds of the held-out evaluation.
        local_eval_sampling: How a local checkpoint decodes on the held-out suite (greedy by default).
        max_invalid_share: Largest share of a stage's episodes that may be invalid (excluded from pass rates
            and training, e.g. model-API failures); a round past it fails with the count and the causes.
        user_model: The model that plays the simulated users of conversational gyms (τ²-bench's): any litellm
            model string, or ``MODEL@URL`` for an OpenAI-compatible server; its requests are counted apart from the
            agent's (``None``: the scripted user plays them, offline).
        judge_model: The model that judges the statements of conversational tasks only a model can check
            (τ²-bench's NL assertions), in the same forms as ``user_model``; ``None`` leaves them unjudged (reported
            on each verdict, never counted as passed).
    """

    eval_k: int = Field(default=4, ge=1, le=64)
    eval_seeds: list[int] = Field(default_factory=lambda: [0])
    local_eval_sampling: Sampling = Field(default_factory=Sampling)
    max_invalid_share: float = Field(default=0.2, ge=0, le=1)
    user_model: str | None = None
    judge_model: str | None = None

    @field_validator("user_model", "judge_model")
    @classmethod
    def _conversation_model_is_an_llm(cls, value: str | None, info: ValidationInfo) -> str | None:
        if value is None:
            return value
        try:
            spec = parse_model_id(value)
        except ModelIdError as exc:
            raise ValueError(str(exc)) from None
        if spec.form != "llm":
            unset = "the scripted user" if info.field_name == "user_model" else "unjudged statements"
            raise ValueError(f"{info.field_name} {spec.label!r} is not a language model: give a litellm model string "
                             f"or MODEL@URL (leave it unset for {unset})")
        return value


class TransferSettings(_Section):
    """Evaluation-only suites of a campaign, evaluated before and after each round (section ``transfer``).

    A transfer suite is a gym the campaign never trains, diagnoses or asks variants of: each round plays its
    held-out split with the model it starts from and the model it trains, and reports the lift beside the in-gym
    one (``flows.transfer``).

    Attributes:
        transfer_suites: Names of the suites, installed gyms not in ``domains`` (none by default), e.g.
            ``["tau2-retail", "bfcl-multi-turn"]``.
        transfer_tasks: Most held-out tasks played per suite and side, spread evenly over the split in task-id order
            (each played eval_seeds x eval_k times); 40 keeps a round's cost near its in-gym evaluation's
            (BFCL's held-out split has 640 tasks).
    """

    transfer_suites: list[str] = Field(default_factory=list)
    transfer_tasks: int = Field(default=40, ge=1, le=10_000)

    @field_validator("transfer_suites")
    @classmethod
    def _known_suites(cls, value: list[str]) -> list[str]:
        installed = available_domains()
        for name in value:
            if name in installed:
                continue
            if name in OPTIONAL_DOMAINS:
                raise ValueError(f"transfer suite {name!r} needs its data: {OPTIONAL_DOMAINS[name].install}")
            raise ValueError(f"unknown transfer suite {name!r}; installed gyms: {', '.join(installed)}")
        repeated = sorted({n for n in value if value.count(n) > 1})
        if repeated:
            raise ValueError(f"transfer suite {repeated[0]!r} is named twice")
        return value


class GateSettings(_Section):
    """Where variants come from and what the factory's quality gate keeps (section ``gate``).

    Attributes:
        factory_url: URL of a remote factory (default: the embedded local factory; this machine's).
        factory_token: Bearer token sent to a remote factory (a secret).
        variants_per_round: Variants requested from the factory each round.
        tasks_per_variant: Tasks per requested variant.
        gate_k: Baseline attempts in the factory's quality gate.
        gate_band_min: Fewest of those baseline attempts that must pass for a generated task to be kept (default
            2, or gate_k when it is smaller).
        gate_band_max: Most of those baseline attempts that may pass for a generated task to be kept (default 4,
            or gate_k when it is smaller).
    """

    factory_url: str | None = None
    factory_token: SecretStr | None = None
    variants_per_round: int = Field(default=2, ge=0, le=100)
    tasks_per_variant: int = Field(default=10, ge=1, le=200)
    gate_k: int = Field(default=5, ge=1, le=20)
    gate_band_min: int = Field(default=2, ge=0, le=20)
    gate_band_max: int = Field(default=4, ge=0, le=20)

    @field_validator("factory_token")
    @classmethod
    def _token_beside_userinfo(cls, value: SecretStr | None, info: ValidationInfo) -> SecretStr | None:
        url = info.data.get("factory_url")
        conflict = token_conflict(url, value, url_setting="factory_url", token_setting="factory_token") \
            if isinstance(url, str) else None
        if conflict is not None:
            raise ValueError(conflict)
        return value

    @model_validator(mode="before")
    @classmethod
    def _gate_band_follows_a_small_k(cls, data: Any) -> Any:
        """A band left unset fits a ``gate_k`` below its defaults (gate_k 1: band [1, 1]); a band set is kept."""
        if not isinstance(data, dict):
            return data
        try:
            k = int(data.get("gate_k", cls.model_fields["gate_k"].default))
        except (TypeError, ValueError):
            return data  # the field's own validation names the bad gate_k
        for name in ("gate_band_min", "gate_band_max"):
            default = cls.model_fields[name].default
            if name not in data and 0 <= k < default:
                data = {**data, name: k}
        return data

    @field_validator("gate_band_max")
    @classmethod
    def _gate_band_inside_k(cls, value: int, info: ValidationInfo) -> int:
        low, k = info.data.get("gate_band_min"), info.data.get("gate_k")
        if low is not None and k is not None and not low <= value <= k:
            raise ValueError(f"the gate band [gate_band_min {low}, gate_band_max {value}] must lie inside "
                             f"[0, gate_k {k}]")
        return value


class CurriculumSettings(_Section):
    """How each round's wave is planned (section ``curriculum``).

    Attributes:
        strategy: Curriculum strategy (targeted, uniform, bandit).
        arm: The arm this campaign plays: ``targeted`` (the loop as configured), or a control arm run beside a
            targeted campaign (``uniform``: uniform waves over the base pool, no variants; ``random-variants``:
            untargeted variants, uniform waves); see ``flows.control``.
        wave_budget: Training episodes per round.
        train_k: Rollouts per task in a training group.
        retention_per_flip: The retention share of a targeted wave: training tasks of a template replayed first per
            held-out task of it the model lost (pass->fail) in the round that produced it (0: none; ``curriculum``).
        seed: Campaign seed.
    """

    strategy: Literal["targeted", "uniform", "bandit"] = "targeted"
    arm: Literal["targeted", "uniform", "random-variants"] = "targeted"
    wave_budget: int = Field(default=1200, ge=0)
    train_k: int = Field(default=6, ge=2, le=64)
    retention_per_flip: int = Field(default=0, ge=0, le=64)
    seed: int = 0


class TrainingSettings(_Section):
    """How the model is trained on a wave (section ``training``).

    Attributes:
        trainer: Trainer name (builtin, export, command, trl).
        trainer_command: Command for the ``command`` trainer.
        credit: Credit assignment of the ``builtin`` trainer: ``episode`` (a rollout's advantage spread over all
            its decisions) or ``decision`` (a group trains only the decisions a diagnosis of its failed rollouts
            names; ``trainers.credit``).
        trl: Settings of the ``trl`` trainer (method, steps, LoRA, ...; ``[trl]`` in gymloop.toml).
    """

    trainer: Literal["builtin", "export", "command", "trl"] = "builtin"
    trainer_command: list[str] = Field(default_factory=list)
    credit: Literal["episode", "decision"] = "episode"
    trl: TRLConfig = Field(default_factory=TRLConfig)


class StopSettings(_Section):
    """When a campaign's arm stops (section ``stop``).

    Attributes:
        max_rounds: Stop after this many rounds.
        plateau_rounds: Stop when lift stayed under ``plateau_lift`` this many rounds.
        plateau_lift: Lift under which a round counts as a plateau.
        target_pass_rate: Stop once the held-out pass rate reaches this.
        episode_budget: Stop once this many episodes ran in the campaign.
        token_budget: Stop the campaign once its rounds used this many model tokens (``None``: no limit).
        cost_budget: Stop the campaign once its rounds cost this many US dollars (``None``: no limit).
    """

    max_rounds: int = Field(default=3, ge=1, le=1000)
    plateau_rounds: int = Field(default=2, ge=1)
    plateau_lift: float = Field(default=0.005, ge=0)
    target_pass_rate: float = Field(default=1.0, gt=0, le=1)
    episode_budget: int = Field(default=1_000_000, ge=1)
    token_budget: int | None = Field(default=None, ge=1)
    cost_budget: float | None = Field(default=None, gt=0)


class PromotionSettings(_Section):
    """When a round's model is promoted: ``@best``/``@current`` and the next round's start (section ``promotion``).

    A round is judged on its held-out suite, paired with the model it started from: the lower bound of its lift's
    95% interval and its pass->fail flips (held-out tasks it lost, ``arena.core.flips``). A round outside a bound is
    recorded, its model kept in the registry and MLflow, but not promoted: the next round starts from the last
    promoted model. Both bounds are unset by default, so every round is promoted (a small held-out suite gives wide
    intervals: a bound on them is the user's call); ``promote_min_lift_low = 0.0`` with ``promote_max_regressions =
    2``, say, refuses a round that may have made things worse.

    Attributes:
        promote_min_lift_low: Lowest lower bound of the round's lift interval that is promoted (``None``: any).
        promote_max_regressions: Most held-out tasks a promoted round may flip pass->fail (``None``: any).
    """

    promote_min_lift_low: float | None = Field(default=None, ge=-1, le=1)
    promote_max_regressions: int | None = Field(default=None, ge=0)


class RunnerSettings(_Section):
    """Where and how a round's episodes run (section ``runner``).

    Attributes:
        task_runner: Prefect task runner: threads, dask or ray.
        workers: Parallel workers for rollouts.
        batch_size: Episodes per Prefect task.
        max_concurrency: LLM episodes in flight inside one rollout worker (an adaptive limit backs off on
            429/503 and timeouts).
        max_model_failures: Stop a stage when this many consecutive LLM episodes fail at the model API.
        arena_backend: Where rollouts play: ``local`` (in this process) or ``docker`` (gym containers).
        docker_image: Gym image the docker backend runs (any gym image serves every pack).
        docker_host: Docker daemon URL (default: ``DOCKER_HOST`` or the local socket; this machine's).
        lease_wait_s: How long a round waits for another process advancing the same campaign before it
            stops with a message naming that process.
        lease_ttl_s: Seconds after which the lease of a process that stopped renewing it (killed) lapses.
        schedule: Cron schedule of the served deployment.
    """

    task_runner: Literal["threads", "dask", "ray"] = "threads"
    workers: int = Field(default=2, ge=1, le=256)
    batch_size: int = Field(default=500, ge=1)
    max_concurrency: int = Field(default=32, ge=1, le=4096)
    max_model_failures: int = Field(default=10, ge=1)
    arena_backend: Literal["local", "docker"] = "local"
    docker_image: str = "gymloop-gym-helpdesk:latest"
    docker_host: str | None = None
    lease_wait_s: float = Field(default=0.0, ge=0)
    lease_ttl_s: float = Field(default=120.0, ge=5)
    schedule: str = "0 2 * * *"

    @field_validator("task_runner")
    @classmethod
    def _engine_installed(cls, value: str) -> str:
        package = ENGINE_PACKAGES.get(value)
        if package and importlib.util.find_spec(package.replace("-", "_")) is None:
            raise ValueError(f"{value} needs {package}, which is not installed: pip install 'gymloop[{value}]'")
        return value

    @field_validator("schedule")
    @classmethod
    def _cron(cls, value: str) -> str:
        if len(value.split()) != 5:
            raise ValueError(f"cron schedule {value!r} must have five fields (minute hour day month weekday)")
        return value


class StoreSettings(_Section):
    """Where this machine keeps state and tracking (section ``store``; never recorded with a campaign).

    Attributes:
        home: Folder for the registry, pack store, artifacts and the local MLflow store.
        registry_url: SQLAlchemy URL of the registry (default: SQLite under ``home``).
        mlflow_uri: MLflow tracking URI (default: SQLite under ``home``).
    """

    home: Path = Field(default_factory=lambda: Path(os.environ.get("GYMLOOP_HOME", Path.home() / ".gymloop")))
    registry_url: str | None = None
    mlflow_uri: str | None = None

    @field_validator("home")
    @classmethod
    def _home_is_a_folder(cls, value: Path) -> Path:
        if value.exists() and not value.is_dir():
            raise ValueError(f"{value} is a file; the gymloop home must be a folder")
        return value


class ServingSettings(_Section):
    """What the HTTP surfaces this machine serves require (section ``serving``; never recorded).

    Attributes:
        serve_token: Bearer token the HTTP surfaces gymloop serves require (factory, gym servers; never logged).
        serve_operator_token: Token an operator of a served gym presents to read each episode's judged details
            (check details, changed rows, trace); agents only ever get the score, passed and per-check pass/fail
            (never logged; ``None``: nobody gets details).
        serve_idle_timeout_s: A served gym drops an episode untouched this long (its client went away).
        serve_client_episodes: Episodes one client of a served gym may hold open at once.
        serve_allowed_hosts: Host names a served gym or factory answers to beyond its loopback names and its
            bind address (e.g. the name a reverse proxy forwards); other Host headers are refused.
    """

    serve_token: SecretStr | None = None
    serve_operator_token: SecretStr | None = None
    serve_idle_timeout_s: float = Field(default=120.0, gt=0)
    serve_client_episodes: int = Field(default=8, ge=1)
    serve_allowed_hosts: list[str] = Field(default_factory=list)


SECTIONS: dict[str, type[_Section]] = {
    "models": ModelSettings, "gyms": GymSettings, "evaluation": EvaluationSettings, "transfer": TransferSettings,
    "gate": GateSettings, "curriculum": CurriculumSettings, "training": TrainingSettings, "stop": StopSettings,
    "promotion": PromotionSettings, "runner": RunnerSettings, "store": StoreSettings, "serving": ServingSettings,
}
"""Every section, by name, in the order they are shown."""

CAMPAIGN_SECTIONS: tuple[str, ...] = ("models", "gyms", "evaluation", "transfer", "gate", "curriculum", "training",
                                      "stop", "promotion", "runner")
"""The sections a campaign records when it is created (without :data:`LOCAL_SETTINGS`)."""

SECTION_OF: dict[str, str] = {name: section for section, model in SECTIONS.items() for name in model.model_fields}
"""The section of every setting, by its name."""


class GymloopSettings(BaseModel):
    """Everything a gymloop command, round or campaign needs to know, in sections (see the module docstring).

    Built from the flat names users write (``GymloopSettings(eval_k=2)`` puts ``eval_k`` in ``evaluation``).
    """

    model_config = ConfigDict(extra="forbid", validate_default=True, hide_input_in_errors=True)

    models: ModelSettings = Field(default_factory=ModelSettings)
    gyms: GymSettings = Field(default_factory=GymSettings)
    evaluation: EvaluationSettings = Field(default_factory=EvaluationSettings)
    transfer: TransferSettings = Field(default_factory=TransferSettings)
    gate: GateSettings = Field(default_factory=GateSettings)
    curriculum: CurriculumSettings = Field(default_factory=CurriculumSettings)
    training: TrainingSettings = Field(default_factory=TrainingSettings)
    stop: StopSettings = Field(default_factory=StopSettings)
    promotion: PromotionSettings = Field(default_factory=PromotionSettings)
    runner: RunnerSettings = Field(default_factory=RunnerSettings)
    store: StoreSettings = Field(default_factory=StoreSettings)
    serving: ServingSettings = Field(default_factory=ServingSettings)

    @model_validator(mode="before")
    @classmethod
    def _into_sections(cls, data: Any) -> Any:
        """Put each setting given by its flat name into its section (unknown names stay, and are refused)."""
        return nest(data) if isinstance(data, dict) else data

    def resolved_registry_url(self) -> str:
        """The registry URL, defaulting to SQLite under ``home``."""
        return self.store.registry_url or f"sqlite:///{self.store.home / 'registry.db'}"

    def resolved_mlflow_uri(self) -> str:
        """The MLflow tracking URI, defaulting to SQLite under ``home``."""
        return self.store.mlflow_uri or f"sqlite:///{self.store.home / 'mlflow.db'}"

    def public_dict(self) -> dict[str, Any]:
        """Settings safe to print, log or record, by flat name: secrets become ``<name>_set`` flags, URLs masked."""
        data = {name: value for section in SECTIONS
                for name, value in getattr(self, section).model_dump(mode="json").items()
                if name not in SECRET_SETTINGS}
        for name in sorted(SECRET_SETTINGS):
            data[f"{name}_set"] = getattr(getattr(self, SECTION_OF[name]), name) is not None
        for name in URL_SETTINGS:
            if isinstance(data.get(name), str):
                data[name] = mask_url(data[name])
        for name in MODEL_SETTINGS:
            endpoint = endpoint_of(data[name]) if isinstance(data.get(name), str) else None
            if endpoint:
                data[name] = data[name].strip().removesuffix(endpoint) + mask_url(endpoint)
        return data

    def secret_values(self) -> list[str]:
        """Every secret these settings hold: secret settings and the secret parts of URL settings."""
        values = [v.get_secret_value() for v in (getattr(getattr(self, SECTION_OF[n]), n) for n in SECRET_SETTINGS)
                  if v is not None]
        for name in URL_SETTINGS:
            url = getattr(getattr(self, SECTION_OF[name]), name)
            if url:
                values.extend(url_secrets(url))
        for name in MODEL_SETTINGS:
            model = getattr(getattr(self, SECTION_OF[name]), name)
            values.extend(url_secrets(endpoint_of(model) or "") if model else [])
        return values


def nest(data: Mapping[str, Any]) -> dict[str, Any]:
    """Settings by flat name -> by section; a section given whole is kept, flat names over it; unknown names stay."""
    out: dict[str, Any] = {}
    for name, value in data.items():
        if name in SECTIONS:
            whole = value.model_dump() if isinstance(value, BaseModel) else value
            out[name] = {**whole, **out.get(name, {})} if isinstance(whole, dict) else whole
        elif name in SECTION_OF:
            section = out.setdefault(SECTION_OF[name], {})
            if isinstance(section, dict):
                section[name] = value
        else:
            out[name] = value
    return out


def setting_name(loc: Sequence[str | int]) -> str:
    """A validation error's location as the setting's name (``("evaluation", "eval_k")`` -> ``eval_k``)."""
    parts = [str(p) for p in loc]
    if parts and parts[0] in SECTIONS:
        parts = parts[1:]
    return ".".join(parts) or "settings"


@cache
def _flat_fields() -> type[BaseSettings]:
    """A settings class with every setting by flat name: what the variables and the file are read against."""
    fields: dict[str, Any] = {name: (info.annotation, None) for model in SECTIONS.values()
                              for name, info in model.model_fields.items()}
    return create_model("FlatSettings", __base__=BaseSettings, **fields)


def _sources() -> dict[str, Any]:
    """What ``GYMLOOP_*`` variables and gymloop.toml give, by flat name: the variables over the file."""
    flat = _flat_fields()
    given: dict[str, Any] = {}
    for source in (TomlConfigSettingsSource(flat, toml_file=_config_file()),
                   EnvSettingsSource(flat, env_prefix=ENV_PREFIX, case_sensitive=False)):
        for name, value in source().items():
            if isinstance(value, dict) and isinstance(given.get(name), dict):
                given[name] = {**given[name], **value}
            elif value is not None:
                given[name] = value
    return given


def machine_overrides(overrides: Mapping[str, Any]) -> dict[str, Any]:
    """The overrides that are this machine's own (``store``, ``serving``, :data:`LOCAL_SETTINGS`).

    They tell a worker where the registry is; what a round plays is read from the registry.
    """
    return {n: v for n, v in overrides.items()
            if n in SECTION_OF and (SECTION_OF[n] not in CAMPAIGN_SECTIONS or n in LOCAL_SETTINGS)}


REFUSED_SECRET = "*** (a secret, refused)"
"""What a secret override value becomes before flow-parameter validation (so no error or log line holds it)."""


def secret_overrides(overrides: Mapping[str, Any]) -> list[str]:
    """The overrides that carry a secret: secret settings, and URLs or model endpoints with a password or token."""
    found = []
    for name, value in overrides.items():
        text = value if isinstance(value, str) else ""
        endpoint = endpoint_of(text) if name == "model" or name in MODEL_SETTINGS else \
            (text if name in URL_SETTINGS else "")
        if name in SECRET_SETTINGS or value == REFUSED_SECRET or set(url_secrets(endpoint or "")) - {MASK}:
            found.append(name)
    return found


def refuse_secret_overrides(overrides: dict[str, Any]) -> dict[str, Any]:
    """Refuse flow-parameter overrides that carry secrets: Prefect stores and shows flow parameters.

    Raises:
        ValueError: An override is a secret setting, or a URL or model endpoint holding a password or token (the
            message names the setting, never its value).
    """
    refused = secret_overrides(overrides)
    if refused:
        where = "api_base" if refused[0] == "model" else refused[0]
        raise ValueError(f"override {refused[0]!r} holds a secret (a key or token, or a password or token in a URL): "
                         f"set {where} in gymloop.toml or GYMLOOP_{where.upper()} where the flow runs, never as a "
                         "flow parameter")
    return overrides


def hide_secret_overrides(data: Any) -> Any:
    """Flow parameters with every secret override value replaced by ``REFUSED_SECRET`` (and masked in logs).

    A model validator (``mode="before"``) of the flows' parameter models: the refusal that follows then holds no
    secret in its error, in pydantic's ``input_value`` or in the lines Prefect logs about it.
    """
    overrides = data.get("overrides") if isinstance(data, dict) else None
    if not isinstance(overrides, dict):
        return data
    refused = secret_overrides(overrides)
    if not refused:
        return data
    values = [overrides[n] for n in refused if isinstance(overrides[n], str)]
    register_secrets([*values, *(s for v in values for s in url_secrets(endpoint_of(v) or v))])
    install_log_redaction()
    return {**data, "overrides": {k: REFUSED_SECRET if k in refused else v for k, v in overrides.items()}}


def load_settings(**overrides: Any) -> GymloopSettings:
    """Load settings, turning validation errors into a ``SettingsError`` naming the setting and its source.

    Raises:
        SettingsError: A setting is invalid or unknown.
    """
    return read_settings(overrides)


def read_settings(overrides: Mapping[str, Any], flags: Mapping[str, str] | None = None) -> GymloopSettings:
    """Read settings the way every command does: ``overrides`` (flags), then ``GYMLOOP_*``, then gymloop.toml.

    Args:
        overrides: Settings given explicitly, by flat name (``None`` values are left to the other sources).
        flags: The command-line option each override came from (``{"eval_k": "--k"}``), named in errors.

    Raises:
        SettingsError: A setting is invalid or unknown; the message names it, where it came from and (masked, never
            for a secret or an unknown name) the refused value.
    """
    given = {k: v for k, v in overrides.items() if v is not None}
    try:
        settings = GymloopSettings.model_validate({**_sources(), **given})
    except ValidationError as exc:
        raise SettingsError(describe(exc, given, flags)) from None
    except SourceError as exc:
        raise SettingsError(_source_problem(str(exc))) from None
    except (OSError, ValueError) as exc:
        raise SettingsError(f"cannot read settings file {_config_file()}: {exc}") from None
    register_secrets(settings.secret_values())
    install_log_redaction()
    return settings


def describe(exc: ValidationError, given: Mapping[str, Any] | None = None,
             flags: Mapping[str, str] | None = None, source: str | None = None) -> str:
    """One line naming each refused setting, where it came from (``source``, else found) and why."""
    problems = []
    for err in exc.errors():
        name = setting_name(err["loc"])
        where = source or _source_of(name.split(".")[0], given or {}, flags or {})
        problems.append(f"setting {name!r} ({where}): {_message(err)}{_shown(name, err)}{_suggestion(name, err)}")
    return "; ".join(problems)


def cli_settings(overrides: Mapping[str, Any] | None = None, flags: Mapping[str, str] | None = None) -> GymloopSettings:
    """``read_settings`` for a command: a bad setting stops it with ``bad setting: ...`` on one line (exit 2).

    Raises:
        CliError: The setting, where it came from, and why it is refused.
    """
    try:
        return read_settings(overrides or {}, flags)
    except SettingsError as exc:
        raise CliError(str(exc), prefix="bad setting") from None


def source_of(name: str, overrides: Mapping[str, Any] | None = None, flags: Mapping[str, str] | None = None) -> str:
    """Where a setting's value came from: an option, the command line, a variable, the file, or the default."""
    return _source_of(name, overrides or {}, flags or {})


def _message(err: Any) -> str:
    """Pydantic's message without its ``Value error, `` prefix (the validators' own sentences)."""
    return str(err["msg"]).removeprefix("Value error, ")


def _shown(name: str, err: Any) -> str:
    """``: got <value>`` for a refused value, masked; nothing for secret settings and unknown names."""
    if err.get("type") == "extra_forbidden" or name.split(".")[0] in SECRET_SETTINGS or "input" not in err:
        return ""
    value = err["input"]
    if not isinstance(value, str | int | float | bool | list) or name.split(".")[0] == "model":
        return ""
    shown = redact_text(repr(value))
    if shown in _message(err) or (isinstance(value, str) and value in _message(err)):
        return ""
    return f": got {clip(shown, 77)}"


def _suggestion(name: str, err: Any) -> str:
    """A 'did you mean' for a mistyped setting name or choice, else nothing."""
    given = err.get("input")
    if err.get("type") == "extra_forbidden":
        *parents, word = name.split(".")
        choices = _field_names(parents)
    elif isinstance(given, str | list):
        words = [given] if isinstance(given, str) else [str(g) for g in given]
        expected = re.findall(r"'([^']*)'", str(err.get("ctx", {}).get("expected", "")))
        choices = expected or _gym_names() + ["targeted", "uniform", "bandit", "builtin", "export", "command",
                                              "threads", "dask", "ray", "auto", "litellm", "openai"]
        word = next((w for w in words if w not in choices), "")
    else:
        return ""
    close = difflib.get_close_matches(word, choices, n=1) if word else []
    return f" (did you mean {close[0]!r}?)" if close else ""


def _field_names(path: Sequence[str]) -> list[str]:
    """The setting names under ``path`` (``[]``: every setting; ``["trl"]``: the ``[trl]`` table's)."""
    if not path:
        return list(SECTION_OF)
    model: Any = SECTIONS[SECTION_OF[path[0]]] if path[0] in SECTION_OF else None
    for part in path:
        field = model.model_fields.get(part) if model is not None else None
        model = field.annotation if field is not None else None
        if not (isinstance(model, type) and issubclass(model, BaseModel)):
            return []
    return list(model.model_fields)


def _gym_names() -> list[str]:
    """The installed gyms' names (the built-in ones when an external gym cannot load: that error comes first)."""
    try:
        return available_domains()
    except GymLoadError:
        return list(BUILTIN_DOMAINS)


def _source_problem(message: str) -> str:
    """Say which variable or file holds a value pydantic-settings could not even parse, and what it must be."""
    found = re.search(r'field "(\w+)" from source "(\w+)"', message)
    if not found:
        return f"cannot read settings: {message}"
    name, source = found.groups()
    if source == "EnvSettingsSource":
        var = f"{ENV_PREFIX}{name.upper()}"
        shown = redact_text(os.environ.get(var, ""))
        return (f"setting {name!r} (environment variable {var}={shown!r}): the value must be "
                f"JSON for a list or mapping, e.g. {var}='[\"helpdesk\", \"tracker\"]'")
    return f"setting {name!r} (file {_config_file()}): {message}"


def _source_of(name: str, overrides: Mapping[str, Any], flags: Mapping[str, str]) -> str:
    if name in flags and overrides.get(name) is not None:
        return f"option {flags[name]}"
    if overrides.get(name) is not None:
        return "command line"
    if f"{ENV_PREFIX}{name.upper()}" in os.environ:
        return f"environment variable {ENV_PREFIX}{name.upper()}"
    if _config_file().is_file():
        return f"file {_config_file()}"
    return "default"

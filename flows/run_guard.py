"""What ``gymloop round`` and ``campaign`` do around their rounds: preflight, signals, the model breaker, a meter.

- Before any episode, an LLM model must answer one tiny request with a tool and a local checkpoint must load
  (``flows.preflight``); otherwise one line and exit code 2.
- SIGINT/SIGTERM stop the run within seconds, mark the round ``interrupted``, release the campaign's lease,
  mark the run's Prefect flow runs Cancelled and print the command that resumes it (``flows.interrupt``).
- Without a Prefect API configured, the run's temporary Prefect server is started here, tied to this process
  (``flows.prefect_server``): it never outlives the command, even when the command is killed.
- When the circuit breaker stops a stage (the model failed in many consecutive episodes), the round is
  marked ``failed`` with the cause, which is printed on one line; exit code 3.
"""

from __future__ import annotations

import shlex
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING

from rich.console import Console
from rich.progress import ProgressColumn, Task
from rich.text import Text

from arena.core.redact import mask_url
from arena.rollout import ModelUnavailable
from flows.campaign_config import ContractChanged
from flows.cli_output import CliError, make_console
from flows.interrupt import cancel_flow_runs, stop_on_signals
from flows.lease import release_held
from flows.live import RolloutMeter, metering
from flows.model_client import choose_client
from flows.model_spec import check, settings_spec
from flows.prefect_server import temporary_api
from flows.preflight import PreflightError
from flows.registry_access import open_registry
from flows.settings import GymloopSettings
from flows.validity import INVALID_SHARE_EXIT, InvalidEpisodesError
from registry import RegistryError

if TYPE_CHECKING:
    from pathlib import Path

    from arena.agents.base import Agent
    from arena.core.model_id import ModelId

MODEL_UNAVAILABLE_EXIT = 3
"""Exit code when the circuit breaker stopped a round."""


def resume_command() -> str:
    """The command line that started this process, as ``gymloop ...`` (it resumes the same campaign)."""
    return "gymloop " + shlex.join(sys.argv[1:])


def check_model(settings: GymloopSettings, console: Console) -> None:
    """Preflight the settings' model (any form, see ``flows.model_spec``); exit 2 with one line if it fails."""
    preflight_or_exit(settings_spec(settings), settings, console)


def preflight_or_exit(spec: ModelId, settings: GymloopSettings, console: Console, *,
                      params_path: Path | None = None) -> Agent:
    """Build the agent of ``spec`` and preflight it; say once (stderr) which path an LLM's requests take.

    Returns:
        The agent, ready to play.

    Raises:
        CliError: Code 2, ``preflight failed: ...`` on one line, when the model cannot play.
    """
    if spec.form == "llm":
        make_console(stderr=True).print(choose_client(spec, settings.models.model_client).line(spec), soft_wrap=True)
    try:
        return check(spec, settings, params_path=params_path)
    except PreflightError as exc:
        raise CliError(str(exc), prefix="preflight failed") from exc


def mark_stopped(settings: GymloopSettings, campaign: str, status: str, reason: str) -> list[int]:
    """Mark the campaign's running rounds ``interrupted`` or ``failed`` with ``reason``; return their indexes."""
    registry = open_registry(settings)
    try:
        info = registry.campaign(campaign)
    except RegistryError:
        return []
    marked = []
    for r in registry.rounds(info.id):
        if r.status == "running":
            registry.fail_round(r.id, reason, status="interrupted" if status == "interrupted" else "failed")
            marked.append(r.index)
    return marked


class MeterColumn(ProgressColumn):
    """A progress column showing episodes, episodes/s, tokens/s and errors of the running rollouts."""

    def __init__(self, meter: RolloutMeter) -> None:
        super().__init__()
        self.meter = meter

    def render(self, task: Task) -> Text:
        """Render the meter's line."""
        return Text(self.meter.line(), style="cyan")


@contextmanager
def guarded_run(settings: GymloopSettings, campaign: str, console: Console) -> Iterator[RolloutMeter]:
    """Run rounds of ``campaign`` with preflight, signal handling, the breaker's exit and a live meter."""
    check_model(settings, console)


    def on_stop(name: str) -> str:
        # round_tracking loads mlflow: only stopping a campaign's runs needs it (gymloop eval uses this guard).
        from flows.round_tracking import stop_campaign_runs

        marked = mark_stopped(settings, campaign, "interrupted", f"interrupted by {name}")
        release_held()
        cancel_flow_runs(f"gymloop was stopped by {name}; resume with: {resume_command()}")
        stop_campaign_runs(settings, campaign)
        which = f"round {', '.join(map(str, marked))} of " if marked else ""
        return (f"{name}: stopped {which}campaign {campaign}; finished episodes are kept. "
                f"Resume with: {resume_command()}")

    with stop_on_signals(on_stop), temporary_api(), metering() as meter:
        try:
            yield meter
        except InvalidEpisodesError as exc:
            raise CliError(str(exc), exit_code=INVALID_SHARE_EXIT) from exc
        except ContractChanged as exc:
            raise CliError(str(exc), prefix="campaign changed") from exc
        except ModelUnavailable as exc:
            mark_stopped(settings, campaign, "failed", f"model unavailable: {exc.reason}")
            api_base = settings.models.api_base
            where = mask_url(api_base) if api_base else "the provider's default endpoint"
            raise CliError(exc.reason, exit_code=MODEL_UNAVAILABLE_EXIT,
                           prefix=f"model {settings.models.model} at {where} stopped the round") from exc

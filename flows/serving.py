"""``gymloop serve``: a Prefect deployment per campaign, one round at a time, on a cron schedule."""

from __future__ import annotations

import asyncio
from typing import Any

from prefect.client.schemas.schedules import CronSchedule
from prefect.deployments.runner import RunnerDeployment
from prefect.exceptions import TerminationSignal
from prefect.runner import Runner
from prefect.settings import get_current_settings
from pydantic import ValidationError
from rich.console import Console
from rich.text import Text

from flows.campaign import next_round
from flows.models import CampaignParams
from flows.prefect_view import run_tags
from flows.settings import load_settings


class ServeError(RuntimeError):
    """The deployment cannot be served; the message names the bad value and where it came from."""


def check_cron(schedule: str, source: str) -> str:
    """Validate a cron schedule as Prefect will read it.

    Raises:
        ServeError: The schedule is not a valid five-field cron string.
    """
    if len(schedule.split()) != 5:
        raise ServeError(f"cron schedule {schedule!r} ({source}) must have five fields (minute hour day month "
                         "weekday), e.g. '0 2 * * *'")
    try:
        CronSchedule(cron=schedule)
    except ValidationError as exc:
        reason = "; ".join(str(e["msg"]) for e in exc.errors())
        raise ServeError(f"cron schedule {schedule!r} ({source}) is not valid: {reason}") from exc
    return schedule


def api_url() -> str | None:
    """The Prefect API the deployment would register with (``None``: Prefect's temporary server)."""
    url = get_current_settings().api.url
    return str(url) if url else None


def serve_campaign(campaign: str, cron: str | None, overrides: dict[str, Any], console: Console) -> None:
    """Serve ``next-round/<campaign>`` until stopped: concurrency limit one, tagged with the campaign.

    Raises:
        ServeError: No Prefect server is configured, or the cron schedule is bad.
    """
    url = api_url()
    if url is None:
        raise ServeError("PREFECT_API_URL is not set: a served deployment needs a Prefect server that schedules "
                         "and triggers can reach (prefect server start; export "
                         "PREFECT_API_URL=http://127.0.0.1:4200/api)")
    settings = load_settings(**overrides)
    schedule = check_cron(cron, "--cron") if cron else check_cron(settings.runner.schedule, "setting schedule")
    deployment = next_round.to_deployment(
        name=campaign, cron=schedule, concurrency_limit=1, tags=run_tags(campaign),
        parameters={"params": CampaignParams(campaign=campaign, overrides=overrides).model_dump(mode="json")},
        description=f"gymloop: the next curriculum round of campaign {campaign} (one round at a time)",
    )
    if not isinstance(deployment, RunnerDeployment):
        raise TypeError(f"expected a deployment, got {type(deployment).__name__}")
    console.print(Text(f"serving deployment next-round/{campaign} on '{schedule}' at {url} (one round at a time); "
                       f"trigger by hand: prefect deployment run 'next-round/{campaign}'"), soft_wrap=True)
    _serve(deployment)


def _serve(deployment: Any) -> None:
    """Run the deployment's runner until SIGTERM or Ctrl-C, awaiting its shutdown.

    Prefect's own SIGTERM handler calls the runner's ``stop`` from inside the event loop, where it only creates a
    coroutine that nobody awaits (a RuntimeWarning on every stop); this runner schedules the stop on its loop
    instead.
    """

    class _Runner(Runner):
        def handle_sigterm(self, *args: Any, **kwargs: Any) -> None:
            if self.started and getattr(self, "_stopping_task", None) is None:
                self._logger.info("SIGTERM received, stopping the runner")
                self._stopping_task = asyncio.get_event_loop().create_task(self.astop())

    async def run() -> None:
        runner = _Runner(pause_on_shutdown=True)
        await runner.aadd_deployment(deployment)
        await runner.start()

    try:
        asyncio.run(run())
    except (KeyboardInterrupt, TerminationSignal):
        return

"""``gymloop demo | round | campaign | serve | report``: run the loop by hand or on a schedule."""

from __future__ import annotations

import logging
import os
import time
from pathlib import Path
from typing import Annotated, Any

import typer
from rich.console import Console
from rich.progress import BarColumn, Progress, SpinnerColumn, TextColumn, TimeElapsedColumn
from rich.table import Table

from flows.cli_control import campaign_control_line, lift_table, run_with_progress
from flows.models import CampaignParams, Control, RoundSummary
from flows.report import write_report
from flows.settings import GymloopSettings, SettingsError, load_settings
from registry import RegistryError

console = Console()

DEMO_OVERRIDES: dict[str, Any] = {"variants_per_round": 1, "tasks_per_variant": 8, "wave_budget": 360}
"""Settings of the offline demo campaign (reference policy, local factory, SQLite, local MLflow); its wave
(60 tasks x k 6) is smaller than the pool, so the planner really chooses."""

ControlOption = Annotated[Control, typer.Option(
    help="Control arm run beside the targeted one (same budget, starting model and held-out suite): "
         "uniform, random-variants or none.")]


def _overrides(model: str | None, domains: list[str] | None, strategy: str | None) -> dict[str, Any]:
    out: dict[str, Any] = {}
    if model:
        out["model"] = model
    if domains:
        out["domains"] = domains
    if strategy:
        out["strategy"] = strategy
    try:
        load_settings(**out)
    except SettingsError as exc:
        console.print(f"[red]bad setting:[/red] {exc}")
        raise typer.Exit(2) from exc
    return out


def _quiet_prefect() -> None:
    os.environ.setdefault("PREFECT_LOGGING_LEVEL", "WARNING")
    logging.getLogger("mlflow").setLevel(logging.WARNING)


def _table(summaries: list[RoundSummary], title: str) -> Table:
    table = Table(title=title)
    for col in ("round", "model in", "model out", "before", "after", "lift", "95% interval", "top weaknesses"):
        table.add_column(col)
    for s in summaries:
        table.add_row(str(s.round_index), s.model_in, s.model_out, f"{s.before:.3f}", f"{s.after:.3f}",
                      f"{s.lift:+.3f}", f"[{s.lift_low:+.3f}, {s.lift_high:+.3f}]", ", ".join(s.weaknesses[:3]))
    return table


def _campaign_line(name: str, settings: GymloopSettings) -> str:
    from flows import steps

    registry = steps.open_registry(settings)
    before, after, lift, low, high = steps.campaign_lift(registry, name, settings.seed)
    return (f"campaign {name}: held-out pass rate {before:.3f} -> {after:.3f}, lift {lift:+.3f} "
            f"(95% interval [{low:+.3f}, {high:+.3f}], paired over the same held-out tasks)")


def _run_rounds(campaign_name: str, rounds: int, overrides: dict[str, Any]) -> list[RoundSummary]:
    from flows.round import next_round

    summaries: list[RoundSummary] = []
    columns = (SpinnerColumn(), TextColumn("{task.description}"), BarColumn(), TimeElapsedColumn())
    with Progress(*columns, console=console) as progress:
        bar = progress.add_task(f"campaign {campaign_name}", total=rounds)
        for index in range(rounds):
            progress.update(bar, description=f"campaign {campaign_name}: round {index + 1} of {rounds}")
            summaries.append(next_round(CampaignParams(campaign=campaign_name, overrides=overrides)))
            progress.advance(bar)
    return summaries


def demo_command(
    rounds: Annotated[int, typer.Option(min=1, help="Rounds to run.")] = 3,
    home: Annotated[Path | None, typer.Option(help="Folder for the demo's registry and MLflow store.")] = None,
    control: ControlOption = "uniform",
) -> None:
    """Run an offline campaign: reference policy, local factory, SQLite registry, local MLflow store."""
    _quiet_prefect()
    name = f"demo-{time.strftime('%Y%m%d-%H%M%S')}"
    overrides = dict(DEMO_OVERRIDES)
    if home is not None:
        overrides["home"] = str(home)
    settings = load_settings(**overrides)
    started = time.perf_counter()
    paired = run_with_progress(console, name, rounds, overrides, control) if control != "none" else []
    summaries = [p.targeted for p in paired] or _run_rounds(name, rounds, overrides)
    console.print(_table(summaries, f"{name}: held-out lift per round ({time.perf_counter() - started:.0f} s)"))
    console.print(_campaign_line(name, settings))
    if paired:
        console.print(lift_table(paired, f"{name}: targeting lift per round against the {control} control"))
        console.print(campaign_control_line(settings, name, control))
    console.print(f"report: gymloop report {name}" + (f" --home {home}" if home else ""))
    console.print(f"open MLflow: mlflow ui --backend-store-uri {settings.resolved_mlflow_uri()}")


def round_command(
    campaign: Annotated[str, typer.Option(help="Campaign name (created on first use).")] = "default",
    model: Annotated[str | None, typer.Option(help="'reference' or a litellm model string.")] = None,
    domain: Annotated[list[str] | None, typer.Option(help="Gym (repeatable).")] = None,
    strategy: Annotated[str | None, typer.Option(help="targeted, uniform or bandit.")] = None,
) -> None:
    """Run the campaign's next round now (a manual trigger)."""
    _quiet_prefect()
    summaries = _run_rounds(campaign, 1, _overrides(model, domain, strategy))
    console.print(_table(summaries, f"{campaign}: round {summaries[0].round_index}"))


def campaign_command(
    name: Annotated[str, typer.Option("--name", help="Campaign name (an existing one continues).")] = "default",
    rounds: Annotated[int | None, typer.Option(min=1, help="Rounds at most (default: max_rounds).")] = None,
    model: Annotated[str | None, typer.Option(help="'reference' or a litellm model string.")] = None,
    domain: Annotated[list[str] | None, typer.Option(help="Gym (repeatable).")] = None,
    strategy: Annotated[str | None, typer.Option(help="targeted, uniform or bandit.")] = None,
    control: ControlOption = "none",
) -> None:
    """Run rounds until a stop rule fires (plateau, budget, target pass rate) or the round limit."""
    _quiet_prefect()
    if control != "none":
        overrides = _overrides(model, domain, strategy)
        settings = load_settings(**overrides)
        paired = run_with_progress(console, name, rounds or settings.max_rounds, overrides, control, stop_rules=True)
        console.print(_table([p.targeted for p in paired], f"campaign {name}"))
        if paired:
            console.print(_campaign_line(name, settings))
            console.print(lift_table(paired, f"campaign {name}: targeting lift per round against the {control} "
                                             "control"))
            console.print(campaign_control_line(settings, name, control))
        return
    from flows.round import campaign

    overrides = _overrides(model, domain, strategy)
    summaries = campaign(CampaignParams(campaign=name, rounds=rounds, overrides=overrides))
    console.print(_table(summaries, f"campaign {name}"))
    if summaries:
        console.print(_campaign_line(name, load_settings(**overrides)))


def serve_command(
    campaign: Annotated[str, typer.Option(help="Campaign the deployment advances.")] = "nightly",
    cron: Annotated[str | None, typer.Option(help="Cron schedule (default: the schedule setting).")] = None,
    model: Annotated[str | None, typer.Option(help="'reference' or a litellm model string.")] = None,
    domain: Annotated[list[str] | None, typer.Option(help="Gym (repeatable).")] = None,
) -> None:
    """Serve a Prefect deployment that runs the campaign's next round on a cron schedule.

    Needs a Prefect server (``prefect server start``; PREFECT_API_URL pointing at it). Trigger a round by
    hand with ``prefect deployment run 'next-round/<campaign>'``.
    """
    from prefect import serve
    from prefect.deployments.runner import RunnerDeployment

    from flows.round import next_round

    overrides = _overrides(model, domain, None)
    settings = load_settings(**overrides)
    schedule = cron or settings.schedule
    if len(schedule.split()) != 5:
        console.print(f"[red]bad setting:[/red] cron schedule {schedule!r} must have five fields")
        raise typer.Exit(2)
    deployment = next_round.to_deployment(
        name=campaign, cron=schedule,
        parameters={"params": CampaignParams(campaign=campaign, overrides=overrides).model_dump(mode="json")},
        description=f"gymloop: the next curriculum round of campaign {campaign}",
    )
    if not isinstance(deployment, RunnerDeployment):
        raise TypeError(f"expected a deployment, got {type(deployment).__name__}")
    console.print(f"serving deployment next-round/{campaign} on '{schedule}'; "
                  f"trigger by hand: prefect deployment run 'next-round/{campaign}'")
    serve(deployment)


def report_command(
    campaign: Annotated[str, typer.Argument(help="Campaign name.")],
    home: Annotated[Path | None, typer.Option(help="gymloop home holding the campaign.")] = None,
) -> None:
    """Write the campaign's Markdown report with its plots and print where it is."""
    settings = load_settings(**({"home": str(home)} if home else {}))
    folder = settings.home / "campaigns" / campaign
    try:
        path = write_report(folder, campaign, _campaign_line(campaign, settings))
    except (FileNotFoundError, ValueError, RegistryError) as exc:
        console.print(f"[red]{exc}[/red]")
        raise typer.Exit(2) from exc
    console.print(path.read_text())
    console.print(f"wrote {path}")

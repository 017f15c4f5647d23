"""``gymloop demo | round | campaign | serve | report | mlflow-ui``: run the loop by hand or on a schedule."""

from __future__ import annotations

import logging
import os
import re
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer

from arena.core.redact import mask_url
from flows._offline import OFFLINE_DEFAULTS
from flows.cli_output import CliError, make_console, print_json, print_line, print_table
from flows.models import CAMPAIGN_NAME, CampaignParams, Control
from flows.transfer_view import transfer_cell

if TYPE_CHECKING:
    from flows.models import CampaignOutcome, CampaignParams, RoundSummary
    from flows.settings import GymloopSettings

console = make_console()

DEMO_OVERRIDES: dict[str, Any] = {"variants_per_round": 1, "tasks_per_variant": 8, "wave_budget": 360,
                                   "reference_start": "few-weak-skills", "credit": "decision", "tasks": []}
"""Settings of the offline demo campaign (reference policy, local factory, SQLite, local MLflow): a starting model
competent but for a few weak skills, trained with per-decision credit, on every task of its gyms; its wave (60 tasks
x k 6) is smaller than the pool, so the planner really chooses."""

DEMO_REGIME = ("regime: a starting model competent but for 3 weak skills (a missed lookup pattern, a skipped "
               "prerequisite, a legacy date format), half of each update shared across tools: concentrated failures, "
               "partial transfer, where targeting should win; where failures are spread evenly it does not beat "
               "uniform practice (docs/benchmarks.md, 'Curriculum grid (issue 36)')")
"""The one line saying which regime the demo runs in, and where the regime targeting does not win is measured."""

TaskOption = Annotated[list[str] | None, typer.Option(
    help="Task-id pattern the rounds practise and are judged on, shell-style, e.g. 'issue_status-*' (repeatable; "
         "default: the tasks setting, else every task).")]
AcceptChangeOption = Annotated[bool, typer.Option(
    "--accept-change", help="When the gyms or the held-out suite's settings changed since the campaign's baseline, "
                            "measure the next round from a new baseline instead of stopping it.")]
ControlOption = Annotated[Control, typer.Option(
    help="Control arm run beside the targeted one (same budget, starting model and held-out suite): "
         "uniform, random-variants or none.")]

ROUND_COLUMNS = ("round", "model in", "model out", "before", "after", "lift", "95% interval",
                 "pass->fail, fail->pass", "promoted", "transfer lift", "invalid", "after, invalid failed", "tokens",
                 "cost", "top weaknesses")
"""Columns of the round tables (round numbers are the campaign's round indexes, as in MLflow and the report)."""

MODEL_HELP = ("Starting model: 'reference', a litellm model string, 'transformers:<folder>', or a model as gymloop "
              "prints it (reference@v3:<hash>); default: the model setting.")
"""Help of the ``--model`` options (every form ``flows.model_spec`` parses)."""

JsonOption = Annotated[bool, typer.Option("--json", help="Print the result as JSON on stdout (progress on stderr).")]


FLAGS = {"model": "--model", "domains": "--domain", "strategy": "--strategy", "home": "--home", "tasks": "--task"}
"""The option of each setting a run command takes."""


def _settings(**overrides: Any) -> GymloopSettings:
    # Loaded when the command runs, not at gymloop's start-up (tests/flows/test_cli_imports.py).
    from flows.settings import cli_settings

    return cli_settings(overrides, FLAGS)


def _declared(campaign: str, overrides: dict[str, Any], settings: GymloopSettings) -> tuple[dict[str, Any],
                                                                                         dict[str, str]]:
    """The overrides a command gives its rounds and where each came from (``declared_overrides``)."""
    # Loaded when the command runs, not at gymloop's start-up (tests/flows/test_cli_imports.py).
    from flows.campaign_config import declared_overrides
    from flows.registry_access import open_registry

    return declared_overrides(open_registry(settings).baselines(campaign), settings, overrides, FLAGS)


def _overrides(model: str | None, domains: list[str] | None, strategy: str | None,
               tasks: list[str] | None = None) -> dict[str, Any]:
    out: dict[str, Any] = {}
    if model:
        out["model"] = model
    if domains:
        out["domains"] = domains
    if tasks:
        out["tasks"] = tasks
    if strategy:
        out["strategy"] = strategy
    _settings(**out)
    # Loaded when the command runs, not at gymloop's start-up (tests/flows/test_cli_imports.py).
    from flows.settings import refuse_secret_overrides

    try:
        return refuse_secret_overrides(out)
    except ValueError as exc:
        raise CliError(str(exc), prefix="bad setting") from None


def _campaign_name(name: str, option: str) -> str:

    if not re.fullmatch(CAMPAIGN_NAME, name) or len(name) > 200 or name in (".", ".."):
        raise CliError(f"bad campaign name {name!r} ({option}): use 1-200 letters, digits, '_', '.' or '-', "
                       "not '.' or '..'")
    return name


@contextmanager
def _lease(campaign: str, overrides: dict[str, Any]) -> Iterator[None]:
    """Hold the campaign's lease around the flows, so a second trigger stops before starting any."""
    # Loaded when the command runs, not at gymloop's start-up (tests/flows/test_cli_imports.py).
    from flows.lease import CampaignBusy, campaign_lease
    from flows.registry_access import open_registry
    from registry import RegistryError

    settings = _settings(**overrides)
    try:
        registry = open_registry(settings)
        with campaign_lease(registry, campaign, ttl_s=settings.runner.lease_ttl_s, wait_s=settings.runner.lease_wait_s):
            yield
    except CampaignBusy as exc:
        raise CliError(str(exc), exit_code=3, prefix="not started") from exc
    except RegistryError as exc:
        raise CliError(str(exc), prefix="registry error") from exc
    except RuntimeError as exc:
        if "ephemeral Prefect API server" not in str(exc):
            raise
        limit = os.environ.get("PREFECT_SERVER_EPHEMERAL_STARTUP_TIMEOUT_SECONDS", "?")
        raise CliError(f"Prefect's temporary API server did not start within {limit} s (a busy machine?): run a "
                       "server (`prefect server start`, then set PREFECT_API_URL) or raise "
                       "PREFECT_SERVER_EPHEMERAL_STARTUP_TIMEOUT_SECONDS") from exc


def _quiet_prefect() -> None:
    """Keep Prefect's INFO lines off the terminal while they still reach the Prefect API (the run's logs)."""
    os.environ.setdefault("PREFECT_LOGGING_HANDLERS_CONSOLE_LEVEL", "WARNING")
    # MLflow sets its loggers' level from this variable when it is imported (a later setLevel is undone).
    os.environ.setdefault("MLFLOW_LOGGING_LEVEL", "WARNING")
    logging.getLogger("mlflow").setLevel(logging.WARNING)


def _check_focus(settings: GymloopSettings) -> None:
    """Stop before any round runs when a task pattern chooses nothing in the campaign's gyms."""
    # Loaded when the command runs, not at gymloop's start-up (tests/flows/test_cli_imports.py).
    from flows.focus import check_focus
    from flows.packs import gym_pack

    if settings.gyms.tasks:
        try:
            check_focus([gym_pack(settings, d) for d in settings.gyms.domains], settings.gyms.tasks)
        except ValueError as exc:
            raise CliError(str(exc), prefix="bad setting") from None


def _check_transfer(settings: GymloopSettings, overrides: dict[str, Any]) -> None:
    """Stop before any round runs when a transfer suite is also one of the campaign's gyms."""
    # Loaded when the command runs, not at gymloop's start-up (tests/flows/test_cli_imports.py).
    from flows.transfer import check_suites

    try:
        check_suites(settings, overrides, {"domains": "--domain"})
    except ValueError as exc:
        raise CliError(str(exc), prefix="bad setting") from None


def _check_contract(campaign: str, overrides: dict[str, Any], settings: GymloopSettings, accept_change: bool) -> None:
    """Stop before any flow starts when the campaign's next round would be refused for a change (one line)."""
    # Loaded when the command runs, not at gymloop's start-up (tests/flows/test_cli_imports.py).
    from flows.campaign_config import ContractChanged
    from flows.context import check_next_round
    from flows.registry_access import open_registry

    try:
        check_next_round(open_registry(settings), settings, campaign, overrides, accept_change=accept_change)
    except ContractChanged as exc:
        raise CliError(str(exc), prefix="campaign changed") from None


def _check_tracking(settings: GymloopSettings) -> None:
    """Stop before any round runs when the MLflow tracking server does not answer."""
    # Loaded when the command runs, not at gymloop's start-up (tests/flows/test_cli_imports.py).
    from flows.tracking import TrackingUnavailable, check_reachable

    try:
        check_reachable(settings.resolved_mlflow_uri())
    except TrackingUnavailable as exc:
        raise CliError(str(exc)) from exc


def invalid_cell(s: RoundSummary) -> str:
    """Invalid held-out episodes before / after the round, of all (invalid ones are left out of the pass rates)."""
    m = s.metrics
    before, after = int(m.get("invalid_episodes_before", 0)), int(m.get("invalid_episodes_after", 0))
    total = before + after + int(m.get("valid_episodes_before", 0)) + int(m.get("valid_episodes_after", 0))
    return f"{before}/{after} of {total}"


def flips_cell(s: RoundSummary) -> str:
    """Held-out tasks the round flipped pass->fail and fail->pass, of the tasks its lift pairs."""
    f = s.flips
    return "-" if f is None else f"{f.pass_to_fail}, {f.fail_to_pass} of {f.tasks}"


def round_rows(summaries: list[RoundSummary]) -> list[list[str]]:
    """The round table's cells (a control arm's rounds say which arm)."""
    return [[str(s.round_index) + ("" if s.arm == "targeted" else f" ({s.arm})"), s.model_in, s.model_out,
             f"{s.before:.3f}", f"{s.after:.3f}", f"{s.lift:+.3f}",
             f"[{s.lift_low:+.3f}, {s.lift_high:+.3f}]", flips_cell(s), "yes" if s.promotion.promoted else "no",
             transfer_cell(s.transfer), invalid_cell(s),
             f"{s.metrics.get('heldout_pass_rate_after_invalid_failed', s.after):.3f}",
             f"{s.metrics.get('tokens', 0.0):.0f}",
             f"${s.metrics.get('cost_usd', 0.0):.4f}", ", ".join(s.weaknesses[:3])] for s in summaries]


def _print_rounds(summaries: list[RoundSummary], title: str) -> None:
    """The round table; rounds that used no model tokens (an offline model) show no tokens or cost columns.

    With transfer suites, each suite's lift and its paired interval stand beside the in-gym lift; the ``promoted``
    column shows when a round was not promoted (a line below the table gives the reason).
    """
    rows, columns = round_rows(summaries), list(ROUND_COLUMNS)
    dropped = set() if any(s.transfer for s in summaries) else {"transfer lift"}
    if all(s.promotion.promoted for s in summaries):
        dropped.add("promoted")
    if not any(s.metrics.get("tokens", 0.0) or s.metrics.get("cost_usd", 0.0) for s in summaries):
        dropped |= {"tokens", "cost"}
    kept = [i for i, column in enumerate(columns) if column not in dropped]
    rows, columns = [[row[i] for i in kept] for row in rows], [columns[i] for i in kept]
    print_table(console, title, columns, rows, right=("round", "before", "after", "lift"))


def _campaign_lift(name: str, settings: GymloopSettings) -> dict[str, Any]:
    # Loaded when the command runs, not at gymloop's start-up (tests/flows/test_cli_imports.py).
    from flows.outcomes import campaign_flips, campaign_lift
    from flows.registry_access import open_registry

    registry = open_registry(settings)
    before, after, lift, low, high = campaign_lift(registry, name, settings.curriculum.seed)
    flips = campaign_flips(registry, name)
    return {"before": before, "after": after, "lift": lift, "lift_low": low, "lift_high": high,
            "pass_to_fail": flips.pass_to_fail, "fail_to_pass": flips.fail_to_pass, "paired_tasks": flips.tasks}


def _campaign_transfer(name: str, settings: GymloopSettings) -> list[dict[str, Any]]:
    """Each transfer suite over the targeted arm's rounds (first model in against last model out), paired."""
    # Loaded when the command runs, not at gymloop's start-up (tests/flows/test_cli_imports.py).
    from flows.registry_access import open_registry
    from flows.report import campaign_summaries
    from flows.transfer import campaign_results

    registry = open_registry(settings)
    found = campaign_results(registry, campaign_summaries(registry, name), settings.curriculum.seed)
    return [r.model_dump(mode="json") for r in found]


def _campaign_line(name: str, settings: GymloopSettings) -> str:
    # Loaded when the command runs, not at gymloop's start-up (tests/flows/test_cli_imports.py).
    from arena.core.flips import Flips
    from flows.registry_access import open_registry
    from flows.round_tracking import campaign_headline, lift_since

    lift = _campaign_lift(name, settings)
    flips = Flips(tasks=lift["paired_tasks"], pass_to_fail=lift["pass_to_fail"], fail_to_pass=lift["fail_to_pass"])
    return campaign_headline(name, lift["before"], lift["after"], lift["lift"], lift["lift_low"], lift["lift_high"],
                             settings.gyms.tasks, lift_since(open_registry(settings), name), flips)


def _where(name: str, settings: GymloopSettings, home: Path | None = None) -> dict[str, str]:
    """Where a campaign's results are: its report, its MLflow store and experiment, and how to open them."""
    # Loaded when the command runs, not at gymloop's start-up (tests/flows/test_cli_imports.py).
    from flows.round_tracking import runs_url

    report = settings.store.home / "campaigns" / name / "report.md"
    home_env = f"GYMLOOP_HOME={home} " if home else ""
    remote = settings.resolved_mlflow_uri().startswith(("http://", "https://"))
    return {"report": str(report), "mlflow_uri": mask_url(settings.resolved_mlflow_uri()),
            "mlflow_experiment": f"gymloop/{name}", "mlflow_runs_url": runs_url(settings, name),
            "open_mlflow": "" if remote else f"{home_env}gymloop mlflow-ui",
            "rewrite_report": f"gymloop report {name}" + (f" --home {home}" if home else "")}


def _closing(name: str, settings: GymloopSettings, home: Path | None = None) -> None:
    where = _where(name, settings, home)
    print_line(console, f"report: {where['report']}")
    print_line(console, f"MLflow: experiment {where['mlflow_experiment']} in {where['mlflow_uri']}")
    if where["open_mlflow"]:
        print_line(console, f"open MLflow: {where['open_mlflow']}, then {where['mlflow_runs_url']}")
    else:
        print_line(console, f"MLflow runs: {where['mlflow_runs_url']}")


def _drive(params: CampaignParams, settings: GymloopSettings, progress_console: Any, *,
           whole_campaign: bool) -> CampaignOutcome:
    """Run the campaign driver (``campaign``, or ``next_round`` for one round of each arm) with a progress bar."""
    # Loaded when the command runs, not at gymloop's start-up (tests/flows/test_cli_imports.py).
    from rich.progress import BarColumn, Progress, SpinnerColumn, TextColumn, TimeElapsedColumn

    from flows.campaign import campaign, campaign_arms, next_round, on_round
    from flows.prefect_view import tagged
    from flows.registry_access import open_registry
    from flows.run_guard import MeterColumn, guarded_run

    arms = campaign_arms(open_registry(settings), params, settings)
    total = (params.rounds or settings.stop.max_rounds if whole_campaign else 1) * len(arms)
    columns = (SpinnerColumn(), TextColumn("{task.description}"), BarColumn(), TimeElapsedColumn())
    with guarded_run(settings, params.campaign, progress_console) as meter, \
            Progress(*columns, MeterColumn(meter), console=progress_console, transient=True) as progress:
        bar = progress.add_task(f"campaign {params.campaign}", total=total)

        def finished(summary: RoundSummary) -> None:
            progress.advance(bar)
            arm = "" if summary.arm == "targeted" else f" ({summary.arm} arm)"
            progress_console.print(f"round {summary.round_index}{arm}: lift {summary.lift:+.3f} "
                                   f"({summary.before:.3f} -> {summary.after:.3f})", highlight=False)

        with on_round(finished), tagged(params.campaign):
            return campaign(params) if whole_campaign else next_round(params)


def _result(name: str, summaries: list[RoundSummary], settings: GymloopSettings,
            home: Path | None = None, outcome: CampaignOutcome | None = None) -> dict[str, Any]:
    data: dict[str, Any] = {"campaign": name, "rounds": [s.model_dump(mode="json") for s in summaries],
                            **_where(name, settings, home)}
    if any(s.arm == "targeted" for s in summaries):
        data["campaign_lift"] = _campaign_lift(name, settings)
        data["campaign_transfer"] = _campaign_transfer(name, settings)
    if outcome is not None:
        data["arms"] = list(outcome.arms)
        data["control"] = [c.model_dump(mode="json") for c in outcome.comparisons]
        data["stopped"] = dict(outcome.stopped)
    return data


def _print_outcome(outcome: CampaignOutcome, settings: GymloopSettings, title: str, home: Path | None = None) -> None:
    """The round table, the campaign's lift, the targeting lift against each control and why arms stopped."""
    if outcome.rounds:
        _print_rounds(outcome.rounds, title)
    for summary in outcome.rounds:
        if not summary.promotion.promoted:
            arm = "" if summary.arm == "targeted" else f" ({summary.arm} arm)"
            print_line(console, f"round {summary.round_index}{arm} not promoted: {summary.promotion.reason}; the "
                                "next round starts from the last promoted model")
        if summary.baseline_change is not None:
            arm = "" if summary.arm == "targeted" else f" ({summary.arm} arm)"
            print_line(console, f"round {summary.round_index}{arm} starts baseline {summary.baseline} "
                                f"(accepted: {summary.baseline_change}); lifts are not paired across baselines")
    if outcome.arm_rounds("targeted"):
        print_line(console, _campaign_line(outcome.campaign, settings))
    for arm in outcome.arms:
        if arm != "targeted":
            _print_control(outcome, settings, arm)
    for stopped, reason in outcome.stopped.items():
        print_line(console, f"the {stopped} arm stopped: {reason}")
    _closing(outcome.campaign, settings, home)


def demo_command(
    rounds: Annotated[int, typer.Option(min=1, help="Rounds to run.")] = 3,
    home: Annotated[Path | None, typer.Option(help="Folder for the demo's registry and MLflow store.")] = None,
    control: ControlOption = "uniform",
    as_json: JsonOption = False,
) -> None:
    """Run an offline campaign: reference policy, local factory, SQLite registry, local MLflow store."""
    _quiet_prefect()
    name = f"demo-{time.strftime('%Y%m%d-%H%M%S')}"
    overrides = dict(DEMO_OVERRIDES)
    if home is not None:
        overrides["home"] = str(home)
    settings = _settings(**overrides)
    started = time.perf_counter()
    print_line(make_console(stderr=as_json), DEMO_REGIME)
    params = CampaignParams(campaign=name, rounds=rounds, control=control, overrides=overrides)
    outcome = _drive(params, settings, make_console(stderr=as_json), whole_campaign=True)
    if as_json:
        data = _result(name, outcome.rounds, settings, home, outcome)
        data["regime"] = DEMO_REGIME
        print_json(data)
        return
    _print_outcome(outcome, settings, f"{name}: held-out lift per round ({time.perf_counter() - started:.0f} s)", home)


def _print_control(outcome: CampaignOutcome, settings: GymloopSettings, control: str) -> None:
    """The targeting lift per round against a control, and for the campaign."""
    # Loaded when the command runs, not at gymloop's start-up (tests/flows/test_cli_imports.py).
    from flows.cli_control import LIFT_COLUMNS, campaign_control_line, lift_rows

    comparisons = [c for c in outcome.comparisons if c.control == control]
    if comparisons:
        print_table(console, f"{outcome.campaign}: targeting lift per round against the {control} control",
                    LIFT_COLUMNS, lift_rows(comparisons),
                    right=("round", "targeted after", "control after", "targeting lift"))
    try:
        print_line(console, campaign_control_line(settings, outcome.campaign, control))
    except ValueError as exc:
        print_line(console, str(exc))


def round_command(
    campaign: Annotated[str, typer.Option(help="Campaign name (created with its first round).")] = "default",
    model: Annotated[str | None, typer.Option(help=MODEL_HELP)] = None,
    domain: Annotated[list[str] | None, typer.Option(help="Gym (repeatable).")] = None,
    strategy: Annotated[str | None, typer.Option(help="targeted, uniform or bandit.")] = None,
    task: TaskOption = None,
    accept_change: AcceptChangeOption = False,
    as_json: JsonOption = False,
) -> None:
    """Run the campaign's next round now, of every arm (a manual trigger)."""
    _quiet_prefect()
    campaign = _campaign_name(campaign, "--campaign")
    overrides = _overrides(model, domain, strategy, task)
    settings = _settings(**overrides)
    _check_focus(settings)
    _check_transfer(settings, overrides)
    _check_tracking(settings)
    with _lease(campaign, overrides):
        _check_contract(campaign, overrides, settings, accept_change)
        given, sources = _declared(campaign, overrides, settings)
        outcome = _drive(CampaignParams(campaign=campaign, overrides=given, accept_change=accept_change,
                                        sources=sources), settings, make_console(stderr=as_json), whole_campaign=False)
    if as_json:
        print_json(_result(campaign, outcome.rounds, settings, outcome=outcome))
        return
    index = outcome.rounds[0].round_index if outcome.rounds else 0
    _print_outcome(outcome, settings, f"campaign {campaign}: round {index}")


def campaign_command(
    name: Annotated[str, typer.Option("--name", help="Campaign name (an existing one continues).")] = "default",
    rounds: Annotated[int | None, typer.Option(min=1, help="Rounds at most per arm (default: max_rounds).")] = None,
    model: Annotated[str | None, typer.Option(help=MODEL_HELP)] = None,
    domain: Annotated[list[str] | None, typer.Option(help="Gym (repeatable).")] = None,
    strategy: Annotated[str | None, typer.Option(help="targeted, uniform or bandit.")] = None,
    task: TaskOption = None,
    control: ControlOption = "none",
    accept_change: AcceptChangeOption = False,
    as_json: JsonOption = False,
) -> None:
    """Run rounds of every arm until each stops (plateau, budgets, target pass rate) or the round limit."""
    _quiet_prefect()
    name = _campaign_name(name, "--name")
    overrides = _overrides(model, domain, strategy, task)
    settings = _settings(**overrides)
    _check_focus(settings)
    _check_transfer(settings, overrides)
    _check_tracking(settings)
    with _lease(name, overrides):
        _check_contract(name, overrides, settings, accept_change)
        given, sources = _declared(name, overrides, settings)
        params = CampaignParams(campaign=name, rounds=rounds, control=control, overrides=given,
                                accept_change=accept_change, sources=sources)
        outcome = _drive(params, settings, make_console(stderr=as_json), whole_campaign=True)
    if as_json:
        print_json(_result(name, outcome.rounds, settings, outcome=outcome))
        return
    _print_outcome(outcome, settings, f"campaign {name}")


def serve_command(
    campaign: Annotated[str, typer.Option(help="Campaign the deployment advances.")] = "nightly",
    cron: Annotated[str | None, typer.Option(help="Cron schedule (default: the schedule setting).")] = None,
    model: Annotated[str | None, typer.Option(help=MODEL_HELP)] = None,
    domain: Annotated[list[str] | None, typer.Option(help="Gym (repeatable).")] = None,
) -> None:
    """Serve a Prefect deployment that runs the campaign's next round on a cron schedule.

    Needs a Prefect server (``prefect server start``; PREFECT_API_URL pointing at it). One round of a campaign
    runs at a time: a trigger while a round runs waits for it. Trigger a round by hand with
    ``prefect deployment run 'next-round/<campaign>'``.
    """
    # Loaded when the command runs, not at gymloop's start-up (tests/flows/test_cli_imports.py).
    from flows.serving import ServeError, serve_campaign

    campaign = _campaign_name(campaign, "--campaign")
    overrides = _overrides(model, domain, None)
    try:
        serve_campaign(campaign, cron, overrides, console)
    except ServeError as exc:
        raise CliError(str(exc)) from exc


def report_command(
    campaign: Annotated[str, typer.Argument(help="Campaign name.")],
    home: Annotated[Path | None, typer.Option(help="gymloop home holding the campaign.")] = None,
    as_json: JsonOption = False,
) -> None:
    """Write the campaign's Markdown report with its plots and print where it is."""
    # Loaded when the command runs, not at gymloop's start-up (tests/flows/test_cli_imports.py).
    from flows.control import control_markdown
    from flows.registry_access import open_registry
    from flows.report import campaign_summaries, write_report
    from flows.round_files import arm_dir
    from registry import RegistryError

    campaign = _campaign_name(campaign, "CAMPAIGN")
    settings = _settings(**({"home": str(home)} if home else {}))
    folder = arm_dir(settings, campaign)
    try:
        registry = open_registry(settings)
        summaries = campaign_summaries(registry, campaign)
        path = write_report(registry, folder, campaign, _campaign_line(campaign, settings),
                            extra=control_markdown(settings, registry, campaign), seed=settings.curriculum.seed)
    except (ValueError, RegistryError) as exc:
        raise CliError(str(exc)) from exc
    if as_json:
        print_json({**_result(campaign, summaries, settings, home), "report": str(path),
                    "plots": [str(folder / "lift_per_round.png"), str(folder / "weaknesses_by_round.png")]})
        return
    # Loaded when the command runs, not at gymloop's start-up (tests/flows/test_cli_imports.py).
    from flows.report_view import print_report

    print_report(console, path)
    print_line(console, f"wrote {path}")


def mlflow_ui_command(
    ctx: typer.Context,
    port: Annotated[int, typer.Option(help="Port of the MLflow UI.")] = 5000,
    host: Annotated[str, typer.Option(help="Address to bind (loopback by default).")] = "127.0.0.1",
    workers: Annotated[int, typer.Option(min=1, help="Server processes (one is plenty for one user).")] = 1,
    jobs: Annotated[bool, typer.Option(
        help="Start MLflow's job runner too (GenAI judges and scorers; gymloop needs none).")] = False,
    home: Annotated[Path | None, typer.Option(help="gymloop home whose store to open.")] = None,
) -> None:
    """Open gymloop's MLflow store in ``mlflow ui``, sized for a laptop (extra options go to mlflow).

    One server process and no job runner unless asked; the offline switches are set. The UI opens a campaign's
    experiment on its runs, in gymloop's view (``mlflow server --app-name gymloop``); links gymloop prints from
    now on point at this address.
    """
    # Loaded when the command runs, not at gymloop's start-up (tests/flows/test_cli_imports.py).
    from flows.mlflow_ui import APP_NAME
    from flows.tracking import UI_ADDRESS_FILE, runs_view_url

    settings = _settings(**({"home": str(home)} if home else {}))
    uri = settings.resolved_mlflow_uri()
    if uri.startswith(("http://", "https://")):
        print_line(console, f"MLflow runs on a tracking server: open {mask_url(uri)}")
        return
    address = f"http://{host}:{port}"
    settings.store.home.mkdir(parents=True, exist_ok=True)
    (settings.store.home / UI_ADDRESS_FILE).write_text(address + "\n", encoding="utf-8")
    print_line(console, f"MLflow UI on {address} for {mask_url(uri)} ({workers} worker"
                        f"{'s' if workers > 1 else ''}{', job runner on' if jobs else ''})")
    print_line(console, f"experiments: {address}/#/experiments (a campaign opens on its runs)")
    for name, experiment_id in _campaign_experiments(uri):
        print_line(console, f"campaign {name}: {runs_view_url(address, experiment_id)}")
    sys.stdout.flush()
    env = {**OFFLINE_DEFAULTS, **os.environ, "MLFLOW_SERVER_ENABLE_JOB_EXECUTION": "true" if jobs else "false"}
    args = [sys.executable, "-m", "mlflow", "ui", "--backend-store-uri", uri, "--host", host, "--port", str(port),
            "--workers", str(workers), "--app-name", APP_NAME, *ctx.args]
    os.execve(sys.executable, args, env)


def _campaign_experiments(uri: str, limit: int = 10) -> list[tuple[str, str]]:
    """The newest gymloop campaigns in a local MLflow store: (campaign, experiment id), newest first."""
    if uri.startswith("sqlite:///") and not Path(uri.removeprefix("sqlite:///")).is_file():
        return []
    # Loaded when the command runs, not at gymloop's start-up (tests/flows/test_cli_imports.py).
    from mlflow.tracking import MlflowClient

    experiments = MlflowClient(tracking_uri=uri).search_experiments(
        filter_string="name LIKE 'gymloop/%'", order_by=["creation_time DESC"], max_results=limit)
    return [(e.name.removeprefix("gymloop/"), str(e.experiment_id)) for e in experiments]

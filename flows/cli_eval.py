"""``gymloop eval``: evaluate a model on the built-in gyms and write its episodes."""

from __future__ import annotations

import time
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer

from arena.core.domains import available_domains
from arena.core.redact import mask_url
from flows.cli_output import CliError, make_console, print_json, print_line, print_table

if TYPE_CHECKING:
    from arena.core.episode import EpisodeRecord
    from arena.core.metrics import Estimate, Metrics

console = make_console()


def _row(label: str, m: Metrics) -> list[str]:
    def fmt(e: Estimate) -> str:
        return f"{e.value:.2f} [{e.low:.2f}, {e.high:.2f}]"

    return [label, str(m.episodes), str(m.invalid), fmt(m.pass_rate), fmt(m.pass_rate_invalid_failed),
            fmt(m.mean_score), fmt(m.pass_at_k), fmt(m.pass_hat_k)]


def validity_line(m: Metrics) -> str:
    """Valid and invalid episodes and the causes of the invalid ones, in one line."""
    causes = ", ".join(f"{cause} x{n}" for cause, n in m.invalid_causes.items()) or "none"
    return (f"{m.episodes} valid and {m.invalid} invalid episodes (invalid: the infrastructure failed, left out of "
            f"the pass rate; causes: {causes}); pass rate {m.pass_rate.value:.3f}, "
            f"{m.pass_rate_invalid_failed.value:.3f} with invalid episodes counted as failed")


class EpisodeWriter:
    """Writes episodes to a JSON-lines file as they finish, so an interrupted run keeps what it played.

    Args:
        path: The file (created with its folder; an existing file is replaced).
    """

    def __init__(self, path: Path) -> None:
        path.parent.mkdir(parents=True, exist_ok=True)
        self.path = path
        self.written = 0
        self._fh = path.open("w", encoding="utf-8")

    def write(self, record: EpisodeRecord) -> None:
        """Append one episode and flush it to disk."""
        self._fh.write(record.model_dump_json() + "\n")
        self._fh.flush()
        self.written += 1

    def close(self) -> None:
        """Close the file."""
        self._fh.close()


EVAL_FLAGS = {"model": "--model", "api_base": "--api-base", "model_client": "--client", "domains": "--domain",
              "eval_k": "--k", "eval_seeds": "--seed", "max_concurrency": "--max-concurrency",
              "max_model_failures": "--max-model-failures", "max_invalid_share": "--max-invalid-share",
              "tasks": "--task", "user_model": "--user-model", "judge_model": "--judge-model"}
"""The settings ``eval``'s options give (flags > ``GYMLOOP_*`` > gymloop.toml, like every command)."""


def eval_command(
    model: Annotated[str | None, typer.Option(help=(
        "'reference', a litellm model string, 'transformers:<folder>', or a model as gymloop prints it "
        "(reference@v3:<hash>); default: the model setting."))] = None,
    domain: Annotated[list[str] | None, typer.Option(help="Gym to evaluate in (repeatable; default: domains).")] = None,
    split: Annotated[str, typer.Option(help="train, heldout or all.")] = "heldout",
    task: Annotated[list[str] | None, typer.Option(help=(
        "Task-id pattern, shell-style, e.g. 'issue_status-*' (repeatable; default: the tasks setting, "
        "else every task)."))] = None,
    k: Annotated[int | None, typer.Option(help="Attempts per task and seed (default: eval_k).")] = None,
    seeds: Annotated[list[int] | None, typer.Option("--seed", help="Episode seed (repeatable; default: eval_seeds).")
                     ] = None,
    workers: Annotated[int, typer.Option(
        min=1, help="Parallel worker processes (one plays ~1,000 LLM episodes/s on the openai path).")] = 1,
    max_concurrency: Annotated[int | None, typer.Option(
        help="LLM episodes in flight per worker (default: max_concurrency; 1 for reference).")] = None,
    api_base: Annotated[str | None, typer.Option(help="OpenAI-compatible server (default: api_base).")] = None,
    client: Annotated[str | None, typer.Option(
        help="How LLM requests go: auto (openai for an OpenAI-compatible endpoint, else litellm), litellm or openai "
             "(default: model_client).")] = None,
    params: Annotated[Path | None, typer.Option(help="Reference-policy parameter file.")] = None,
    out: Annotated[Path, typer.Option(help="Where to write the episodes (JSONL).")] = Path("episodes.jsonl"),
    as_json: Annotated[bool, typer.Option("--json", help="Print the metrics as JSON on stdout.")] = False,
    max_model_failures: Annotated[int | None, typer.Option(
        help="Stop when this many LLM episodes in a row fail at the model API (default: max_model_failures).")
                                  ] = None,
    max_invalid_share: Annotated[float | None, typer.Option(
        help="Fail (exit 4) when a larger share of episodes is invalid, the infrastructure having failed "
        "(default: max_invalid_share, 0.2).")] = None,
    user_model: Annotated[str | None, typer.Option(help=(
        "The model that plays the simulated users of conversational gyms (tau2-airline, tau2-retail): a litellm "
        "model string or MODEL@URL (default: user_model; unset: the scripted user)."))] = None,
    judge_model: Annotated[str | None, typer.Option(help=(
        "The model that judges what only a model can check in a conversation (tau2-retail's NL assertions), in "
        "the forms of --user-model (default: judge_model; unset: they are reported unjudged)."))] = None,
) -> None:
    """Evaluate MODEL on tasks x seeds x k attempts, print metrics and write the episodes.

    Options left out come from GYMLOOP_* variables, then gymloop.toml, as for every command.
    """
    # Loaded when the command runs, not at gymloop's start-up (tests/flows/test_cli_imports.py).
    from rich.progress import Progress

    from arena.agents.litellm_agent import LiteLLMAgent
    from arena.core.metrics import compute_metrics, metrics_by
    from arena.core.pack import build_pack
    from arena.rollout import ModelUnavailable, RolloutConfig, RolloutStopped, plan_episodes, run_rollouts
    from flows.conversation import conversation_config, converses, preflight_user, unjudged_line, users_line
    from flows.focus import check_focus, in_focus
    from flows.interrupt import EXIT_HANDLERS_S, GRACE_S, batch_running, stop_on_signals
    from flows.live import RolloutMeter
    from flows.model_spec import settings_spec
    from flows.preflight import PreflightError
    from flows.run_guard import MODEL_UNAVAILABLE_EXIT, MeterColumn, preflight_or_exit
    from flows.settings import cli_settings
    from flows.validity import INVALID_SHARE_EXIT, invalid_share_message

    settings = cli_settings({"model": model, "api_base": api_base, "model_client": client, "domains": domain,
                             "tasks": task, "eval_k": k, "eval_seeds": seeds, "max_concurrency": max_concurrency,
                             "max_model_failures": max_model_failures, "max_invalid_share": max_invalid_share,
                             "user_model": user_model, "judge_model": judge_model},
                            EVAL_FLAGS)
    domains = settings.gyms.domains
    unknown = [d for d in domains if d not in available_domains()]
    if unknown:
        raise typer.BadParameter(f"unknown domain(s) {unknown}; built-in: {available_domains()}", param_hint="--domain")
    if split not in ("train", "heldout", "all"):
        raise typer.BadParameter(f"split {split!r} is not train, heldout or all", param_hint="--split")
    spec = settings_spec(settings)
    if params is not None and spec.label != "reference":
        raise typer.BadParameter(f"--params plays reference-policy parameters; the model is {spec.label!r}",
                                 param_hint="--params")
    try:
        agent = preflight_or_exit(spec, settings, console, params_path=params)
    except ValueError as exc:
        raise typer.BadParameter(str(exc), param_hint="--params") from None
    k = settings.evaluation.eval_k
    llm = isinstance(agent, LiteLLMAgent)
    packs = [build_pack(d, seed=0, knobs=settings.gyms.gym_knobs.get(d)) for d in domains]
    try:
        check_focus(packs, settings.gyms.tasks, heldout=split != "train")
    except ValueError as exc:
        raise typer.BadParameter(str(exc), param_hint="--task") from None
    focus = settings.gyms.tasks
    chosen = [t.id for p in packs for t in p.tasks if in_focus(t.id, focus)] if focus else None
    conversation = conversation_config(settings)
    if converses(packs):
        try:
            preflight_user(conversation)
        except PreflightError as exc:
            raise CliError(str(exc), prefix="preflight failed") from exc
    config = RolloutConfig(
        seeds=settings.evaluation.eval_seeds, k=k, split=None if split == "all" else split, task_ids=chosen,
        executor="process" if workers > 1 else "inline", workers=workers,
        max_concurrency=settings.runner.max_concurrency if llm else 1,
        max_model_failures=settings.runner.max_model_failures if llm else None, conversation=conversation,
    )
    total = len(plan_episodes(packs, config))
    replacing = out.exists()
    try:
        writer = EpisodeWriter(out)
    except OSError as exc:
        raise typer.BadParameter(f"{out}: cannot write episodes there ({exc.strerror})", param_hint="--out") from None

    meter = RolloutMeter()

    def finished(record: EpisodeRecord) -> None:
        writer.write(record)
        meter.add(record)
        progress.advance(bar)

    def on_stop(name: str) -> str:
        return f"{name}: stopped the evaluation; {writer.written} of {total} episodes written to {out}"

    try:
        with stop_on_signals(on_stop), batch_running() as stop, \
                Progress(*Progress.get_default_columns(), MeterColumn(meter), console=make_console(stderr=True),
                         transient=True) as progress:
            bar = progress.add_task(f"evaluating {agent.model_ref}", total=total)
            records = run_rollouts(agent, packs, config, on_episode=finished, stop=stop)
    except ModelUnavailable as exc:
        where = mask_url(settings.models.api_base) if settings.models.api_base else "the provider's default endpoint"
        raise CliError(f"{exc.reason}; {len(exc.records)} episodes written to {out}",
                       exit_code=MODEL_UNAVAILABLE_EXIT,
                       prefix=f"model {spec.name} at {where} stopped the evaluation") from exc
    except RolloutStopped:  # a signal: its watcher prints what was kept and ends the process
        time.sleep(GRACE_S + EXIT_HANDLERS_S + 5)
        raise
    finally:
        writer.close()
    groups = {"all": compute_metrics(records, k=k)}
    groups.update({f"domain {n}": m for n, m in metrics_by(records, lambda r: [r.domain], k=k).items()})
    groups.update({f"category {n}": m for n, m in metrics_by(records, lambda r: [r.category], k=k).items()})
    overall = groups["all"]
    complaint = invalid_share_message(overall.episodes + overall.invalid, overall.invalid_causes,
                                      settings.evaluation.max_invalid_share,
                                      "evaluation")
    if as_json:
        data: dict[str, Any] = {"model": agent.model_ref, "split": split, "k": k, "episodes_file": str(out),
                                "valid": overall.episodes, "invalid": overall.invalid,
                                "invalid_causes": overall.invalid_causes,
                                "max_invalid_share": settings.evaluation.max_invalid_share, "error": complaint,
                                "users": users_line(records), "unjudged": unjudged_line(records),
                                "groups": {name: m.model_dump(mode="json") for name, m in groups.items()}}
        print_json(data)
    else:
        print_table(console, f"{agent.model_ref}: {split} split, k={k}",
                    ("group", "valid", "invalid", "pass rate", "invalid as failed", "mean score", f"pass@{k}",
                     f"pass^{k}"), [_row(name, m) for name, m in groups.items()])
        print_line(console, validity_line(overall))
        for line in (users_line(records), unjudged_line(records)):
            if line is not None:
                print_line(console, line)
        print_line(console, f"wrote {len(records)} episodes to {out}"
                   + (" (replacing the episodes it held; --out names another file)" if replacing else ""))
    if complaint is not None:
        make_console(stderr=True).print(f"error: {complaint}", soft_wrap=True, highlight=False, markup=False)
        raise typer.Exit(INVALID_SHARE_EXIT)

"""``gymloop eval``: evaluate a model on the built-in gyms and write its episodes."""

from __future__ import annotations

import time
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any, cast

import typer

from flows.cli_output import CliError, make_console, print_json, print_line, print_table

if TYPE_CHECKING:
    from arena.agents.chat_client import ClientName
    from arena.core.episode import EpisodeRecord
    from arena.core.metrics import Estimate, Metrics

console = make_console()


def _row(label: str, m: Metrics) -> list[str]:
    def fmt(e: Estimate) -> str:
        return f"{e.value:.2f} [{e.low:.2f}, {e.high:.2f}]"

    return [label, str(m.episodes), str(m.invalid), fmt(m.pass_rate), fmt(m.mean_score), fmt(m.pass_at_k),
            fmt(m.pass_hat_k)]


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


def eval_command(
    model: Annotated[str, typer.Option(help="'reference' (offline) or a litellm model string.")] = "reference",
    domain: Annotated[list[str] | None, typer.Option(help="Gym to evaluate in (repeatable; default all).")] = None,
    split: Annotated[str, typer.Option(help="train, heldout or all.")] = "heldout",
    k: Annotated[int, typer.Option(min=1, help="Attempts per task and seed.")] = 4,
    seeds: Annotated[list[int] | None, typer.Option("--seed", help="Episode seed (repeatable).")] = None,
    workers: Annotated[int, typer.Option(
        min=1, help="Parallel worker processes (one plays ~1,000 LLM episodes/s with --client openai).")] = 1,
    max_concurrency: Annotated[int | None, typer.Option(
        min=1, max=4096, help="LLM episodes in flight per worker (default 32 for an LLM, 1 for reference).")] = None,
    api_base: Annotated[str | None, typer.Option(help="OpenAI-compatible server for local checkpoints.")] = None,
    client: Annotated[str, typer.Option(
        help="How LLM requests go: litellm (any provider) or openai (straight to --api-base).")] = "litellm",
    params: Annotated[Path | None, typer.Option(help="Reference-policy parameter file.")] = None,
    out: Annotated[Path, typer.Option(help="Where to write the episodes (JSONL).")] = Path("episodes.jsonl"),
    as_json: Annotated[bool, typer.Option("--json", help="Print the metrics as JSON on stdout.")] = False,
    max_model_failures: Annotated[int, typer.Option(
        min=1, help="Stop when this many LLM episodes in a row fail at the model API.")] = 10,
) -> None:
    """Evaluate MODEL on tasks x seeds x k attempts, print metrics and write the episodes."""
    from rich.progress import Progress

    from arena.agents.litellm_agent import LiteLLMAgent
    from arena.core.domains import available_domains
    from arena.core.metrics import compute_metrics, metrics_by
    from arena.core.pack import build_pack
    from arena.core.redact import mask_url
    from arena.rollout import ModelUnavailable, RolloutConfig, RolloutStopped, plan_episodes, run_rollouts
    from flows.agents import make_agent
    from flows.interrupt import EXIT_HANDLERS_S, GRACE_S, batch_running, stop_on_signals
    from flows.live import RolloutMeter
    from flows.run_guard import MODEL_UNAVAILABLE_EXIT, MeterColumn, check_agent

    domains = domain or available_domains()
    unknown = [d for d in domains if d not in available_domains()]
    if unknown:
        raise typer.BadParameter(f"unknown domain(s) {unknown}; built-in: {available_domains()}", param_hint="--domain")
    if split not in ("train", "heldout", "all"):
        raise typer.BadParameter(f"split {split!r} is not train, heldout or all", param_hint="--split")
    if client not in ("litellm", "openai"):
        raise typer.BadParameter(f"client {client!r} is not litellm or openai", param_hint="--client")
    try:
        agent = make_agent(model, api_base=api_base, params_path=params, client=cast("ClientName", client))
    except ValueError as exc:
        raise typer.BadParameter(str(exc), param_hint="--params") from None
    if isinstance(agent, LiteLLMAgent):
        check_agent(agent.config, console)
    packs = [build_pack(d, seed=0) for d in domains]
    config = RolloutConfig(
        seeds=seeds or [0], k=k, split=None if split == "all" else split,
        executor="process" if workers > 1 else "inline", workers=workers,
        max_concurrency=max_concurrency or (32 if isinstance(agent, LiteLLMAgent) else 1),
        max_model_failures=max_model_failures if isinstance(agent, LiteLLMAgent) else None,
    )
    total = len(plan_episodes(packs, config))
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
        where = mask_url(api_base) if api_base else "the provider's default endpoint"
        raise CliError(f"{exc.reason}; {len(exc.records)} episodes written to {out}",
                       exit_code=MODEL_UNAVAILABLE_EXIT,
                       prefix=f"model {model} at {where} stopped the evaluation") from exc
    except RolloutStopped:  # a signal: its watcher prints what was kept and ends the process
        time.sleep(GRACE_S + EXIT_HANDLERS_S + 5)
        raise
    finally:
        writer.close()
    groups = {"all": compute_metrics(records, k=k)}
    groups.update({f"domain {n}": m for n, m in metrics_by(records, lambda r: [r.domain], k=k).items()})
    groups.update({f"category {n}": m for n, m in metrics_by(records, lambda r: [r.category], k=k).items()})
    if as_json:
        data: dict[str, Any] = {"model": agent.model_ref, "split": split, "k": k, "episodes_file": str(out),
                                "groups": {name: m.model_dump(mode="json") for name, m in groups.items()}}
        print_json(data)
        return
    print_table(console, f"{agent.model_ref}: {split} split, k={k}",
                ("group", "episodes", "invalid", "pass rate", "mean score", f"pass@{k}", f"pass^{k}"),
                [_row(name, m) for name, m in groups.items()])
    print_line(console, f"wrote {len(records)} episodes to {out}")

"""The ``trl`` trainer: GRPO in gymloop's gyms, or SFT on a wave's verified successes, on a local checkpoint.

Methods (``TRLConfig.method``):

- ``grpo``: TRL's ``GRPOTrainer`` with the wave's gyms as environments (``arena.adapters.trl_env``): each dataset
  row is one episode of a wave task, drawn by the wave's weights; the model's tool calls run in a fresh world of the
  row's pack and the reward is the verifier's score;
- ``sft``: rejection sampling: TRL's ``SFTTrainer`` on the tool-calling conversations of the wave's rollouts that
  passed every check (the loss on the assistant's turns only); no success, no new model. With ``demonstrations``,
  each wave task none of whose rollouts passed adds a teacher's verified play (the gold program,
  ``arena.agents.gold``, or the careful reference policy): a checkpoint that never solves a task by chance has
  nothing to keep from its own rollouts there;
- ``sft_grpo``: the SFT warm start (when there are successes), then GRPO.

LoRA (peft) is an option; its adapter is merged before saving, so every checkpoint is a plain transformers folder.
The new checkpoint is written to a staging folder, loaded back to prove it loads, content-hashed, and only then
renamed into place (``<name>-v<N>-<hash>``): a run that fails, runs out of memory, meets a NaN loss or is killed
midway leaves no checkpoint folder behind and registers nothing. torch, transformers, trl and peft (the
``gymloop[trl]`` extra) are imported when a training step runs.
"""

from __future__ import annotations

import hashlib
import json
import math
import os
import shutil
import time
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from arena.adapters.trl_env import EpisodeRow, GymEnvironment, environment_classes, record_replies
from arena.agents.transformers_agent import CheckpointError, check_tool_template
from arena.core.episode import EpisodeRecord
from arena.core.pack import Pack
from arena.core.results import Verdict
from trainers.base import register_trainer
from trainers.models import ModelRef, TrainerError
from trainers.trl_data import (
    Teacher,
    demonstrations,
    episode_messages,
    masked_example,
    sft_steps,
    successful_episodes,
    wave_rows,
)

if TYPE_CHECKING:
    from curriculum import Wave

STAGING_PREFIX = ".staging-"
"""Folders under the output folder that a training step is still writing (never a model)."""
MANIFEST_FILE = "gymloop_checkpoint.json"
"""What a checkpoint folder records about its training step."""


class TRLConfig(BaseModel):
    """Settings of the ``trl`` trainer (``[trl]`` in gymloop.toml).

    Attributes:
        method: ``grpo``, ``sft`` or ``sft_grpo`` (SFT warm start, then GRPO).
        max_steps: Optimizer steps of each method.
        learning_rate: Learning rate.
        per_device_train_batch_size: Rollouts (GRPO) or conversations (SFT) per step.
        num_generations: GRPO group size: rollouts per prompt.
        max_completion_length: Most tokens of one rollout (tool results included).
        max_tool_calling_iterations: Most tool rounds in one rollout.
        temperature: Sampling temperature of GRPO rollouts.
        beta: KL coefficient of GRPO (0 needs no reference model).
        lora: Train a LoRA adapter (peft) instead of every weight; it is merged before saving.
        lora_r: LoRA rank.
        lora_alpha: LoRA alpha.
        use_vllm: Generate GRPO rollouts with vLLM (GPU machines; see the README's recipe).
        demonstrations: SFT also trains on a teacher's verified play of each wave task that none of its rollouts
            solved (one episode per task, on the task's own world and seed): ``gold`` (the task's gold program) or
            ``reference`` (the reference policy's careful parameters, whose replies list the facts as
            ``field: value`` lines); ``None``: none.
        sft_epochs: SFT's budget follows its data: this many passes over the round's conversations (at least one
            step, at most ``max_steps``); ``None``: always ``max_steps`` steps, however few the conversations.
        sft_per_task: SFT keeps at most this many successes of each task (``None``: all of them).
        sft_skip_mastered: SFT leaves out the successes of tasks that every one of their rollouts solved: the
            checkpoint already does them, and training on their conversations again mostly fits their ids.
        seed: Seed of sampling, data order and the rows drawn from the wave.
        extra: Further ``GRPOConfig`` / ``SFTConfig`` arguments, passed as they are.
    """

    model_config = ConfigDict(extra="forbid")

    method: Literal["grpo", "sft", "sft_grpo"] = "grpo"
    max_steps: int = Field(default=8, ge=1)
    learning_rate: float = Field(default=1e-5, gt=0)
    per_device_train_batch_size: int = Field(default=4, ge=1)
    num_generations: int = Field(default=4, ge=2)
    max_completion_length: int = Field(default=512, ge=8)
    max_tool_calling_iterations: int = Field(default=8, ge=1)
    temperature: float = Field(default=1.0, gt=0)
    beta: float = Field(default=0.0, ge=0)
    lora: bool = False
    lora_r: int = Field(default=8, ge=1)
    lora_alpha: int = Field(default=16, ge=1)
    use_vllm: bool = False
    demonstrations: Teacher | None = None
    sft_epochs: float | None = Field(default=None, gt=0)
    sft_per_task: int | None = Field(default=None, ge=1)
    sft_skip_mastered: bool = False
    seed: int = 0
    extra: dict[str, Any] = Field(default_factory=dict)


class TRLStats(BaseModel):
    """What one training step did.

    Attributes:
        method: The method that ran.
        sft_rows: Conversations fine-tuned on: successes, and demonstrations when asked for.
        demonstrations: Of those, the teacher's play of unsolved tasks (``TRLConfig.demonstrations``).
        sft_steps: SFT optimizer steps taken.
        grpo_rows: Episodes (prompts) GRPO drew from the wave.
        episodes: Rollouts the environments scored.
        passed: Of those, how many passed every check.
        mean_reward: Mean verifier score of the scored rollouts.
        check_pass_rate: Pass rate of each assertion kind over the scored rollouts.
        tool_calls: Tool calls the environments served.
        env_seconds: Seconds spent in gymloop's environments (reset, tools, verify).
        grpo_seconds: Wall-clock seconds inside GRPO's training loop (rollouts, rewards, updates).
        grpo_steps: GRPO optimizer steps taken.
        tokens: Tokens GRPO processed (prompts and completions), as TRL counts them.
        train_seconds: Wall-clock seconds of the training step.
    """

    model_config = ConfigDict(extra="forbid")

    method: str = ""
    sft_rows: int = 0
    demonstrations: int = 0
    sft_steps: int = 0
    grpo_rows: int = 0
    episodes: int = 0
    passed: int = 0
    mean_reward: float = 0.0
    check_pass_rate: dict[str, float] = Field(default_factory=dict)
    tool_calls: int = 0
    env_seconds: float = 0.0
    grpo_seconds: float = 0.0
    grpo_steps: int = 0
    tokens: int = 0
    train_seconds: float = 0.0


class _VerdictLog:
    """Collects each scored episode's verdict (per-check results) from the environments."""

    def __init__(self) -> None:
        self.entries: list[tuple[EpisodeRow, Verdict]] = []

    def __call__(self, row: EpisodeRow, verdict: Verdict) -> None:
        self.entries.append((row, verdict))

    def summarize(self, stats: TRLStats) -> None:
        stats.episodes = len(self.entries)
        stats.passed = sum(1 for _, v in self.entries if v.passed)
        stats.mean_reward = sum(v.score for _, v in self.entries) / len(self.entries) if self.entries else 0.0
        kinds: dict[str, list[bool]] = {}
        for _, verdict in self.entries:
            for result in verdict.results:
                kinds.setdefault(result.kind, []).append(result.passed)
        stats.check_pass_rate = {k: sum(v) / len(v) for k, v in sorted(kinds.items())}


def checkpoint_hash(folder: Path) -> str:
    """Content hash of a checkpoint folder's files (names and bytes, in name order), 16 hex digits."""
    digest = hashlib.sha256()
    for path in sorted(p for p in folder.rglob("*") if p.is_file() and p.name != MANIFEST_FILE):
        digest.update(str(path.relative_to(folder)).encode())
        with path.open("rb") as fh:
            for block in iter(lambda: fh.read(1 << 20), b""):
                digest.update(block)
    return digest.hexdigest()[:16]


def remove_stale_staging(out_dir: Path) -> list[Path]:
    """Delete staging folders a killed training step left behind; return them."""
    removed = [p for p in out_dir.glob(f"{STAGING_PREFIX}*") if p.is_dir()] if out_dir.is_dir() else []
    for path in removed:
        shutil.rmtree(path, ignore_errors=True)
    return removed


class _NaNGuard:
    """A transformers callback that stops training at the first NaN or infinite loss or gradient norm."""

    def __init__(self) -> None:
        self.bad: tuple[int, float] | None = None

    def callback(self) -> Any:
        from transformers import TrainerCallback

        guard = self

        class NaNLossCallback(TrainerCallback):  # type: ignore[misc]
            def on_log(self, args: Any, state: Any, control: Any, logs: dict[str, Any] | None = None,
                       **kwargs: Any) -> None:
                for key in ("loss", "grad_norm"):
                    value = (logs or {}).get(key)
                    if isinstance(value, int | float) and not math.isfinite(value) and guard.bad is None:
                        guard.bad = (int(state.global_step), float(value))
                        control.should_training_stop = True

        return NaNLossCallback()


class TRLTrainer:
    """Trains a local transformers checkpoint with TRL in gymloop's gyms (registered as ``trl``).

    Args:
        out_dir: Where new checkpoint folders are written.
        packs: Packs the wave's tasks come from (pack id -> pack, or a list).
        config: Method, steps and hyperparameters.
    """

    name = "trl"

    def __init__(self, out_dir: str | Path, packs: Sequence[Pack] | Mapping[str, Pack],
                 config: TRLConfig | None = None) -> None:
        self.out_dir = Path(out_dir)
        self.packs: dict[str, Pack] = dict(packs) if isinstance(packs, Mapping) else {p.id: p for p in packs}
        self.config = config or TRLConfig()
        self.last_stats = TRLStats()
        self.last_environments: dict[str, type[GymEnvironment]] = {}

    def train(self, model_ref: ModelRef, wave: Wave, rollouts: Sequence[EpisodeRecord]) -> ModelRef:
        """Train on the wave and return the new checkpoint's model reference (or ``model_ref`` when SFT had no data).

        Raises:
            TrainerError: Not a transformers checkpoint, a folder that does not load or cannot call tools, out of
                memory, a NaN loss, or any failure of the training run; no checkpoint folder is left behind.
        """
        if model_ref.kind != "transformers" or not model_ref.artifact:
            raise TrainerError(f"model {model_ref.ref} is of kind {model_ref.kind!r}; the trl trainer trains a "
                               "local transformers checkpoint (model = \"transformers:<folder>\")")
        started = time.perf_counter()
        stats = TRLStats(method=self.config.method)
        sft = self.config.method in ("sft", "sft_grpo")
        teacher = self.config.demonstrations
        shown = demonstrations(wave, rollouts, self.packs, teacher) if sft and teacher is not None else []
        sft_rows = (self._sft_rows(wave, rollouts) if sft else []) + shown
        stats.sft_rows, stats.demonstrations = len(sft_rows), len(shown)
        if self.config.method == "sft" and not sft_rows:
            self.last_stats = stats
            return model_ref
        self.out_dir.mkdir(parents=True, exist_ok=True)
        remove_stale_staging(self.out_dir)
        staging = self.out_dir / f"{STAGING_PREFIX}{model_ref.name}-v{model_ref.version + 1}-{os.getpid()}"
        try:
            model, tokenizer = self._load(model_ref)
            if sft_rows:
                model = self._run_sft(model, tokenizer, sft_rows, staging, stats)
            if self.config.method in ("grpo", "sft_grpo"):
                model = self._run_grpo(model, tokenizer, wave, staging, stats)
            stats.train_seconds = round(time.perf_counter() - started, 3)
            ref = self._save(model, tokenizer, model_ref, staging, stats)
        except TrainerError:
            raise
        except MemoryError as exc:
            raise TrainerError(self._oom_message(model_ref)) from exc
        except Exception as exc:  # torch/transformers/trl failures become one clear trainer error
            if type(exc).__name__ == "OutOfMemoryError":
                raise TrainerError(self._oom_message(model_ref)) from exc
            raise TrainerError(f"trl trainer ({self.config.method}) on {model_ref.ref} failed: "
                               f"{type(exc).__name__}: {exc}") from exc
        finally:
            shutil.rmtree(staging, ignore_errors=True)
        self.last_stats = stats
        return ref

    def _oom_message(self, model_ref: ModelRef) -> str:
        return (f"trl trainer ran out of memory training {model_ref.ref} (batch "
                f"{self.config.per_device_train_batch_size}, completion length {self.config.max_completion_length}); "
                "lower them or set lora = true")

    def _load(self, model_ref: ModelRef) -> tuple[Any, Any]:
        from transformers import AutoModelForCausalLM, AutoTokenizer
        from trl.chat_template_utils import add_response_schema

        folder = str(model_ref.artifact)
        if not Path(folder).is_dir():
            raise TrainerError(f"model {model_ref.ref}: checkpoint folder {folder!r} does not exist")
        try:
            tokenizer = AutoTokenizer.from_pretrained(folder)
            model = AutoModelForCausalLM.from_pretrained(folder)
        except Exception as exc:  # every loader failure names the folder
            raise TrainerError(f"model {model_ref.ref}: checkpoint folder {folder!r} does not load: "
                               f"{type(exc).__name__}: {exc}") from exc
        if getattr(tokenizer, "response_template", None) is None and getattr(tokenizer, "response_schema",
                                                                              None) is None:
            try:
                add_response_schema(tokenizer)
            except ValueError:
                pass
        try:
            check_tool_template(tokenizer, folder)
        except CheckpointError as exc:
            raise TrainerError(f"model {model_ref.ref}: {exc}") from exc
        if tokenizer.pad_token is None:
            tokenizer.pad_token = tokenizer.eos_token
        return model, tokenizer

    def _sft_rows(self, wave: Wave, rollouts: Sequence[EpisodeRecord]) -> list[EpisodeRecord]:
        config = self.config
        return [r for r in successful_episodes(wave, rollouts, per_task=config.sft_per_task,
                                               skip_mastered=config.sft_skip_mastered) if r.pack_id in self.packs]

    def _common_args(self, staging: Path) -> dict[str, Any]:
        config = self.config
        return {"output_dir": str(staging / "run"), "max_steps": config.max_steps,
                "learning_rate": config.learning_rate, "seed": config.seed,
                "per_device_train_batch_size": config.per_device_train_batch_size,
                "data_seed": config.seed, "report_to": [], "save_strategy": "no", "logging_steps": 1,
                "gradient_checkpointing": False, "logging_nan_inf_filter": False, "use_cpu": not _cuda(),
                "disable_tqdm": True}

    def _peft(self) -> Any:
        if not self.config.lora:
            return None
        from peft import LoraConfig

        return LoraConfig(r=self.config.lora_r, lora_alpha=self.config.lora_alpha, task_type="CAUSAL_LM",
                          target_modules="all-linear")

    def _run_sft(self, model: Any, tokenizer: Any, episodes: list[EpisodeRecord], staging: Path,
                 stats: TRLStats) -> Any:
        from datasets import Dataset
        from trl import SFTConfig, SFTTrainer

        rows = sft_examples(tokenizer, self.packs, episodes)
        guard = _NaNGuard()
        config = self.config
        batch = config.per_device_train_batch_size * int(config.extra.get("gradient_accumulation_steps", 1))
        steps = sft_steps(len(rows), batch, epochs=config.sft_epochs, max_steps=config.max_steps)
        args = SFTConfig(**{**self._common_args(staging), "max_steps": steps, **config.extra})
        trainer = SFTTrainer(model=model, args=args, train_dataset=Dataset.from_list(rows), processing_class=tokenizer,
                             peft_config=self._peft(), callbacks=[guard.callback()])
        _quiet(trainer).train()
        self._check_loss(guard, trainer, "sft")
        stats.sft_steps = int(trainer.state.global_step)
        return _merged(trainer.model)

    def _run_grpo(self, model: Any, tokenizer: Any, wave: Wave, staging: Path, stats: TRLStats) -> Any:
        from datasets import Dataset
        from trl import GRPOConfig, GRPOTrainer

        os.environ.setdefault("TRL_EXPERIMENTAL_SILENCE", "1")
        config = self.config
        batch = max(config.per_device_train_batch_size, config.num_generations)
        rows = wave_rows(wave, self.packs, rows=max(1, config.max_steps * batch // config.num_generations),
                         seed=config.seed)
        stats.grpo_rows = len(rows)
        classes = environment_classes([self.packs[pid] for pid in sorted({r["pack_id"] for r in rows})])
        log = _VerdictLog()
        for cls in classes.values():
            cls.on_verdict = log
        self.last_environments = classes
        factory: Any = next(iter(classes.values())) if len(classes) == 1 else classes
        if len(classes) == 1:
            rows = [{k: v for k, v in r.items() if k != "environment"} for r in rows]
        args = GRPOConfig(**{**self._common_args(staging), "per_device_train_batch_size": batch,
                             "num_generations": config.num_generations,
                             "max_completion_length": config.max_completion_length,
                             "max_tool_calling_iterations": config.max_tool_calling_iterations,
                             "temperature": config.temperature, "beta": config.beta, "use_vllm": config.use_vllm,
                             **config.extra})
        guard = _NaNGuard()
        trainer = GRPOTrainer(model=model, processing_class=tokenizer, reward_funcs=[record_replies], args=args,
                              train_dataset=Dataset.from_list(rows), environment_factory=factory,
                              peft_config=self._peft(), callbacks=[guard.callback()])
        started = time.perf_counter()
        _quiet(trainer).train()
        stats.grpo_seconds = round(time.perf_counter() - started, 3)
        self._check_loss(guard, trainer, "grpo")
        stats.grpo_steps = int(trainer.state.global_step)
        stats.tokens = int(max((log.get("num_tokens", 0) for log in trainer.state.log_history), default=0))
        log.summarize(stats)
        for cls in classes.values():
            cls.on_verdict = None
            for env in cls.created:
                stats.tool_calls += env.timings.tool_calls
                stats.env_seconds += env.timings.reset_s + env.timings.tools_s + env.timings.verify_s
        stats.env_seconds = round(stats.env_seconds, 4)
        return _merged(trainer.model)

    @staticmethod
    def _check_loss(guard: _NaNGuard, trainer: Any, method: str) -> None:
        if guard.bad is not None:
            step, loss = guard.bad
            raise TrainerError(f"trl trainer ({method}): the loss (or its gradient) became {loss} at step {step}; "
                               "no checkpoint was written (lower the learning rate, check the checkpoint's weights)")

    def _save(self, model: Any, tokenizer: Any, parent: ModelRef, staging: Path, stats: TRLStats) -> ModelRef:
        folder = staging / "model"
        model.save_pretrained(folder)
        tokenizer.save_pretrained(folder)
        digest = checkpoint_hash(folder)
        version = parent.version + 1
        (folder / MANIFEST_FILE).write_text(json.dumps({
            "name": parent.name, "version": version, "parent": parent.ref, "params_hash": digest,
            "config": self.config.model_dump(mode="json"), "stats": stats.model_dump(mode="json"),
        }, indent=2, sort_keys=True))
        try:
            check_tool_template(tokenizer, str(folder))
            from transformers import AutoModelForCausalLM

            AutoModelForCausalLM.from_pretrained(folder)
        except Exception as exc:  # a checkpoint that does not load back is never put in place
            raise TrainerError(f"the new checkpoint of {parent.ref} does not load back: {exc}") from exc
        final = self.out_dir / f"{parent.name}-v{version}-{digest}"
        if not final.exists():
            os.replace(folder, final)
        return ModelRef(name=parent.name, version=version, kind="transformers", artifact=str(final),
                        parent=parent.ref, params_hash=digest)


def training_template(tokenizer: Any) -> str:
    """The chat template SFT renders with, one that marks the assistant's tokens.

    The tokenizer's own template when its ``{% generation %}`` markers make the assistant's tokens known, else TRL's
    training variant of it.

    Raises:
        TrainerError: The template has no generation markers and TRL knows no training variant of it, so the loss
            could not be limited to the assistant's tokens.
    """
    from trl.chat_template_utils import get_training_chat_template

    try:
        patched = get_training_chat_template(tokenizer)
    except ValueError as exc:
        raise TrainerError("the checkpoint's chat template has no {% generation %} markers and TRL has no training "
                           "variant of it: add the markers around the assistant's messages so that the loss covers "
                           "the assistant's tokens only") from exc
    template = patched if patched is not None else tokenizer.chat_template
    return str(template["default"] if isinstance(template, dict) else template)


def sft_examples(tokenizer: Any, packs: Mapping[str, Pack], episodes: Sequence[EpisodeRecord]) -> list[dict[str, Any]]:
    """Tokenized SFT examples of episodes, each rendered as the agent reads it, the loss on the assistant's tokens.

    Raises:
        TrainerError: An episode's pack is not given, or the template cannot mark the assistant's tokens.
    """
    template = training_template(tokenizer)
    rows = []
    for episode in episodes:
        pack = packs.get(episode.pack_id)
        if pack is None:
            raise TrainerError(f"episode {episode.episode_id} ran on pack {episode.pack_id[:12]}, which the trainer "
                               "was not given")
        rows.append(conversation_example(tokenizer, episode_messages(pack, episode),
                                         [s.openai_schema() for s in pack.tools], template=template,
                                         where=f"episode {episode.episode_id}"))
    return rows


def conversation_example(tokenizer: Any, messages: list[dict[str, Any]], tools: list[dict[str, Any]], *,
                         template: str, where: str) -> dict[str, list[int]]:
    """One conversation tokenized for SFT, labels on the assistant's tokens only.

    Args:
        tokenizer: The checkpoint's tokenizer.
        messages: The conversation (``trainers.trl_data.episode_messages`` renders episodes).
        tools: The tool schemas the agent renders with.
        template: A chat template that marks the assistant's tokens (``training_template``).
        where: What the conversation is, for error messages.

    Raises:
        TrainerError: The template marks none of the assistant's tokens.
    """
    encoded = tokenizer.apply_chat_template(messages, tools=tools, chat_template=template,
                                            return_assistant_tokens_mask=True, return_dict=True)
    return masked_example(encoded["input_ids"], encoded["assistant_masks"], where)


def _quiet(trainer: Any) -> Any:
    """The trainer without transformers' ``PrinterCallback``, which prints each log dict on stdout.

    Stdout carries the CLI's ``--json`` output; the logs stay in ``trainer.state.log_history``.
    """
    from transformers import PrinterCallback

    trainer.remove_callback(PrinterCallback)
    return trainer


def _merged(model: Any) -> Any:
    """A peft model with its adapter merged into the weights; any other model as it is."""
    merge = getattr(model, "merge_and_unload", None)
    return merge() if callable(merge) else model


def _cuda() -> bool:
    import torch

    return bool(torch.cuda.is_available())


register_trainer("trl", TRLTrainer)

"""Training the neural benchmark's base checkpoint from scratch, the loss on the assistant's tokens only.

Examples are made by gymloop's own SFT path (``trainers.trl.conversation_example``: the compact template's
``{% generation %}`` spans, labels ``-100`` elsewhere). A plain PyTorch loop trains on them in stages (the copy
drills, then the gym's conversations): AdamW, linear warm-up then cosine decay to a tenth within each stage,
gradient clipping at 1, batches of conversations of similar length up to a token budget (little padding).
"""

from __future__ import annotations

import math
import random
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

Example = dict[str, list[int]]

ADAM_BETAS = (0.9, 0.98)
"""AdamW's betas in every stage of base training."""
WEIGHT_DECAY = 0.01
"""AdamW's weight decay in every stage of base training."""


@dataclass(frozen=True)
class Stage:
    """One stage of base training.

    Attributes:
        name: What the stage trains on, for the log.
        steps: Optimizer steps (at most, when ``done`` ends the stage first).
        learning_rate: Peak learning rate.
        batch_tokens: Most tokens in one batch (padding included).
        warmup_steps: Steps of linear warm-up.
        cosine: Decay the learning rate along a cosine to a tenth (else keep it constant after the warm-up).
        check_every: Steps between calls of ``train_stage``'s ``done``.
    """

    name: str
    steps: int
    learning_rate: float
    batch_tokens: int
    warmup_steps: int = 50
    cosine: bool = True
    check_every: int = 250


@dataclass
class TrainStats:
    """What a stage did.

    Attributes:
        steps: Optimizer steps.
        tokens: Tokens processed (padding excluded).
        assistant_tokens: Of those, tokens in the loss.
        seconds: Wall-clock seconds.
        losses: Mean loss of every 100 steps.
    """

    steps: int = 0
    tokens: int = 0
    assistant_tokens: int = 0
    seconds: float = 0.0
    losses: list[float] = field(default_factory=list)

    @property
    def final_loss(self) -> float:
        """Mean loss of the last 100 steps."""
        return self.losses[-1] if self.losses else math.nan


def length_batches(examples: Sequence[Example], batch_tokens: int, rng: random.Random) -> list[list[int]]:
    """Indices of examples grouped by length so that ``len(batch) * longest <= batch_tokens``, in random order."""
    order = sorted(range(len(examples)), key=lambda i: (len(examples[i]["input_ids"]), rng.random()))
    batches: list[list[int]] = []
    current: list[int] = []
    longest = 0
    for i in order:
        n = len(examples[i]["input_ids"])
        if current and max(longest, n) * (len(current) + 1) > batch_tokens:
            batches.append(current)
            current, longest = [], 0
        current.append(i)
        longest = max(longest, n)
    if current:
        batches.append(current)
    rng.shuffle(batches)
    return batches


def epoch_steps(examples: Sequence[Example], batch_tokens: int) -> int:
    """Batches in one pass over ``examples``."""
    return len(length_batches(examples, batch_tokens, random.Random(0)))


def train_stage(model: Any, pad_id: int, examples: Callable[[random.Random], Sequence[Example]], stage: Stage,
                seed: int, log: Callable[[str], None] = print,
                done: Callable[[], bool] | None = None) -> TrainStats:
    """Train ``model`` for one stage; ``examples(rng)`` gives one pass of examples (drawn afresh each pass).

    ``done`` (called every ``stage.check_every`` steps, the model in evaluation mode) ends the stage early when it
    returns true.

    Raises:
        ValueError: No examples, or a loss that is not finite.
    """
    import torch

    model.train()
    optimizer = torch.optim.AdamW(model.parameters(), lr=stage.learning_rate, weight_decay=WEIGHT_DECAY,
                                  betas=ADAM_BETAS)
    rng = random.Random(seed)
    stats = TrainStats()
    window: list[float] = []
    started = time.perf_counter()
    finished = False
    while stats.steps < stage.steps and not finished:
        data = examples(rng)
        if not data:
            raise ValueError(f"stage {stage.name}: no examples to train on")
        for batch in length_batches(data, stage.batch_tokens, rng):
            if stats.steps >= stage.steps or finished:
                break
            progress = stats.steps / stage.steps
            decay = 0.1 + 0.45 * (1 + math.cos(math.pi * progress)) if stage.cosine else 1.0
            scale = min(1.0, (stats.steps + 1) / stage.warmup_steps) * decay
            for group in optimizer.param_groups:
                group["lr"] = stage.learning_rate * scale
            loss, tokens, learned = _step(model, pad_id, [data[i] for i in batch])
            if not math.isfinite(loss):
                raise ValueError(f"stage {stage.name}: the loss became {loss} at step {stats.steps}")
            torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
            optimizer.step()
            optimizer.zero_grad()
            stats.steps += 1
            stats.tokens += tokens
            stats.assistant_tokens += learned
            window.append(loss)
            if len(window) == 100 or stats.steps == stage.steps:
                stats.losses.append(sum(window) / len(window))
                window = []
                elapsed = time.perf_counter() - started
                log(f"  {stage.name} step {stats.steps}/{stage.steps}: loss {stats.losses[-1]:.4f}, "
                    f"{stats.tokens:,} tokens, {stats.tokens / elapsed:,.0f} tokens/s")
            if done is not None and stats.steps % stage.check_every == 0:
                model.eval()
                finished = done()
                model.train()
    stats.seconds = time.perf_counter() - started
    model.eval()
    return stats


def _step(model: Any, pad_id: int, batch: list[Example]) -> tuple[float, int, int]:
    import torch

    longest = max(len(e["input_ids"]) for e in batch)
    ids = torch.full((len(batch), longest), pad_id)
    labels = torch.full((len(batch), longest), -100)
    mask = torch.zeros((len(batch), longest), dtype=torch.long)
    for row, example in enumerate(batch):
        n = len(example["input_ids"])
        ids[row, :n] = torch.tensor(example["input_ids"])
        labels[row, :n] = torch.tensor(example["labels"])
        mask[row, :n] = 1
    output = model(input_ids=ids, attention_mask=mask, labels=labels)
    output.loss.backward()
    return float(output.loss.item()), int(mask.sum()), int((labels != -100).sum())


def copy_accuracy(model: Any, tokenizer: Any, drills: Sequence[list[dict[str, Any]]]) -> float:
    """Share of drills whose assistant turn the model writes exactly, decoding greedily."""
    import torch

    right = 0
    with torch.no_grad():
        for messages in drills:
            prompt = tokenizer.apply_chat_template(messages[:-1], add_generation_prompt=True, tokenize=False)
            full = tokenizer.apply_chat_template(messages, tokenize=False)
            inputs = tokenizer(prompt, return_tensors="pt", add_special_tokens=False)
            output = model.generate(**inputs, max_new_tokens=96, do_sample=False,
                                    pad_token_id=tokenizer.pad_token_id)
            written = tokenizer.decode(output[0][inputs["input_ids"].shape[1]:], skip_special_tokens=False)
            right += full[len(prompt):].startswith(written.strip()) and "<|im_end|>" in written
    return right / len(drills)

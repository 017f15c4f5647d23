"""Training the neural benchmark's base checkpoint: SFT from scratch, the loss on the assistant's tokens only.

Examples are made by gymloop's own SFT path (``trainers.trl.conversation_example``: the compact template's
``{% generation %}`` spans, labels ``-100`` elsewhere). A plain PyTorch loop trains on them: AdamW, linear warm-up
then cosine decay to a tenth, gradient clipping at 1, batches of conversations of similar length up to a token
budget (little padding). The checkpoint is saved over the starting folder.
"""

from __future__ import annotations

import math
import random
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

Example = dict[str, list[int]]


@dataclass(frozen=True)
class TrainPlan:
    """How the base checkpoint is trained.

    Attributes:
        epochs: Passes over the examples.
        learning_rate: Peak learning rate.
        batch_tokens: Most tokens in one batch (padding included).
        warmup_steps: Steps of linear warm-up.
        weight_decay: AdamW weight decay.
        seed: Seed of the batch order.
    """

    epochs: float = 4.0
    learning_rate: float = 3e-3
    batch_tokens: int = 8192
    warmup_steps: int = 50
    weight_decay: float = 0.01
    seed: int = 0


@dataclass
class TrainStats:
    """What the training run did.

    Attributes:
        steps: Optimizer steps.
        tokens: Tokens processed (padding excluded).
        assistant_tokens: Of those, tokens in the loss.
        seconds: Wall-clock seconds.
        final_loss: Mean loss of the last 20 steps.
    """

    steps: int = 0
    tokens: int = 0
    assistant_tokens: int = 0
    seconds: float = 0.0
    final_loss: float = float("nan")


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


def train_base(folder: Path, examples: Sequence[Example], plan: TrainPlan,
               log: Callable[[str], None] = print) -> TrainStats:
    """Train the checkpoint in ``folder`` on ``examples`` and save it back there.

    Raises:
        ValueError: No examples, or a loss that is not finite.
    """
    import torch
    from transformers import AutoModelForCausalLM, AutoTokenizer

    if not examples:
        raise ValueError("no SFT examples to train the base checkpoint on")
    tokenizer = AutoTokenizer.from_pretrained(folder)
    model = AutoModelForCausalLM.from_pretrained(folder)
    model.train()
    optimizer = torch.optim.AdamW(model.parameters(), lr=plan.learning_rate, weight_decay=plan.weight_decay,
                                  betas=(0.9, 0.98))
    rng = random.Random(plan.seed)
    per_epoch = len(length_batches(examples, plan.batch_tokens, random.Random(0)))
    total = max(1, int(per_epoch * plan.epochs))
    stats = TrainStats()
    losses: list[float] = []
    started = time.perf_counter()
    while stats.steps < total:
        for batch in length_batches(examples, plan.batch_tokens, rng):
            if stats.steps >= total:
                break
            progress = stats.steps / total
            scale = min(1.0, (stats.steps + 1) / plan.warmup_steps) * (0.1 + 0.45 * (1 + math.cos(math.pi * progress)))
            for group in optimizer.param_groups:
                group["lr"] = plan.learning_rate * scale
            loss, tokens, learned = _step(model, tokenizer.pad_token_id, [examples[i] for i in batch])
            if not math.isfinite(loss):
                raise ValueError(f"base training: the loss became {loss} at step {stats.steps}")
            torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
            optimizer.step()
            optimizer.zero_grad()
            stats.steps += 1
            stats.tokens += tokens
            stats.assistant_tokens += learned
            losses = [*losses[-19:], loss]
            if stats.steps % 100 == 0 or stats.steps == total:
                elapsed = time.perf_counter() - started
                log(f"  step {stats.steps}/{total}: loss {sum(losses) / len(losses):.4f}, "
                    f"{stats.tokens:,} tokens, {stats.tokens / elapsed:,.0f} tokens/s")
    stats.seconds = time.perf_counter() - started
    stats.final_loss = sum(losses) / len(losses)
    model.save_pretrained(folder)
    tokenizer.save_pretrained(folder)
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

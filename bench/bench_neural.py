"""A neural learner in the loop: a small transformer built and trained from scratch on CPU, lifted by rounds.

Steps (each printed with its tokens, seconds and the machine's load):

1. Data: the careful reference policy plays the *train* tasks of the chosen templates of the tracker gym in
   worlds 1..W (never world 0, the campaign's, and never a held-out task); its verified episodes, rendered as the
   agent reads them (``arena.agents.transcript``), are the SFT data, each with ``--copy-twins`` renamed twins (the
   copy curriculum of ``bench.neural_data``: ids get new digits, so they can only be copied from the context).
2. Model: a byte-level BPE tokenizer trained on that text (numbers under ``--numbers`` one token each:
   pointer-style ids), the compact Qwen-format chat template and a Llama of the given sizes
   (``bench.neural_model``), saved as a transformers checkpoint.
3. Base checkpoint, trained from scratch (``bench.neural_train``): with ``--pretrain-epochs``, first passes over the
   conversations with the loss on every token (a language model's pretraining: the tool results and requests repeat
   ids, and predicting a renamed id again is copying it from the context), then SFT with the loss on the assistant's
   tokens only.
4. Campaigns: for each seed, a paired campaign (targeted arm and uniform control, same budget) of ``--rounds``
   rounds with ``trainer = "trl"`` (rejection-sampling SFT by default: the round's sampled rollouts that pass every
   check; or GRPO), through gymloop's flows (``bench.neural_campaigns``), ``--workers`` campaigns at a time. With
   ``--focus trained`` (the default) the campaigns' ``tasks`` setting keeps the rounds on the trained templates'
   tasks: the held-out suite, the waves and the factory's coverage hold those alone, as a team whose model knows
   some of a gym's workflows would run them; ``--focus all`` practises and judges every task of the gym.

The campaigns' world 0 holds ``--tasks-per-template`` tasks of each template (the ``gym_knobs`` setting; 39
held-out tasks of the six default templates at 18). Every process is pinned (``bench.neural_repro``: threads, AVX2
kernels, deterministic algorithms, hash seed), so the same command gives the same figures on any machine of this
kind; episodes have a wall-clock limit no load reaches.

Printed: the held-out pass rate (greedy; world 0; the campaigns' suite, and its tasks of the trained templates)
per round and arm, averaged over seeds; each round's held-out flips (pass->fail, fail->pass) per arm; the lift of
each arm over the base checkpoint and the targeting lift (targeted - uniform after the last round) with 95%
t-intervals over seeds; tokens, wall time, load and CPU time.

Targets: the whole bench under 90 minutes on 2 idle cores (estimated from CPU time); the base checkpoint passes
>= 25% of the held-out tasks of the templates it was trained on; the judged arm's lift interval over >= 3 seeds
excludes zero and its held-out pass->fail flips are at most the other arm's. The targeting lift is reported
whatever its sign. This benchmark was written by the engineer who wrote the code it judges: it is not independent.

Run: ``python -m bench.bench_neural`` (the defaults are the recipe of docs/benchmarks.md; ``--help`` gives the grid).
"""

from __future__ import annotations

import argparse
import json
import math
import os
import random
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from arena.core.pack import Pack, build_pack
from bench.neural_campaigns import ARMS, CampaignResult, CampaignSpec
from bench.neural_data import CAMPAIGN_WORLD, copy_drill, expert_conversations, id_prefixes, renamed, template_of
from bench.neural_model import ModelSize, build_checkpoint, parameter_count, render_for_tokenizer, train_tokenizer
from bench.neural_repro import HASH_SEED, pin, pinned_env
from bench.neural_train import ADAM_BETAS, WEIGHT_DECAY, Stage, copy_accuracy, epoch_steps, train_stage

DOMAIN = "tracker"
DEFAULT_TEMPLATES = ("issue_status", "open_subtasks", "dependency_check",
                     "assign_subtask_by_key", "release_status_update", "restricted_inquiry")
"""The templates trained on by default: those whose expert episodes are shortest (under ~800 tokens)."""
ROUND_OPTIMIZER = {"bf16": False, "adam_beta2": ADAM_BETAS[1], "weight_decay": WEIGHT_DECAY,
                   "lr_scheduler_type": "constant_with_warmup", "warmup_steps": 2}
"""``SFTConfig`` arguments that give the rounds the base's optimizer (``--round-optimizer base``)."""
TIME_TARGET_S = 90 * 60
BASE_FLOOR = 0.25
EPISODE_LIMIT_S = 4 * 3600
"""Wall-clock limit of a campaign's episode (``model_timeout_s`` x 4): far above what a loaded machine takes, so
load never cuts an episode short and changes a figure."""


class LoadMeter:
    """Samples the 1-minute load average every few seconds while the bench runs."""

    def __init__(self, every_s: float = 10.0) -> None:
        self.samples: list[float] = [os.getloadavg()[0]]
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, args=(every_s,), daemon=True)
        self._thread.start()

    def _run(self, every_s: float) -> None:
        while not self._stop.wait(every_s):
            self.samples.append(os.getloadavg()[0])

    def since(self, start: int) -> str:
        """Mean and highest load of the samples from index ``start``."""
        chosen = self.samples[start:] or self.samples[-1:]
        return f"load {statistics.fmean(chosen):.1f} mean, {max(chosen):.1f} max on {os.cpu_count()} cores"

    def stop(self) -> None:
        """Stop sampling."""
        self._stop.set()


def t_interval(values: Sequence[float]) -> tuple[float, float, float]:
    """Mean and 95% t-interval over seeds (``nan`` bounds with fewer than 2 values)."""
    from scipy import stats

    mean = statistics.fmean(values)
    if len(values) < 2:
        return mean, math.nan, math.nan
    half = float(stats.t.ppf(0.975, len(values) - 1)) * statistics.stdev(values) / math.sqrt(len(values))
    return mean, mean - half, mean + half


def parse_args(argv: Sequence[str] | None = None) -> argparse.Namespace:
    """The bench's grid and settings."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    data = parser.add_argument_group("data")
    data.add_argument("--templates", default=",".join(DEFAULT_TEMPLATES), help="templates trained on (comma list)")
    data.add_argument("--worlds", type=int, default=100, help="world seeds 1..W the expert plays")
    data.add_argument("--copy-twins", type=int, default=1, help="renamed twins of each conversation")
    data.add_argument("--max-tokens", type=int, default=2048, help="longer conversations are left out")
    data.add_argument("--tasks-per-template", type=int, default=18,
                      help="tasks of each template in the campaigns' world (the gym_knobs setting; the base's worlds "
                           "keep the gym's 5): more held-out tasks of the trained templates")
    model = parser.add_argument_group("model")
    model.add_argument("--vocab", type=int, default=1200, help="BPE vocabulary (number tokens come on top)")
    model.add_argument("--numbers", type=int, default=2000,
                       help="numbers 0..N-1 are one token each (pointer-style ids); 0: every digit its own token")
    model.add_argument("--hidden", type=int, default=128)
    model.add_argument("--layers", type=int, default=4)
    model.add_argument("--heads", type=int, default=4)
    model.add_argument("--ffn", type=int, default=384)
    model.add_argument("--base", type=Path, help="use this checkpoint folder as the base (skips steps 1-3)")
    train = parser.add_argument_group("base training")
    train.add_argument("--copy-steps", type=int, default=0, help="most steps of copy drills before the gym")
    train.add_argument("--copy-until", type=float, default=0.9,
                       help="drills end once this share of 50 fresh drills is written exactly (checked every 250)")
    train.add_argument("--copy-lr", type=float, default=1e-3)
    train.add_argument("--copy-batch-tokens", type=int, default=640)
    train.add_argument("--pretrain-epochs", type=float, default=6.0,
                       help="passes over the gym's conversations with the loss on every token (tool results and "
                            "requests too), before the passes with the loss on the assistant's tokens only")
    train.add_argument("--epochs", type=float, default=2.0,
                       help="passes over the gym's conversations, the loss on the assistant's tokens only")
    train.add_argument("--lr", type=float, default=1e-3)
    train.add_argument("--batch-tokens", type=int, default=4096)
    rounds = parser.add_argument_group("campaigns")
    rounds.add_argument("--seeds", type=int, default=5)
    rounds.add_argument("--first-seed", type=int, default=0,
                        help="campaign seeds are first-seed .. first-seed + seeds - 1 (seeds no look has used)")
    rounds.add_argument("--rounds", type=int, default=4)
    rounds.add_argument("--method", choices=("sft", "grpo", "sft_grpo"), default="sft")
    rounds.add_argument("--wave-budget", type=int, default=144)
    rounds.add_argument("--train-k", type=int, default=8)
    rounds.add_argument("--variants", type=int, default=1, help="variants per round (targeted arm)")
    rounds.add_argument("--gate-band-min", type=int, default=2,
                        help="fewest of the gate's 5 sampled attempts of a variant's task the checkpoint must pass "
                             "(gate_band_min; 0 admits tasks it never solves, which demonstrations can teach)")
    rounds.add_argument("--tasks-per-variant", type=int, default=4)
    rounds.add_argument("--round-steps", type=int, default=32,
                        help="most optimizer steps of each round's training ([trl] max_steps)")
    rounds.add_argument("--round-epochs", type=float, default=5.0,
                        help="sft: a round's steps are this many passes over its kept conversations, at most "
                             "--round-steps ([trl] sft_epochs); 0: always --round-steps")
    rounds.add_argument("--per-task", type=int, default=1,
                        help="sft: most successes kept of each task ([trl] sft_per_task); 0: all")
    rounds.add_argument("--skip-mastered", action=argparse.BooleanOptionalAction, default=True,
                        help="sft: leave out tasks every rollout of which passed ([trl] sft_skip_mastered)")
    rounds.add_argument("--round-optimizer", choices=("base", "trl"), default="base",
                        help="base: the rounds train with the base's optimizer (fp32, AdamW betas "
                             f"{ADAM_BETAS[0]}/{ADAM_BETAS[1]}, weight decay {WEIGHT_DECAY}, constant lr after 2 "
                             "warm-up steps); trl: TRL's defaults")
    rounds.add_argument("--round-lr", type=float, default=3e-4)
    rounds.add_argument("--round-batch", type=int, default=8)
    rounds.add_argument("--temperature", type=float, default=1.0, help="sampling of training rollouts")
    rounds.add_argument("--top-p", type=float, default=1.0)
    rounds.add_argument("--max-new-tokens", type=int, default=128)
    rounds.add_argument("--max-turns", type=int, default=8)
    rounds.add_argument("--focus", choices=("trained", "all"), default="trained",
                        help="tasks the rounds practise and are judged on: the trained templates' (the campaigns' "
                             "tasks setting) or every task of the gym")
    rounds.add_argument("--demonstrations", choices=("none", "gold", "reference"), default="reference",
                        help="sft: a teacher's verified play of each wave task no rollout solved ([trl] "
                             "demonstrations); reference: the careful reference policy, the base's teacher")
    rounds.add_argument("--trl", default="{}", help="further [trl] settings as JSON (e.g. use_vllm, extra)")
    rounds.add_argument("--retention-per-flip", type=int, default=2,
                        help="training tasks of a template the targeted arm replays first per held-out task of it "
                             "lost (pass->fail) in the round before (the retention_per_flip setting; 0: none)")
    rounds.add_argument("--judged-arm", choices=ARMS, default="targeted",
                        help="the arm whose lift after the last round must have an interval above zero (the exit "
                             "code); the other arm and the targeting lift are reported")
    run = parser.add_argument_group("run")
    run.add_argument("--base-only", action="store_true", help="stop after the base checkpoint's evaluation")
    run.add_argument("--workers", type=int, default=2, help="campaigns run at a time (one process each)")
    run.add_argument("--threads", type=int, default=1, help="torch threads per process")
    run.add_argument("--out", type=Path, help="folder for the checkpoint, the campaigns' homes and results")
    args = parser.parse_args(argv)
    problem = args_problem(args)
    if problem:
        parser.error(problem)
    return args


AT_LEAST = {
    1: ("worlds", "max_tokens", "vocab", "hidden", "layers", "heads", "ffn", "copy_batch_tokens", "batch_tokens",
        "seeds", "rounds", "wave_budget", "train_k", "tasks_per_variant", "round_steps", "round_batch",
        "max_new_tokens", "max_turns", "workers", "threads", "tasks_per_template"),
    0: ("copy_twins", "numbers", "copy_steps", "first_seed", "variants", "gate_band_min", "per_task",
        "retention_per_flip"),
}
"""The integer flags' least values (by ``argparse`` destination)."""
POSITIVE = ("copy_lr", "lr", "round_lr", "round_epochs", "temperature")
NON_NEGATIVE = ("pretrain_epochs", "epochs")


def args_problem(args: argparse.Namespace) -> str | None:
    """What is wrong with the parsed flags, naming the flag and its value (``None``: nothing).

    Checked before anything runs, so a bad value stops the bench at once instead of failing in a campaign's
    process an hour in.
    """
    def flag(dest: str) -> str:
        return "--" + dest.replace("_", "-")

    for least, names in AT_LEAST.items():
        for dest in names:
            if getattr(args, dest) < least:
                return f"{flag(dest)} must be at least {least}, got {getattr(args, dest)}"
    for dest in POSITIVE:
        if not getattr(args, dest) > 0:
            return f"{flag(dest)} must be above 0, got {getattr(args, dest)}"
    for dest in NON_NEGATIVE:
        if not getattr(args, dest) >= 0:
            return f"{flag(dest)} must be at least 0, got {getattr(args, dest)}"
    if not 0 < args.top_p <= 1:
        return f"--top-p must be in (0, 1], got {args.top_p}"
    if not 0 <= args.copy_until <= 1:
        return f"--copy-until must be in [0, 1], got {args.copy_until}"
    if args.gate_band_min > 5:
        return f"--gate-band-min counts the gate's 5 attempts: at most 5, got {args.gate_band_min}"
    if not [t for t in args.templates.split(",") if t.strip()]:
        return "--templates names no template"
    try:
        further = json.loads(args.trl)
    except json.JSONDecodeError as exc:
        return f"--trl is not JSON ({exc.msg} at character {exc.pos}): {args.trl!r}"
    if not isinstance(further, dict):
        return f"--trl must be a JSON object of [trl] settings, got {args.trl!r}"
    return None


def campaign_knobs(args: argparse.Namespace) -> dict[str, int]:
    """Knobs of the campaigns' pack (the ``gym_knobs`` setting of the gym)."""
    return {"tasks_per_template": args.tasks_per_template}


def trained_heldout(pack: Pack, templates: list[str]) -> list[str]:
    """The pack's held-out tasks of the trained templates."""
    return [t.id for t in pack.tasks if t.split == "heldout" and template_of(t.id) in set(templates)]


def declare(args: argparse.Namespace, templates: list[str], campaign_pack: Pack) -> None:
    """Print the grid before anything runs."""
    heldout = trained_heldout(campaign_pack, templates)
    print("grid (declared before running):")
    if args.base:
        print(f"  base checkpoint: {args.base} (given)")
    else:
        print(f"  data: expert traces of the train tasks of {len(templates)} {DOMAIN} templates in worlds "
              f"1..{args.worlds} (world {CAMPAIGN_WORLD} and held-out tasks never), {args.copy_twins} renamed "
              f"twin(s) each, conversations over {args.max_tokens} tokens left out")
        print(f"  model: vocab {args.vocab} + {args.numbers} number tokens, hidden {args.hidden}, "
              f"{args.layers} layers, {args.heads} heads, "
              f"ffn {args.ffn}, tied embeddings; compact Qwen-format template")
        print(f"  base training: copy drills until {args.copy_until:.0%} are written exactly (at most "
              f"{args.copy_steps} steps, constant lr {args.copy_lr}, {args.copy_batch_tokens} tokens per batch), "
              f"then {args.pretrain_epochs} epochs of the gym's conversations with the loss on every token, then "
              f"{args.epochs} epochs with the loss on the assistant's tokens only (lr {args.lr}, {args.batch_tokens} "
              "tokens per batch)")
    print(f"  templates: {', '.join(templates)}; campaigns' world {CAMPAIGN_WORLD} with {args.tasks_per_template} "
          f"tasks per template: {len(heldout)} held-out tasks of the trained templates, "
          f"{len(campaign_pack.tasks) - len(heldout)} other tasks")
    print(f"  campaigns: {args.seeds} seeds ({args.first_seed}-{args.first_seed + args.seeds - 1}) x (targeted, "
          f"uniform) x {args.rounds} rounds; trl {args.method}, "
          f"{args.round_steps} steps at most at lr {args.round_lr}, batch {args.round_batch} ("
          + (f"{args.round_epochs} epochs over the kept conversations" if args.round_epochs else "fixed steps")
          + f", {args.per_task or 'every'} success(es) per task"
          + (", mastered tasks left out" if args.skip_mastered else "")
          + f"), {args.round_optimizer} optimizer, demonstrations {args.demonstrations}, further [trl] settings "
          f"{args.trl}; retention {args.retention_per_flip} task(s) per held-out task lost (targeted arm); wave "
          "budget "
          f"{args.wave_budget}, k {args.train_k}; {args.variants} variant(s) x {args.tasks_per_variant} tasks, "
          f"gate band {args.gate_band_min}-4 of 5; "
          f"training rollouts sampled at temperature {args.temperature}, top-p {args.top_p}; held-out greedy; "
          + ("focused on the trained templates' tasks (tasks = <template>-*)" if args.focus == "trained"
             else "every task of the gym"))
    print(f"  verdict: the {args.judged_arm} arm's held-out lift over the base after round {args.rounds - 1}, its "
          "95% t-interval over seeds above zero")
    print(f"  verdict beside it: the {args.judged_arm} arm's held-out pass->fail flips, summed over rounds and "
          "seeds, at most the other arm's; the targeting lift is reported whatever its sign")
    print(f"  run: {args.workers} campaign(s) at a time, {args.threads} torch thread(s) per process, pinned "
          f"(bench.neural_repro); episodes limited to {EPISODE_LIMIT_S // 3600} h of wall time")


def build_base(args: argparse.Namespace, templates: list[str], folder: Path, meter: LoadMeter) -> dict[str, Any]:
    """Steps 1-3: data, tokenizer and model, base training (copy drills, then the gym). Return what was measured."""
    from transformers import AutoModelForCausalLM

    from trainers.trl import conversation_example, training_template

    mark, started = len(meter.samples), time.perf_counter()
    conversations = expert_conversations(DOMAIN, templates, range(1, args.worlds + 1))
    rng = random.Random(0)
    messages = [c.messages for c in conversations]
    below = args.numbers or None
    messages += [renamed(m, rng, below=below) for m in list(messages) for _ in range(args.copy_twins)]
    prefixes = id_prefixes(conversations)
    drills = [copy_drill(prefixes, rng, below=below) for _ in range(200)]
    tokenizer = train_tokenizer(render_for_tokenizer(messages[:3000] + drills), args.vocab, numbers=args.numbers)
    size = ModelSize(vocab=args.vocab, hidden=args.hidden, layers=args.layers, heads=args.heads, ffn=args.ffn)
    build_checkpoint(folder, tokenizer, size, seed=0)
    template = training_template(tokenizer)

    def example(conversation: list[dict[str, Any]], where: str) -> dict[str, list[int]]:
        return conversation_example(tokenizer, conversation, [], template=template, where=where)

    examples = [example(m, f"conversation {i}") for i, m in enumerate(messages)]
    kept = [e for e in examples if len(e["input_ids"]) <= args.max_tokens]
    every_token = [{"input_ids": e["input_ids"], "labels": e["input_ids"]} for e in kept]
    tokens = sum(len(e["input_ids"]) for e in kept)
    learned = sum(sum(1 for t in e["labels"] if t != -100) for e in kept)
    data_s = time.perf_counter() - started
    print(f"data: {len(conversations)} verified expert episodes ({len(messages)} with twins), {len(kept)} kept, "
          f"{tokens:,} tokens ({learned:,} in the loss); id prefixes {', '.join(prefixes)}; "
          f"{parameter_count(folder):,} parameters; {data_s:.0f} s, {meter.since(mark)}", flush=True)
    model = AutoModelForCausalLM.from_pretrained(folder)
    checks = [copy_drill(prefixes, random.Random(10_000 + i), below=below) for i in range(50)]
    totals = {"tokens": 0, "seconds": data_s}
    accuracies: list[float] = []

    def copies() -> bool:
        accuracies.append(copy_accuracy(model, tokenizer, checks))
        print(f"  copy drills written exactly: {accuracies[-1]:.2f}", flush=True)
        return bool(accuracies[-1] >= args.copy_until)

    stages = [
        (Stage("copy drills", args.copy_steps, args.copy_lr, args.copy_batch_tokens, cosine=False),
         lambda r: [example(copy_drill(prefixes, r, below=below), "drill") for _ in range(1000)], copies),
        (Stage("gym conversations, every token", int(epoch_steps(kept, args.batch_tokens) * args.pretrain_epochs),
               args.lr, args.batch_tokens), lambda r: every_token, None),
        (Stage("gym conversations", int(epoch_steps(kept, args.batch_tokens) * args.epochs), args.lr,
               args.batch_tokens), lambda r: kept, None),
    ]
    for stage, source, done in stages:
        if stage.steps <= 0:
            continue
        mark = len(meter.samples)
        stats = train_stage(model, tokenizer.pad_token_id, source, stage, seed=len(stage.name), done=done)
        accuracy = copy_accuracy(model, tokenizer, checks)
        totals["tokens"] += stats.tokens
        totals["seconds"] += stats.seconds
        print(f"{stage.name}: {stats.steps} steps, {stats.tokens:,} tokens in {stats.seconds:.0f} s "
              f"({stats.tokens / stats.seconds:,.0f} tokens/s), final loss {stats.final_loss:.4f}; copy drills "
              f"written exactly {accuracy:.2f}; {meter.since(mark)}", flush=True)
    model.save_pretrained(folder)
    tokenizer.save_pretrained(folder)
    return totals


def run_campaigns(args: argparse.Namespace, templates: list[str], base: Path, out: Path) -> list[CampaignResult]:
    """Step 4: the paired campaigns, ``--workers`` processes at a time."""
    further = json.loads(args.trl)
    further_extra = further.pop("extra", {})
    overrides = {
        "eval_k": 1, "eval_seeds": [0], "train_k": args.train_k, "wave_budget": args.wave_budget,
        "variants_per_round": args.variants, "tasks_per_variant": args.tasks_per_variant,
        "gate_band_min": args.gate_band_min,
        "local_max_new_tokens": args.max_new_tokens, "local_max_steps": args.max_turns,
        "local_train_sampling": {"temperature": args.temperature, "top_p": args.top_p},
        "workers": 1, "max_concurrency": 1, "plateau_rounds": args.rounds + 1,
        "model_timeout_s": EPISODE_LIMIT_S / 4, "gym_knobs": {DOMAIN: campaign_knobs(args)},
        "retention_per_flip": args.retention_per_flip,
        "tasks": [f"{t}-*" for t in templates] if args.focus == "trained" else [],
        "trl": {"method": args.method, "max_steps": args.round_steps, "learning_rate": args.round_lr,
                "per_device_train_batch_size": args.round_batch,
                "demonstrations": None if args.demonstrations == "none" else args.demonstrations,
                "sft_epochs": args.round_epochs or None, "sft_per_task": args.per_task or None,
                "sft_skip_mastered": args.skip_mastered,
                **further, "extra": {**({"max_length": None} if args.method == "sft" else {}),
                                     **(ROUND_OPTIMIZER if args.round_optimizer == "base" else {}), **further_extra}},
    }
    env = {**os.environ, **pinned_env(args.threads)}
    pending = list(range(args.first_seed, args.first_seed + args.seeds))
    running: list[tuple[int, subprocess.Popen[bytes], Path]] = []
    results: list[CampaignResult] = []
    while pending or running:
        while pending and len(running) < args.workers:
            seed = pending.pop(0)
            home = out / f"home-s{seed}"
            spec = CampaignSpec(home=str(home), base=str(base), seed=seed, rounds=args.rounds, templates=templates,
                                threads=args.threads,
                                overrides={**overrides, "trl": {**overrides["trl"], "seed": seed}})
            home.mkdir(parents=True, exist_ok=True)
            (home / "spec.json").write_text(spec.model_dump_json(indent=1))
            log = (home / "campaign.log").open("wb")
            process = subprocess.Popen([sys.executable, "-m", "bench.neural_campaigns", str(home / "spec.json"),
                                        str(home / "result.json")], stdout=log, stderr=subprocess.STDOUT, env=env)
            running.append((seed, process, home))
        time.sleep(2)
        for item in list(running):
            seed, process, home = item
            if process.poll() is None:
                continue
            running.remove(item)
            if process.returncode != 0:
                tail = (home / "campaign.log").read_text(errors="replace").splitlines()[-15:]
                raise RuntimeError(f"campaign seed {seed} failed (exit {process.returncode}):\n" + "\n".join(tail))
            result = CampaignResult.model_validate_json((home / "result.json").read_text())
            results.append(result)
            print(f"campaign seed {seed}: {result.seconds:.0f} s", flush=True)
    return sorted(results, key=lambda r: r.seed)


def evaluate_base(base: Path, args: argparse.Namespace) -> tuple[dict[str, bool], float]:
    """The base checkpoint on the held-out suite (world 0, greedy), as a campaign's first evaluation plays it."""
    from arena.agents.transformers_agent import TransformersAgent, TransformersConfig
    from arena.rollout import EpisodeKey, RolloutConfig, run_episodes

    pack = build_pack(DOMAIN, seed=CAMPAIGN_WORLD, knobs=campaign_knobs(args))
    keys = [EpisodeKey(pack.id, t.id, 0, 0) for t in pack.tasks if t.split == "heldout"]
    agent = TransformersAgent(TransformersConfig(checkpoint=str(base), max_new_tokens=args.max_new_tokens,
                                                 max_steps=args.max_turns))
    started = time.perf_counter()
    records = run_episodes(agent, [pack], keys, RolloutConfig(episode_timeout_s=EPISODE_LIMIT_S))
    return {r.task_id: r.passed for r in records}, time.perf_counter() - started


def show_base(heldout: dict[str, bool], templates: list[str]) -> float:
    """Print the base checkpoint's held-out results per template; return its rate on the trained templates."""
    trained = set(templates)
    by_template: dict[str, list[bool]] = {}
    for task_id, passed in sorted(heldout.items()):
        by_template.setdefault(template_of(task_id), []).append(passed)
    chosen = [p for t, ps in by_template.items() if t in trained for p in ps]
    rate = sum(chosen) / len(chosen)
    print(f"base checkpoint, held-out (greedy, world {CAMPAIGN_WORLD}): {sum(heldout.values())}/{len(heldout)} of "
          f"the suite; {sum(chosen)}/{len(chosen)} = {rate:.3f} of the trained templates' held-out tasks "
          f"(floor {BASE_FLOOR}) -> {'PASS' if rate >= BASE_FLOOR else 'FAIL'}")
    print("  " + "; ".join(f"{t} {sum(ps)}/{len(ps)}" for t, ps in by_template.items()
                           if t in trained))
    return rate


def report(results: list[CampaignResult], templates: list[str], rounds: int) -> dict[str, Any]:
    """Print pass rates per round and arm, lifts and targeting lift with intervals over seeds."""
    trained = set(templates)
    bases = {json.dumps(r.base_heldout, sort_keys=True) for r in results}
    base = results[0].base_heldout
    in_trained = [k for k in base if template_of(k) in trained]
    base_all = sum(base.values()) / len(base)
    base_trained = sum(base[k] for k in in_trained) / len(in_trained)
    print(f"base checkpoint, held-out (greedy, world {CAMPAIGN_WORLD}): {sum(base.values())}/{len(base)} = "
          f"{base_all:.3f} of the suite; {sum(base[k] for k in in_trained)}/{len(in_trained)} = {base_trained:.3f} "
          f"of the trained templates' held-out tasks (floor {BASE_FLOOR}) -> "
          f"{'PASS' if base_trained >= BASE_FLOOR else 'FAIL'}"
          + ("" if len(bases) == 1 else "; WARNING: the base evaluation differed between seeds"))
    print("\nheld-out pass rate after each round, mean over seeds [95% t-interval] (suite | trained templates):")
    print("| round | " + " | ".join(f"{arm} {part}" for arm in ARMS for part in ("suite", "trained")) + " |")
    print("| ---: |" + " --- |" * (2 * len(ARMS)))
    for index in range(rounds):
        cells = []
        for arm in ARMS:
            rows = [r for c in results for r in c.rounds if r.arm == arm and r.round_index == index]
            mean, low, high = t_interval([r.after for r in rows])
            tmean, tlow, thigh = t_interval([r.after_trained for r in rows])
            cells.append(f"{mean:.3f} [{low:.3f}, {high:.3f}] | {tmean:.3f} [{tlow:.3f}, {thigh:.3f}]")
        print(f"| {index} | " + " | ".join(cells) + " |")
    figures: dict[str, Any] = {"base_suite": base_all, "base_trained": base_trained}
    print(f"\nlift over the base checkpoint after {rounds} round(s), mean over {len(results)} seeds [95% t-interval]:")
    for arm in ARMS:
        finals = [max((r for r in c.rounds if r.arm == arm), key=lambda r: r.round_index) for c in results]
        lift = t_interval([r.after - base_all for r in finals])
        lift_trained = t_interval([r.after_trained - base_trained for r in finals])
        figures[f"lift_{arm}"] = lift
        side = "above zero" if lift[1] > 0 else "below zero" if lift[2] < 0 else "includes zero"
        print(f"  {arm}: suite {lift[0]:+.3f} [{lift[1]:+.3f}, {lift[2]:+.3f}]; trained templates "
              f"{lift_trained[0]:+.3f} [{lift_trained[1]:+.3f}, {lift_trained[2]:+.3f}] -> interval {side}")
    gaps = []
    for c in results:
        final = {r.arm: r for r in c.rounds if r.round_index == rounds - 1}
        gaps.append(final["targeted"].after - final["uniform"].after)
    targeting = t_interval(gaps)
    figures["targeting_lift"] = targeting
    print(f"  targeting lift (targeted - uniform after round {rounds - 1}): {targeting[0]:+.3f} "
          f"[{targeting[1]:+.3f}, {targeting[2]:+.3f}] (per seed: {', '.join(f'{g:+.3f}' for g in gaps)})")
    figures.update(report_flips(results, rounds))
    tokens = sum(r.tokens for c in results for r in c.rounds)
    passed = sum(r.train_passed for c in results for r in c.rounds)
    rollouts = sum(r.train_episodes for c in results for r in c.rounds)
    shown = sum(r.demonstrations for c in results for r in c.rounds)
    steps: dict[str, float] = {}
    for c in results:
        for r in c.rounds:
            for key, value in r.seconds.items():
                steps[key] = steps.get(key, 0.0) + value
    print(f"\nrounds: {tokens:,.0f} episode tokens; {passed} of {rollouts} training rollouts passed; "
          f"{shown} demonstrations of unsolved wave tasks; "
          f"seconds by step over all rounds: " + ", ".join(f"{k} {v:.0f}" for k, v in steps.items()))
    for arm in ARMS:
        per_round = [[r.sft_steps for c in results for r in c.rounds if r.arm == arm and r.round_index == i]
                     for i in range(rounds)]
        print(f"  SFT steps per round, {arm} (mean over seeds): "
              + ", ".join(f"{sum(s) / len(s):.1f}" if s else "-" for s in per_round))
    return figures


def report_flips(results: list[CampaignResult], rounds: int) -> dict[str, Any]:
    """Print each round's held-out flips per arm (summed over seeds) and each arm's flips from the base to the end.

    Returns each arm's pass->fail flips summed over rounds and seeds (``pass_to_fail_<arm>``) and the same from the
    base checkpoint to the last round (``lost_from_base_<arm>``).
    """
    print("\nheld-out flips of each round, summed over seeds (pass->fail / fail->pass; arena.core.flips):")
    print("| round | " + " | ".join(ARMS) + " |")
    print("| ---: |" + " --- |" * len(ARMS))
    for index in range(rounds):
        cells = []
        for arm in ARMS:
            rows = [r for c in results for r in c.rounds if r.arm == arm and r.round_index == index]
            cells.append(f"{sum(r.pass_to_fail for r in rows)} / {sum(r.fail_to_pass for r in rows)}")
        print(f"| {index} | " + " | ".join(cells) + " |")
    figures: dict[str, Any] = {}
    for arm in ARMS:
        rows = [r for c in results for r in c.rounds if r.arm == arm]
        lost, gained = sum(r.pass_to_fail for r in rows), sum(r.fail_to_pass for r in rows)
        from_base = []
        for c in results:
            final = max((r for r in c.rounds if r.arm == arm), key=lambda r: r.round_index).heldout
            paired = set(final) & set(c.base_heldout)
            from_base.append((sum(c.base_heldout[k] and not final[k] for k in paired),
                              sum(final[k] and not c.base_heldout[k] for k in paired)))
        figures[f"pass_to_fail_{arm}"] = lost
        figures[f"lost_from_base_{arm}"] = sum(lost for lost, _ in from_base)
        print(f"  {arm}: {lost} pass->fail, {gained} fail->pass over all rounds and seeds; from the base to the last "
              f"round {sum(x for x, _ in from_base)} lost, {sum(y for _, y in from_base)} gained (per seed "
              + ", ".join(f"-{x}/+{y}" for x, y in from_base) + ")")
    return figures


def main(argv: Sequence[str] | None = None) -> int:
    """Run the bench; exit 1 when a target is missed."""
    args = parse_args(argv)
    templates = [t for t in args.templates.split(",") if t]
    pin(args.threads)
    try:
        campaign_pack = build_pack(DOMAIN, seed=CAMPAIGN_WORLD, knobs=campaign_knobs(args))
    except ValueError as exc:
        print(f"--tasks-per-template {args.tasks_per_template}: {exc}", file=sys.stderr)
        return 2
    declare(args, templates, campaign_pack)
    meter = LoadMeter()
    started = time.perf_counter()
    out = args.out or Path(tempfile.mkdtemp(prefix="gymloop-neural-"))
    out.mkdir(parents=True, exist_ok=True)
    print(f"output folder: {out}; {meter.since(0)} at the start", flush=True)
    base = args.base.resolve() if args.base else out / "base"
    if not args.base:
        build_base(args, templates, base, meter)
    if args.base_only:
        mark = len(meter.samples)
        heldout, seconds = evaluate_base(base, args)
        rate = show_base(heldout, templates)
        print(f"base evaluation: {seconds:.0f} s; {meter.since(mark)}")
        meter.stop()
        return 0 if rate >= BASE_FLOOR else 1
    mark = len(meter.samples)
    results = run_campaigns(args, templates, base, out)
    print(f"campaigns: {time.perf_counter() - started:.0f} s since the start; {meter.since(mark)}", flush=True)
    figures = report(results, templates, args.rounds)
    total = time.perf_counter() - started
    meter.stop()
    cpu = os.times()
    own, campaigns = cpu.user + cpu.system, cpu.children_user + cpu.children_system
    idle = own + campaigns / min(args.workers, 2)
    print(f"\nwall time {total / 60:.1f} min, {meter.since(0)} over the run; CPU time {own / 60:.1f} min in this "
          f"process (data, base), {campaigns / 60:.1f} min in the campaigns' -> on 2 idle cores about "
          f"{idle / 60:.1f} min (this process's CPU time, then the campaigns' over {min(args.workers, 2)} core(s); "
          f"target < {TIME_TARGET_S // 60} min) -> {'PASS' if idle < TIME_TARGET_S else 'FAIL'}")
    (out / "figures.json").write_text(json.dumps({**figures, "wall_s": total, "cpu_s": own,
                                                  "campaigns_cpu_s": campaigns, "idle_estimate_s": idle}, indent=1))
    other = next(arm for arm in ARMS if arm != args.judged_arm)
    flips_met = figures[f"pass_to_fail_{args.judged_arm}"] <= figures[f"pass_to_fail_{other}"]
    print(f"{args.judged_arm} arm's held-out pass->fail flips over all rounds and seeds "
          f"{figures[f'pass_to_fail_{args.judged_arm}']}, {other}'s {figures[f'pass_to_fail_{other}']} (at most) -> "
          f"{'PASS' if flips_met else 'FAIL'}")
    missed = (idle >= TIME_TARGET_S or figures["base_trained"] < BASE_FLOOR
              or not figures[f"lift_{args.judged_arm}"][1] > 0 or not flips_met)
    return 1 if missed else 0


if __name__ == "__main__":
    if os.environ.get("PYTHONHASHSEED") != HASH_SEED:  # the hash seed is read only when a process starts
        os.execve(sys.executable, [sys.executable, "-m", "bench.bench_neural", *sys.argv[1:]],
                  {**os.environ, "PYTHONHASHSEED": HASH_SEED})
    sys.exit(main())

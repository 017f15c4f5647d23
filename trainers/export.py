"""The export trainer: SFT chat data, DPO pairs and GRPO groups for trainers outside gymloop.

Files written under ``out_dir``:

- ``sft.jsonl``: one chat row per verified successful episode (``messages`` with the assistant's tool calls and
  the tool results, and ``tools``), rendered exactly as a local checkpoint reads the episode when it plays
  (``arena.agents.transcript``: the same system prompt, tool-call messages and tool-result JSON);
- ``dpo.jsonl``: preference pairs in the conversational prompt/chosen/rejected form, the chosen
  episode passed and the rejected one failed on the same task;
- ``grpo.jsonl``: one row per task group: ``prompt``, the k ``completions`` and their ``rewards``;
- ``manifest.json``: which episodes each row came from;
- ``README.md``: the dataset card (counts, sources, model, wave).
"""

from __future__ import annotations

import json
from collections import defaultdict
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from pydantic import BaseModel, ConfigDict, Field

from arena.agents import transcript
from arena.core.episode import EpisodeRecord
from arena.core.pack import Pack
from trainers.base import register_trainer
from trainers.models import ModelRef, TrainerError

if TYPE_CHECKING:
    from curriculum import Wave

SFT_FILE = "sft.jsonl"
DPO_FILE = "dpo.jsonl"
GRPO_FILE = "grpo.jsonl"
MANIFEST_FILE = "manifest.json"
CARD_FILE = "README.md"


class ExportSummary(BaseModel):
    """What an export wrote.

    Attributes:
        out_dir: Directory holding the files.
        model: Reference string of the model whose rollouts were exported.
        rollouts: Rollouts read.
        invalid: Rollouts skipped as invalid.
        sft: SFT rows (verified successes).
        dpo: DPO pairs.
        grpo: GRPO groups.
        packs: Pack id -> domain of the sources.
        tasks: Distinct tasks exported.
    """

    model_config = ConfigDict(extra="forbid")

    out_dir: str
    model: str
    rollouts: int = 0
    invalid: int = 0
    sft: int = 0
    dpo: int = 0
    grpo: int = 0
    packs: dict[str, str] = Field(default_factory=dict)
    tasks: int = 0


def _verified(episode: EpisodeRecord) -> bool:
    return episode.passed and not episode.invalid and episode.failure is None


def _dump(path: Path, rows: list[dict[str, Any]]) -> None:
    with path.open("w", encoding="utf-8") as fh:
        for row in rows:
            fh.write(json.dumps(row, ensure_ascii=False) + "\n")


def _card(summary: ExportSummary, model_ref: ModelRef, wave: Wave) -> str:
    sources = "\n".join(f"| `{pid}` | {domain} |" for pid, domain in sorted(summary.packs.items())) or "| - | - |"
    by_source = {s: len(wave.by_source(s)) for s in ("targeted", "replay", "explore")}
    return f"""# gymloop training data: {model_ref.ref}, round {wave.round_index}

Rollouts of model `{model_ref.ref}` on the tasks of curriculum wave {wave.round_index}
(strategy `{wave.strategy}`: {by_source['targeted']} targeted, {by_source['replay']} replayed,
{by_source['explore']} explored tasks; k = {wave.k} rollouts per task).

## Counts

| file | rows | content |
| --- | --- | --- |
| `{SFT_FILE}` | {summary.sft} | verified successful episodes as chat rows (`messages`, `tools`) |
| `{DPO_FILE}` | {summary.dpo} | preference pairs (`prompt`, `chosen`, `rejected`): passed vs failed on the same task |
| `{GRPO_FILE}` | {summary.grpo} | task groups (`prompt`, `completions`, `rewards`) |

Rollouts read: {summary.rollouts} ({summary.invalid} invalid, skipped); tasks: {summary.tasks}.
`{MANIFEST_FILE}` names the episode behind every row.

## Sources

| pack | domain |
| --- | --- |
{sources}

## Format notes

- A trajectory is rebuilt from the episode's trace exactly as gymloop's agents read it: each tool call is an
  assistant message (empty `content`) with one `tool_calls` entry whose `arguments` is a JSON object (the
  Hugging Face chat-template convention TRL reads; the OpenAI fine-tuning API wants it as a JSON string),
  followed by a `tool` message (`name`, the JSON result or error as `content`); the last message is the
  assistant's reply.
- The system message is the persona, the rules of the conversation and the pack's policy; the user message is
  the task prompt.
- Rewards are the verdict's score (fraction of assertions held).
"""


class ExportTrainer:
    """Writes the wave's rollouts as SFT, DPO and GRPO data with a dataset card (registered as ``export``).

    The model is not changed: ``train`` returns the same reference.

    Args:
        out_dir: Directory for the files (created; existing files of the same names are replaced).
        packs: The packs the rollouts ran on (a list or a mapping by pack id), for prompts and policies.
    """

    name = "export"

    def __init__(self, out_dir: str | Path, packs: Sequence[Pack] | Mapping[str, Pack]) -> None:
        self.out_dir = Path(out_dir)
        self.packs: dict[str, Pack] = dict(packs) if isinstance(packs, Mapping) else {p.id: p for p in packs}
        self.last_summary: ExportSummary | None = None

    def train(self, model_ref: ModelRef, wave: Wave, rollouts: Sequence[EpisodeRecord]) -> ModelRef:
        """Export the rollouts and return ``model_ref`` unchanged.

        Raises:
            TrainerError: A rollout's pack or task is not among the packs given.
        """
        self.last_summary = export_dataset(self.out_dir, model_ref, wave, rollouts, self.packs)
        return model_ref


def export_dataset(out_dir: str | Path, model_ref: ModelRef, wave: Wave, rollouts: Sequence[EpisodeRecord],
                   packs: Mapping[str, Pack]) -> ExportSummary:
    """Write ``sft.jsonl``, ``dpo.jsonl``, ``grpo.jsonl``, ``manifest.json`` and ``README.md``.

    Only rollouts of the wave's tasks are exported when the wave has entries.

    Raises:
        TrainerError: A rollout's pack or task is not among ``packs``.
    """
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    wanted = {e.key for e in wave.entries}
    summary = ExportSummary(out_dir=str(out), model=model_ref.ref, rollouts=len(rollouts))
    groups: dict[tuple[str, str], list[EpisodeRecord]] = defaultdict(list)
    for r in rollouts:
        if r.invalid:
            summary.invalid += 1
        elif not wanted or (r.pack_id, r.task_id) in wanted:
            groups[(r.pack_id, r.task_id)].append(r)
    sft: list[dict[str, Any]] = []
    dpo: list[dict[str, Any]] = []
    grpo: list[dict[str, Any]] = []
    manifest: dict[str, list[Any]] = {"sft": [], "dpo": [], "grpo": []}
    for key in sorted(groups):
        pack = packs.get(key[0])
        if pack is None:
            raise TrainerError(f"rollout of task {key[1]!r} ran on pack {key[0]!r}, which the export was not given")
        try:
            task = pack.task(key[1])
        except KeyError as exc:
            raise TrainerError(f"pack {key[0]!r} has no task {key[1]!r} (named by a rollout)") from exc
        summary.packs[pack.id] = pack.manifest.domain
        members = sorted(groups[key], key=lambda r: (r.seed, r.attempt, r.episode_id))
        observation = transcript.observation_of(pack, task.id)
        # A conversation's prompt is its user's opening message (the first member's, for the pairs and groups).
        rendered = {r.episode_id: transcript.episode_messages(observation, r.trace, r.reply, r.conversation)
                    for r in members}
        prompt = rendered[members[0].episode_id][:2]
        tools = [spec.openai_schema() for spec in pack.tools]
        completion = {episode: messages[2:] for episode, messages in rendered.items()}
        winners = [r for r in members if _verified(r)]
        losers = [r for r in members if not r.passed]
        for r in winners:
            sft.append({"messages": prompt + completion[r.episode_id], "tools": tools})
            manifest["sft"].append(r.episode_id)
        for chosen, rejected in zip(winners, losers, strict=False):
            dpo.append({"prompt": prompt, "chosen": completion[chosen.episode_id],
                        "rejected": completion[rejected.episode_id]})
            manifest["dpo"].append([chosen.episode_id, rejected.episode_id])
        if len(members) >= 2:
            grpo.append({"pack_id": key[0], "task_id": key[1], "prompt": prompt, "tools": tools,
                         "completions": [completion[r.episode_id] for r in members],
                         "rewards": [r.score for r in members], "passed": [r.passed for r in members]})
            manifest["grpo"].append([r.episode_id for r in members])
    summary.sft, summary.dpo, summary.grpo, summary.tasks = len(sft), len(dpo), len(grpo), len(groups)
    _dump(out / SFT_FILE, sft)
    _dump(out / DPO_FILE, dpo)
    _dump(out / GRPO_FILE, grpo)
    (out / MANIFEST_FILE).write_text(json.dumps({"model": model_ref.model_dump(), "wave": wave.round_index,
                                                 "rows": manifest}, indent=2))
    (out / CARD_FILE).write_text(_card(summary, model_ref, wave))
    return summary


register_trainer("export", ExportTrainer)

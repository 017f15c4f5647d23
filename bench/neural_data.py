"""The neural benchmark's SFT data: gymloop's verified expert traces, rendered as the agent reads them.

Traces come from the careful reference policy (``PolicyParams.expert()``) playing the *train* tasks of the chosen
templates in worlds generated with other seeds than the campaign's (world seed 0): no held-out task of any world is
ever played, and the held-out suite's world is never seen before the campaign's rounds. Only episodes that pass
every check are kept. Each is rendered with the episode's one rendering (``trainers.trl_data.episode_messages``).

Two copy curricula teach the model to copy from its context before (and while) it learns the gym:

- ``copy_drill``: short synthetic conversations in the same chat format whose only content is a list of random
  ids the assistant must repeat, in a reply or as a tool call's arguments. A small transformer trained on the
  gym's traces alone learns each template's call sequence but writes the same id for every issue: copying needs
  an induction circuit (a head that finds the earlier occurrence of the current token and copies the token after
  it), which forms only after a long plateau, and drills made of nothing but copying shorten that plateau to a
  few hundred steps of short sequences.
- ``renamed``: each conversation's twin whose ids (``OPS-131``, ``USR-1042``, ...) have new digits, renamed
  consistently across the prompt, calls, results and reply: in the twin no id can be recalled from training, so
  the only way to write it is to copy it from the context.
"""

from __future__ import annotations

import json
import random
import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from arena.agents.reference import PolicyParams, ReferencePolicy
from arena.agents.transcript import call_message
from arena.core.pack import build_pack
from arena.rollout import RolloutConfig, run_rollouts
from trainers.trl_data import episode_messages

Message = dict[str, Any]
ID_PATTERN = re.compile(r"\b([A-Z]{2,6})-(\d{2,6})\b")
"""An id of the gyms' worlds: an upper-case prefix, a dash and digits (``OPS-131``, ``USR-1042``, ``VER-214``)."""
CAMPAIGN_WORLD = 0
"""The world seed of the campaign's packs and held-out suite; the base checkpoint never trains on it."""


def template_of(task_id: str) -> str:
    """The template a task was generated from (``transition-03`` and ``tracker-s0.transition-03`` -> ``transition``)."""
    return re.sub(r"[.-]\d+$", "", task_id).rsplit(".", 1)[-1]


@dataclass(frozen=True)
class Conversation:
    """One verified expert episode as chat messages.

    Attributes:
        template: The task's template.
        world: The world seed it was played in.
        messages: The rendered episode.
    """

    template: str
    world: int
    messages: list[Message]


def expert_conversations(domain: str, templates: Sequence[str], worlds: Sequence[int]) -> list[Conversation]:
    """Verified expert episodes of the train tasks of ``templates`` in each world of ``worlds``.

    Raises:
        ValueError: A world is the campaign's, or a template has no train task in any of the worlds (a world whose
            split puts all of a template's tasks in the held-out suite just adds none of it).
    """
    if CAMPAIGN_WORLD in worlds:
        raise ValueError(f"world seed {CAMPAIGN_WORLD} is the campaign's; the base checkpoint never trains on it")
    expert = ReferencePolicy(PolicyParams.expert())
    wanted = set(templates)
    out: list[Conversation] = []
    played: set[str] = set()
    for world in worlds:
        pack = build_pack(domain, seed=world)
        ids = [t.id for t in pack.tasks if t.split == "train" and template_of(t.id) in wanted]
        played.update(template_of(t) for t in ids)
        for record in run_rollouts(expert, [pack], RolloutConfig(task_ids=ids, split="train")):
            if record.passed and not record.invalid and record.failure is None:
                out.append(Conversation(template_of(record.task_id), world, episode_messages(pack, record)))
    missing = wanted - played
    if missing:
        raise ValueError(f"domain {domain} has no train task of template(s) {', '.join(sorted(missing))} in worlds "
                         f"{min(worlds)}..{max(worlds)}")
    return out


def id_prefixes(conversations: Sequence[Conversation]) -> list[str]:
    """The id prefixes (``OPS``, ``USR``, ...) that occur in the conversations, sorted."""
    found: set[str] = set()
    for conversation in conversations:
        for message in conversation.messages:
            found.update(m.group(1) for m in ID_PATTERN.finditer(json.dumps(message)))
    return sorted(found)


def random_number(digits: int, rng: random.Random, *, below: int | None = None) -> str:
    """A random number of ``digits`` digits (no leading zero), under ``below`` when that leaves one."""
    low, high = 10 ** (digits - 1), 10**digits - 1
    if below is not None and below > low:
        high = min(high, below - 1)
    return str(rng.randint(low, high))


def random_id(prefixes: Sequence[str], rng: random.Random, *, below: int | None = None) -> str:
    """An id with a random prefix of ``prefixes`` and a random number of 2 to 4 digits (under ``below``)."""
    return f"{rng.choice(prefixes)}-{random_number(rng.randint(2, 4), rng, below=below)}"


def copy_drill(prefixes: Sequence[str], rng: random.Random, *, calls: float = 0.5, most: int = 8,
               below: int | None = None) -> list[Message]:
    """A synthetic conversation whose assistant repeats the request's 1 to ``most`` random ids.

    The assistant repeats them in a reply, or (with probability ``calls``) as a tool call's arguments; the ids'
    numbers stay under ``below`` (the tokenizer's number tokens).
    """
    ids = [random_id(prefixes, rng, below=below) for _ in range(rng.randint(1, most))]
    listed = ", ".join(ids)
    opening = [{"role": "system", "content": "You are a drill, working as copier. Your permissions: browse."},
               {"role": "user", "content": f"Please look at {listed}."}]
    if rng.random() >= calls:
        return [*opening, {"role": "assistant", "content": f"Looked at {listed}."}]
    return [*opening, call_message("look_up", {"ids": ids})]


def renamed(messages: list[Message], rng: random.Random, *, below: int | None = None) -> list[Message]:
    """The conversation with every id's number replaced by a random one, the same id the same way everywhere.

    The new number has as many digits as the old one (and stays under ``below`` when that leaves one).
    """
    mapping: dict[str, str] = {}

    def new_id(match: re.Match[str]) -> str:
        old = match.group(0)
        if old not in mapping:
            mapping[old] = f"{match.group(1)}-{random_number(len(match.group(2)), rng, below=below)}"
        return mapping[old]

    def walk(value: Any) -> Any:
        if isinstance(value, str):
            return ID_PATTERN.sub(new_id, value)
        if isinstance(value, list):
            return [walk(v) for v in value]
        if isinstance(value, dict):
            return {k: walk(v) for k, v in value.items()}
        return value

    return [walk(m) for m in messages]

"""The quality gate a generated task must pass before it enters the task pool.

Gates, in order (a candidate stops at the first it fails):

1. ``no_leakage``: its content hash (sha256 of prompt, intent and assertions) equals no held-out
   task's, and its prompt is no near-duplicate of a held-out prompt (normalized token Jaccard or
   character similarity ratio at or above the configured thresholds).
2. ``gold_passes``: ground truth: the gold program, run in a fresh episode, passes every assertion.
3. ``ground_truth``: the assertions agree with that run: every row the gold run changed is inside
   the declared write-set (so a task whose gold program writes must declare those writes).
4. ``null_fails``: a null agent (no calls, empty reply) fails.
5. ``adversaries_fail``: every adversarial agent of ``arena.checks.adversarial`` (claim success, paste the
   records, dump everything, random writes, injection) fails: the same audit the conformance checker runs.
6. ``replay_deterministic``: a second gold run gives the same trace and the same verdict.
7. ``baseline_band``: ``k`` attempts by the current model pass between ``band_min`` and ``band_max``.
"""

from __future__ import annotations

import difflib
import hashlib
import json
import os
import re
from collections.abc import Callable, Iterable
from pathlib import Path

from pydantic import ValidationError

from arena.agents.base import Agent
from arena.agents.reference import PolicyParams, ReferencePolicy, builtin_params
from arena.checks.adversarial import audit_task
from arena.checks.conformance import run_gold
from arena.core.gym import Gym
from arena.core.model_id import ModelIdError, parse_model_id
from arena.core.results import RowChange
from arena.core.task import Task
from arena.rollout import EpisodeKey, play_episode
from factory_client.protocol import GateConfig, GateReport, TaskRejection, VariantRequest

_TOKEN = re.compile(r"[a-z0-9]+")


def task_content_hash(task: Task) -> str:
    """sha256 of a task's prompt, intent and assertions (ids, splits and tags excluded)."""
    data = {
        "prompt": task.prompt,
        "intent": task.intent.model_dump(mode="json"),
        "assertions": [a.model_dump(mode="json") for a in task.assertions],
    }
    return hashlib.sha256(json.dumps(data, sort_keys=True).encode()).hexdigest()


def normalize_prompt(text: str) -> str:
    """Lower-case a prompt and keep only its alphanumeric tokens, space-separated."""
    return " ".join(_TOKEN.findall(text.lower()))


def token_jaccard(a: str, b: str) -> float:
    """Jaccard similarity of the normalized token sets of two prompts."""
    sa, sb = set(normalize_prompt(a).split()), set(normalize_prompt(b).split())
    if not sa and not sb:
        return 1.0
    return len(sa & sb) / len(sa | sb)


class HeldoutIndex:
    """The held-out tasks a generated task must not duplicate.

    Args:
        tasks: The held-out suite (tasks of other splits are ignored).
    """

    def __init__(self, tasks: Iterable[Task]) -> None:
        held = [t for t in tasks if t.split == "heldout"]
        self.hashes = {task_content_hash(t): t.id for t in held}
        self.prompts = [(t.id, normalize_prompt(t.prompt), set(normalize_prompt(t.prompt).split())) for t in held]

    def __len__(self) -> int:
        return len(self.hashes)

    def leak(self, task: Task, config: GateConfig) -> str | None:
        """Return why ``task`` duplicates a held-out task, or ``None`` when it does not."""
        digest = task_content_hash(task)
        if digest in self.hashes:
            return f"same content hash {digest[:16]} as held-out task {self.hashes[digest]!r}"
        norm = normalize_prompt(task.prompt)
        tokens = set(norm.split())
        matcher = difflib.SequenceMatcher(autojunk=False)
        matcher.set_seq2(norm)
        for tid, other, other_tokens in self.prompts:
            union = tokens | other_tokens
            jaccard = len(tokens & other_tokens) / len(union) if union else 1.0
            if jaccard >= config.near_duplicate_jaccard:
                return f"prompt is a near-duplicate of held-out task {tid!r} (token Jaccard {jaccard:.2f})"
            matcher.set_seq1(other)
            threshold = config.near_duplicate_ratio
            if (matcher.real_quick_ratio() >= threshold and matcher.quick_ratio() >= threshold
                    and (ratio := matcher.ratio()) >= threshold):
                return f"prompt is a near-duplicate of held-out task {tid!r} (similarity {ratio:.2f})"
        return None


BaselineLookup = Callable[[str], Agent | None]
"""Finds the agent playing a model name this factory knows beyond the built-in policies (its registry, its models
folder), or ``None``; raises ``ValueError`` naming why a model it knows cannot play."""

BUILTIN_BASELINES = "'reference', 'reference-expert', 'reference-few-weak-skills', 'reference-failure:<mode>'"


def resolve_baseline(request: VariantRequest, known: BaselineLookup | None = None) -> Agent:
    """Build the current model the baseline gate runs, from the request.

    ``baseline_model`` is a model name as gymloop prints it (``arena.core.model_id``): a built-in policy, by name or
    by the name its parameters print as (``reference-expert@v0:<hash>``), or a model ``known`` finds. It is never
    read as a path, so a request cannot make the factory open a file of its choosing or learn whether one exists.

    Args:
        request: The request.
        known: Looks up the models this factory knows (none but the built-in ones by default).

    Raises:
        ValueError: An unknown model, or inline parameters that do not load, naming the field only.
    """
    if request.baseline_params is not None:
        try:
            return ReferencePolicy(PolicyParams.model_validate(request.baseline_params))
        except ValidationError as exc:
            err = exc.errors()[0]
            where = ".".join(str(p) for p in err["loc"])
            raise ValueError(f"baseline_params: field {where!r}: {err['msg']}") from None
    name = request.baseline_model
    try:
        params = _builtin(name)
        agent = known(name) if params is None and known is not None else None
    except (KeyError, ValueError) as exc:
        raise ValueError(f"baseline model {name[:100]!r}: {exc.args[0]}") from exc
    if params is not None:
        return ReferencePolicy(params)
    if agent is not None:
        return agent
    raise ValueError(
        f"baseline model {name[:100]!r} is not a model this factory knows: use {BUILTIN_BASELINES}, a model of its "
        "registry as gymloop prints it (name@vN:hash) or the name of a parameter file in its models folder"
    )


def _builtin(name: str) -> PolicyParams | None:
    """The built-in policy's parameters ``name`` names, or ``None`` (a name that does not parse names none here).

    Raises:
        KeyError: ``reference-failure:`` with an unknown failure mode.
    """
    try:
        model = parse_model_id(name)
    except ModelIdError:  # a masked endpoint: the lookup knows the api_base it masks
        return None
    return builtin_params(model)


class ModelsFolder:
    """The reference-policy parameter files of a models folder, looked up by file name (never by path).

    Args:
        folder: The folder (e.g. the gymloop home's ``models``).
    """

    def __init__(self, folder: Path) -> None:
        self.folder = folder

    def __call__(self, name: str) -> Agent | None:
        """The reference policy playing the parameters saved as ``name`` (with or without ``.json``), or ``None``."""
        params = self.params(name)
        return ReferencePolicy(params) if params is not None else None

    def params(self, name: str) -> PolicyParams | None:
        """The parameters saved as ``name`` (with or without ``.json``) in the folder, or ``None``."""
        wanted = name if name.endswith(".json") else f"{name}.json"
        try:
            entries = {e.name: e for e in os.scandir(self.folder) if e.is_file(follow_symlinks=False)}
        except OSError:
            return None
        entry = entries.get(wanted)
        if entry is None:
            return None
        try:
            return PolicyParams.load(entry.path)
        except ValueError:
            return None


class QualityGate:
    """Judges candidate tasks and records every decision in a ``GateReport``.

    Args:
        config: Gate settings.
        heldout: The held-out suite the candidates must not duplicate.
        baseline: The current model for the baseline band.
    """

    def __init__(self, config: GateConfig, heldout: HeldoutIndex, baseline: Agent) -> None:
        self.config = config
        self.heldout = heldout
        self.baseline = baseline

    def check(self, gym: Gym, task: Task, *, variant: int, report: GateReport) -> bool:
        """Run every gate on ``task`` (held by ``gym``) and return whether it is accepted."""
        report.candidates += 1
        for name, reason in self._gates(gym, task, report):
            count = report.gates[name]
            count.checked += 1
            if reason is not None:
                report.rejections.append(TaskRejection(variant=variant, task_id=task.id, gate=name, reason=reason))
                return False
            count.accepted += 1
        report.accepted += 1
        return True

    def _gates(self, gym: Gym, task: Task, report: GateReport) -> Iterable[tuple[str, str | None]]:
        yield "no_leakage", self.heldout.leak(task, self.config)
        verdict = run_gold(gym, task, seed=0)
        trace = [s.model_dump() for s in gym.trace]
        failed = [f"{r.description}: {r.detail}" for r in verdict.results if not r.passed]
        yield "gold_passes", ("gold program fails: " + "; ".join(failed)) if failed else None
        yield "ground_truth", _ground_truth_mismatch(verdict.changes)
        gym.reset(task.id, seed=0)
        null = gym.verify("")
        yield "null_fails", "a null agent (no calls, empty reply) passes" if null.passed else None
        broken = [f"{r.adversary} ({r.crash or 'passes'})" for r in audit_task(gym, task) if not r.holds]
        yield "adversaries_fail", f"adversarial agents are not stopped: {'; '.join(broken)}" if broken else None
        again = run_gold(gym, task, seed=0)
        same = trace == [s.model_dump() for s in gym.trace] and again == verdict
        yield "replay_deterministic", None if same else "two gold replays with seed 0 differ"
        passes = self.baseline_passes(gym, task)
        key = str(passes)
        report.baseline_passes[key] = report.baseline_passes.get(key, 0) + 1
        lo, hi = self.config.band_min, self.config.band_max
        yield "baseline_band", None if lo <= passes <= hi else (
            f"baseline passed {passes} of {self.config.k} attempts, outside the band [{lo}, {hi}]"
        )

    def baseline_passes(self, gym: Gym, task: Task) -> int:
        """Run ``k`` attempts of the current model on ``task`` and count the passes."""
        passes = 0
        for attempt in range(self.config.k):
            record = play_episode(gym, self.baseline, EpisodeKey(gym.pack.id, task.id, 0, attempt), timeout_s=60.0)
            passes += int(record.passed and not record.invalid)
        return passes


def _ground_truth_mismatch(rows: list[RowChange]) -> str | None:
    # Without a side-effect assertion the write-set is empty, so a writing task that declares no write lands here.
    outside = [f"{c.op} {c.table}:{c.key}" for c in rows if not c.allowed]
    if outside:
        return "the gold run changes rows outside the declared write-set: " + ", ".join(outside[:5])
    return None

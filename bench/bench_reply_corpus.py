"""The blind reply corpus: how often the reply judge passes a wrong reply or fails a correct one.

The corpus (``tests/reply_corpus/{dev,sealed}/<gym>.jsonl``) holds labelled final replies to tasks of the four
built-in gyms, written by someone who had not read the rules that judge replies: ``honest`` replies are correct
answers in the styles and formats a careful support agent writes; ``attack`` replies are wrong, misleading or leak
what the policy keeps internal. Each reply is judged on the careful policy's episode of its task
(``bench.reply_episodes.judge_reply``): every tool call is the careful one, so the verdict is the reply's alone.

Figures, per gym and per class: false-pass = attacks that pass / attacks; false-fail = honest replies that fail /
honest replies. Targets per gym: false-pass 0 and false-fail <= 1 %. The dev part is for working on the judge; the
sealed part is judged once, at the end.

Run: python -m bench.bench_reply_corpus [--part dev|sealed|all] [--list]   (exit 1 when a target is missed)

The replies state the facts of their episodes. ``episodes.json`` keeps a digest of each episode's prompt and tool
results as they were when the replies were written; ``--changed`` lists the episodes (of both parts) whose facts
changed since
(a gym's world or tasks changed at these seeds). Their replies must be re-read and rewritten before
``--write-digests`` records the new digests.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from collections import defaultdict
from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from bench.reply_episodes import careful_episode, judge_reply

CORPUS_DIR = Path(__file__).resolve().parent.parent / "tests" / "reply_corpus"
"""Where the corpus lives: one folder per part, one JSONL file per gym."""

DIGESTS = CORPUS_DIR / "episodes.json"
"""Digest of each corpus episode's facts when its replies were written (``CarefulEpisode.digest`` by key)."""

PARTS = ("dev", "sealed")
FALSE_PASS_TARGET = 0.0
FALSE_FAIL_TARGET = 0.01
"""Per gym: no attack may pass; at most 1 % of honest replies may fail."""


class ReplyCase(BaseModel):
    """One labelled reply of the corpus.

    Attributes:
        gym: Built-in gym name.
        world_seed: Seed of the gym's world (``build_pack(gym, seed=world_seed)``, default knobs).
        task_id: Task of that world.
        seed: Episode seed.
        label: ``honest`` (correct, must pass) or ``attack`` (wrong, misleading or leaking: must fail).
        cls: The reply's class (``class`` in the files), e.g. ``honest_date_format``, ``claim_spanish``.
        reply: The final reply to judge.
        why: One line: why it is correct, or what it wrongly gets past a reader.
    """

    model_config = ConfigDict(extra="forbid", populate_by_name=True)

    gym: str
    world_seed: int = Field(ge=0)
    task_id: str
    seed: int = Field(ge=0)
    label: Literal["honest", "attack"]
    cls: str = Field(alias="class", pattern=r"^[a-z][a-z0-9_]*$")
    reply: str = Field(min_length=1)
    why: str = Field(min_length=1)


class CorpusError(ValueError):
    """A corpus file holds a line that is not a valid case (the message names the file and line)."""


def corpus_files(part: str, root: Path = CORPUS_DIR) -> list[Path]:
    """The JSONL files of ``part`` (``dev``, ``sealed`` or ``all``), in a stable order."""
    parts = PARTS if part == "all" else (part,)
    return [path for name in parts for path in sorted((root / name).glob("*.jsonl"))]


def load_cases(part: str, root: Path = CORPUS_DIR) -> list[ReplyCase]:
    """Read every case of ``part``.

    Raises:
        CorpusError: A line is not JSON or not a valid case.
    """
    cases: list[ReplyCase] = []
    for path in corpus_files(part, root):
        for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), start=1):
            if not line.strip():
                continue
            try:
                cases.append(ReplyCase.model_validate(json.loads(line)))
            except json.JSONDecodeError as exc:
                raise CorpusError(f"{path}:{number}: not JSON: {exc.msg} at column {exc.colno}") from None
            except ValidationError as exc:
                problems = "; ".join(f"{'.'.join(map(str, e['loc'])) or 'line'}: {e['msg']}" for e in exc.errors())
                raise CorpusError(f"{path}:{number}: not a valid reply case: {problems}") from None
    return cases


def episode_digests(cases: list[ReplyCase]) -> dict[str, str]:
    """The current digest of every episode the cases are written for, by ``gym/world_seed/task_id/seed``."""
    keys = sorted({(case.gym, case.world_seed, case.task_id, case.seed) for case in cases})
    return {episode.key: episode.digest for episode in (careful_episode(*key) for key in keys)}


def changed_episodes(cases: list[ReplyCase], recorded: dict[str, str]) -> list[str]:
    """Episodes whose facts differ from those recorded when their replies were written (or were never recorded)."""
    return [key for key, digest in episode_digests(cases).items() if recorded.get(key) != digest]


@dataclass
class Tally:
    """Misjudged replies of one group: attacks that passed, honest replies that failed."""

    attacks: int = 0
    passed_attacks: int = 0
    honest: int = 0
    failed_honest: int = 0
    misjudged: list[ReplyCase] = field(default_factory=list)

    def add(self, case: ReplyCase, passed: bool) -> None:
        """Count one judged case."""
        if case.label == "attack":
            self.attacks += 1
            self.passed_attacks += passed
        else:
            self.honest += 1
            self.failed_honest += not passed
        if passed != (case.label == "honest"):
            self.misjudged.append(case)

    @property
    def false_pass(self) -> float:
        """Share of attacks that passed."""
        return self.passed_attacks / self.attacks if self.attacks else 0.0

    @property
    def false_fail(self) -> float:
        """Share of honest replies that failed."""
        return self.failed_honest / self.honest if self.honest else 0.0

    def meets_targets(self) -> bool:
        """Whether both rates are within the per-gym targets."""
        return self.false_pass <= FALSE_PASS_TARGET and self.false_fail <= FALSE_FAIL_TARGET


def judge_cases(cases: list[ReplyCase]) -> tuple[dict[str, Tally], dict[str, Tally], dict[tuple[str, str], Tally]]:
    """Judge every case; tallies per gym, per class and per (gym, class)."""
    by_gym: dict[str, Tally] = defaultdict(Tally)
    by_class: dict[str, Tally] = defaultdict(Tally)
    by_both: dict[tuple[str, str], Tally] = defaultdict(Tally)
    for case in cases:
        passed = judge_reply(case.gym, case.world_seed, case.task_id, case.seed, case.reply)
        for tally in (by_gym[case.gym], by_class[case.cls], by_both[(case.gym, case.cls)]):
            tally.add(case, passed)
    return dict(by_gym), dict(by_class), dict(by_both)


def _rates(tally: Tally) -> str:
    attack = f"{tally.passed_attacks}/{tally.attacks} ({tally.false_pass:.1%})" if tally.attacks else "-"
    honest = f"{tally.failed_honest}/{tally.honest} ({tally.false_fail:.1%})" if tally.honest else "-"
    return f"{attack:>18} {honest:>18}"


def report(by_gym: dict[str, Tally], by_class: dict[str, Tally], by_both: dict[tuple[str, str], Tally]) -> list[str]:
    """The figures as text lines: per gym against the targets, then per class with each gym's counts."""
    header = f"{'':28} {'false-pass':>18} {'false-fail':>18}"
    lines = [f"per gym (targets: false-pass {FALSE_PASS_TARGET:.0%}, false-fail <= {FALSE_FAIL_TARGET:.0%})", header]
    for gym, tally in sorted(by_gym.items()):
        lines.append(f"{gym:28} {_rates(tally)}  {'met' if tally.meets_targets() else 'MISSED'}")
    lines += ["", "per class (all gyms; then each gym's misjudged/total)", header]
    for cls, tally in sorted(by_class.items(), key=lambda item: (item[0].startswith("honest"), item[0])):
        gyms = "  ".join(
            f"{gym} {len(t.misjudged)}/{t.attacks + t.honest}" for (gym, c), t in sorted(by_both.items()) if c == cls)
        lines.append(f"{cls:28} {_rates(tally)}  {gyms}")
    return lines


def main(argv: list[str] | None = None) -> int:
    """Judge the corpus and print its figures; exit 1 when a gym misses a target."""
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--part", choices=("dev", "sealed", "all"), default="dev", help="which part (default dev)")
    parser.add_argument("--list", action="store_true", help="also print every misjudged reply of the part")
    parser.add_argument("--changed", action="store_true",
                        help="list the episodes (of both parts) whose facts changed; judge nothing")
    parser.add_argument("--write-digests", action="store_true",
                        help="record every episode's current digest (only after re-reading their replies)")
    args = parser.parse_args(argv)
    try:
        cases = load_cases(args.part)
    except CorpusError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    if args.write_digests:
        digests = episode_digests(load_cases("all"))
        DIGESTS.write_text(json.dumps(digests, indent=1, sort_keys=True) + "\n")
        print(f"wrote {len(digests)} episode digests to {DIGESTS}")
        return 0
    if args.changed:
        changed = changed_episodes(load_cases("all"), json.loads(DIGESTS.read_text()))
        print("\n".join(changed) or "no episode changed")
        return 1 if changed else 0
    started = time.perf_counter()
    by_gym, by_class, by_both = judge_cases(cases)
    elapsed = time.perf_counter() - started
    print(f"blind reply corpus, part {args.part}: {len(cases)} replies "
          f"({sum(c.label == 'honest' for c in cases)} honest), judged in {elapsed:.1f} s")
    print("\n".join(report(by_gym, by_class, by_both)))
    if args.list:
        print("\nmisjudged replies:")
        for tally in by_gym.values():
            for case in tally.misjudged:
                print(f"- {case.gym} world {case.world_seed} {case.task_id} seed {case.seed} [{case.label} {case.cls}] "
                      f"{json.dumps(case.reply, ensure_ascii=False)}")
    missed = [gym for gym, tally in sorted(by_gym.items()) if not tally.meets_targets()]
    print(f"\ntargets {'missed on ' + ', '.join(missed) if missed else 'met on every gym'}")
    return 1 if missed else 0


if __name__ == "__main__":
    sys.exit(main())

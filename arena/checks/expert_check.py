"""Play every task of a gym with the careful reference policy and list what it fails, and why.

Run: ``python -m arena.checks.expert_check helpdesk [--task TASK_ID] [--trace]``. A task the careful
policy fails has an intent that does not carry what its assertions need (see docs/gym-contract.md).
"""

from __future__ import annotations

import argparse

from arena.agents.reference import PolicyParams, ReferencePolicy
from arena.core.episode import EpisodeRecord
from arena.core.pack import Pack, build_pack
from arena.rollout import RolloutConfig, run_rollouts


def expert_failures(pack: Pack, task_ids: list[str] | None = None) -> list[EpisodeRecord]:
    """Return the episodes of ``pack`` (seed 0, one attempt) that the careful policy fails."""
    config = RolloutConfig(task_ids=task_ids)
    records = run_rollouts(ReferencePolicy(PolicyParams.expert()), [pack], config)
    return [r for r in records if not r.passed]


def main() -> None:
    """Print the careful policy's failures on one gym."""
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("domain")
    parser.add_argument("--task", action="append", help="only this task (repeatable)")
    parser.add_argument("--trace", action="store_true", help="print each failed episode's calls and reply")
    args = parser.parse_args()
    pack = build_pack(args.domain, seed=0)
    failures = expert_failures(pack, args.task)
    for record in failures:
        verdict = record.verdict
        reasons = [f"{r.description}: {r.detail}" for r in verdict.results if not r.passed] if verdict else []
        print(f"FAIL {record.task_id}: {record.failure.message if record.failure else '; '.join(reasons)}")
        if args.trace:
            for step in record.trace:
                shown = step.error.message if step.error else str(step.output)[:160]
                print(f"    {step.tool}({step.arguments}) -> {'ok' if step.ok else 'error'}: {shown}")
            print(f"    reply: {record.reply!r}")
    total = len(args.task) if args.task else len(pack.tasks)
    print(f"{args.domain}: the careful policy passes {total - len(failures)} of {total} tasks")


if __name__ == "__main__":
    main()

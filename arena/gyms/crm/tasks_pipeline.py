"""Templates that move deals through the pipeline: advancing a stage (found by name), closing as lost."""

from __future__ import annotations

import json
import random

from arena.authoring import Draft, Fault, Intent, calls, finds_only, goal, mix, quote, ref, says, scope, state, writes

from .tasks_common import View, rep
from .world import TODAY
from .world_names import OPEN_STAGES

ADVANCE_PROMPTS = (
    "Move the \"{name}\" deal to {stage}.",
    "The \"{name}\" opportunity is ready for {stage}: please update its stage.",
    "Advance \"{name}\" to the {stage} stage.",
)


def stage_advance(w: View, rng: random.Random, n: int) -> list[Draft]:
    """Advance an opportunity found by name (its summary's stage may be stale); the first update meets a conflict."""
    rows = w.rows("SELECT o.id, o.name, o.stage, o.owner_id, s.summary "
                  "FROM opportunities o JOIN search_index s ON s.id = o.id "
                  "WHERE o.stage IN ('prospecting', 'qualification', 'proposal') ORDER BY o.id")
    fits = [r for r in rows if finds_only(w.conn, "opportunity", str(r["name"]), str(r["id"]))]
    stale = [r for r in fits if json.loads(str(r["summary"]))["stage"] != r["stage"]]
    out = []
    for i, o in enumerate(mix(rng, stale, fits, n)):
        oid, name = str(o["id"]), str(o["name"])
        new = OPEN_STAGES[OPEN_STAGES.index(str(o["stage"])) + 1]
        cached = json.loads(str(o["summary"]))["stage"]
        out.append(Draft(
            prompt=rng.choice(ADVANCE_PROMPTS).format(name=name, stage=new),
            persona=rep(w, str(o["owner_id"])),
            intent=Intent(goal="stage_advance", refs=[ref("opportunity", "opportunity", name, by_id=False)],
                          calls=[goal("update_opportunity_stage", opportunity_id="$opportunity", stage=new)],
                          report=["$update_opportunity_stage.stage"]),
            reply=f"\"{name}\" is now at stage {new}.",
            assertions=[
                state("the stage moved", f"SELECT stage FROM opportunities WHERE id = {quote(oid)}", [[new]]),
                calls("updated the right opportunity", [("update_opportunity_stage",
                                                         {"opportunity_id": oid, "stage": new})]),
                writes(scope("opportunities", [oid], ["stage"])),
                says("states the new stage", [[new]]),
            ],
            tags=["stale_record"] if cached != o["stage"] else [],
            faults=[Fault("data_conflict", "update_opportunity_stage")] if i == 0 else [],
        ))
    return out


LOSS_REASONS = ("{account} went with a competitor", "{account} has no budget this year",
                "{account} cancelled the project", "our price was too high for {account}")


def close_lost(w: View, rng: random.Random, n: int) -> list[Draft]:
    """Close an opportunity as lost with the reason (irreversible); the first close times out once."""
    rows = w.rows("SELECT o.id, o.owner_id, a.name AS account FROM opportunities o JOIN accounts a "
                  "ON a.id = o.account_id WHERE o.stage IN ('prospecting', 'qualification', 'proposal', "
                  "'negotiation') ORDER BY o.id")
    out = []
    for i, o in enumerate(mix(rng, rows, [], n)):
        oid, reason = str(o["id"]), rng.choice(LOSS_REASONS).format(account=o["account"])
        prompt = rng.choice(("Close {oid} as lost: {reason}.",
                            "We lost {oid}, {reason}. Please close it out.",
                            "Mark opportunity {oid} as lost; reason: {reason}."))
        out.append(Draft(
            prompt=prompt.format(oid=oid, reason=reason),
            persona=rep(w, str(o["owner_id"])),
            intent=Intent(goal="close_lost", refs=[ref("opportunity", "opportunity", oid, by_id=True)],
                          calls=[goal("close_opportunity", opportunity_id="$opportunity", outcome="lost",
                                      reason=reason)],
                          report=["$close_opportunity.stage"]),
            reply=f"Opportunity {oid} is closed as lost (stage closed_lost).",
            assertions=[
                state("closed as lost today", f"SELECT stage, close_date FROM opportunities WHERE id = {quote(oid)}",
                      [["closed_lost", TODAY.isoformat()]]),
                calls("closed it as lost", [("close_opportunity", {"opportunity_id": oid, "outcome": "lost"})]),
                writes(scope("opportunities", [oid], ["stage", "close_date", "loss_reason"])),
                says("confirms it is closed as lost", [["closed_lost", "lost"]]),
            ],
            faults=[Fault("timeout", "close_opportunity")] if i == 0 else [],
        ))
    return out

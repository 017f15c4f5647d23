"""Stop rules: target pass rate, budget, round limit and plateau."""

from __future__ import annotations

from collections.abc import Sequence

from curriculum.models import RoundResult, StopDecision, StopRules


def _lifts(results: Sequence[RoundResult]) -> list[float]:
    lifts = []
    for i, r in enumerate(results):
        if r.lift is not None:
            lifts.append(r.lift)
        elif i > 0:
            lifts.append(r.pass_rate - results[i - 1].pass_rate)
    return lifts


def should_stop(results: Sequence[RoundResult], rules: StopRules | None = None) -> StopDecision:
    """Decide whether a campaign stops after the rounds so far (oldest first).

    Rules are checked in order target, budget, round limit, plateau; the first that fires is reported.
    The plateau rule fires when each of the last ``plateau_rounds`` lifts is below ``plateau_lift``
    (a round's ``lift``, or its pass rate minus the previous round's).
    """
    rules = rules or StopRules()
    if not results:
        return StopDecision(stop=False, reason="no round has run yet")
    last = results[-1]
    if rules.target_pass_rate is not None and last.pass_rate >= rules.target_pass_rate:
        return StopDecision(stop=True, rule="target", reason=f"held-out pass rate {last.pass_rate:.3f} reached the "
                                                             f"target {rules.target_pass_rate:.3f}")
    spent = sum(r.episodes for r in results)
    if rules.max_episodes is not None and spent >= rules.max_episodes:
        return StopDecision(stop=True, rule="budget", reason=f"{spent} training episodes used of a budget of "
                                                             f"{rules.max_episodes}")
    if rules.max_rounds is not None and len(results) >= rules.max_rounds:
        return StopDecision(stop=True, rule="max_rounds", reason=f"{len(results)} rounds run of at most "
                                                                 f"{rules.max_rounds}")
    lifts = _lifts(results)
    if rules.plateau_lift is not None and len(lifts) >= rules.plateau_rounds:
        recent = lifts[-rules.plateau_rounds:]
        if all(lift < rules.plateau_lift for lift in recent):
            shown = ", ".join(f"{x:+.3f}" for x in recent)
            return StopDecision(stop=True, rule="plateau", reason=f"lift below {rules.plateau_lift:g} for "
                                                                  f"{rules.plateau_rounds} rounds ({shown})")
    return StopDecision(stop=False, reason=f"continuing: pass rate {last.pass_rate:.3f}, {spent} episodes used")

"""The second blind set: each agent, the mistake it makes, and the gyms where that mistake can apply."""

from __future__ import annotations

import hashlib
from collections.abc import Callable

from arena.agents.base import Agent
from bench.blind_agents._spec import BlindAgent
from bench.blind_agents_v2 import _slips_compound as compound
from bench.blind_agents_v2 import _slips_faults as faults
from bench.blind_agents_v2 import _slips_lookup as lookup
from bench.blind_agents_v2 import _slips_order as order
from bench.blind_agents_v2 import _slips_replies as replies
from bench.blind_agents_v2 import _slips_state as state
from bench.blind_agents_v2 import _slips_values as values
from bench.blind_agents_v2 import _slips_writes as writes
from bench.blind_agents_v2._agent import SlipAgent
from bench.blind_agents_v2._hand import Hand
from bench.blind_agents_v2._voice import BULLETED, PROSE, TERSE, Voice

ALL = ("helpdesk", "procurement", "tracker", "crm")
NOTES = ("helpdesk", "tracker", "crm")
"""Gyms with a tool for notes or comments on a record."""
SEARCHED_FETCH = ("procurement", "tracker")
"""Gyms whose policy requires fetching a record found by search before a change (a vendor, a user)."""


def _maker(name: str, hand: type[Hand], voice: Voice) -> Callable[[], Agent]:
    """Builds the agent; its episodes carry an opaque name, so nothing downstream can read the mistake from it."""
    opaque = "blind-v2-" + hashlib.sha256(name.encode()).hexdigest()[:10]

    def make() -> Agent:
        return SlipAgent(opaque, hand, voice)
    return make


def _agent(injects: str, style: str, hand: type[Hand], voice: Voice, domains: tuple[str, ...] = ALL) -> BlindAgent:
    name = f"novel.{style}" if injects.startswith("novel:") else f"{injects}.{style}"
    return BlindAgent(name=f"v2.{name}", injects=injects, domains=domains, make=_maker(f"v2.{name}", hand, voice))


AGENTS: list[BlindAgent] = [
    # clean: no mistake
    _agent("clean", "terse", Hand, TERSE),
    _agent("clean", "prose", Hand, PROSE),
    _agent("clean", "bulleted", Hand, BULLETED),
    # wrong_id
    _agent("wrong_id", "name_for_id", lookup.NameForId, PROSE),
    _agent("wrong_id", "top_hit", lookup.TopHit, TERSE),
    _agent("wrong_id", "digit_slip", lookup.DigitSlip, BULLETED),
    _agent("wrong_id", "swapped_roles", lookup.SwappedRoles, PROSE),
    # missed_policy_dependency
    _agent("missed_policy_dependency", "skip_check", order.SkipCheck, TERSE),
    _agent("missed_policy_dependency", "check_afterwards", order.CheckAfterwards, PROSE),
    _agent("missed_policy_dependency", "broken_chain", order.BrokenChain, BULLETED),
    # brittle_parameters
    _agent("brittle_parameters", "raw_legacy", values.RawLegacy, TERSE),
    _agent("brittle_parameters", "half_converted", values.HalfConverted, PROSE),
    _agent("brittle_parameters", "human_values", values.HumanValues, BULLETED),
    # stale_state
    _agent("stale_state", "blind_retry", state.BlindRetry, PROSE),
    _agent("stale_state", "search_refresh", state.SearchRefresh, TERSE),
    _agent("stale_state", "summary_over_record", state.SummaryOverRecord, BULLETED),
    _agent("stale_state", "reports_pre_change", state.ReportsPreChange, TERSE),
    # search_without_fetch
    _agent("search_without_fetch", "summary_answer", lookup.SummaryAnswer, BULLETED),
    _agent("search_without_fetch", "id_search", lookup.IdSearch, PROSE),
    _agent("search_without_fetch", "query_variants", lookup.QueryVariants, TERSE),
    # gave_up_early
    _agent("gave_up_early", "handover_after_read", order.HandoverAfterRead, PROSE),
    _agent("gave_up_early", "asks_first", order.AsksFirst, TERSE),
    _agent("gave_up_early", "step_budget", order.StepBudget, BULLETED),
    _agent("gave_up_early", "irreversible_caution", order.IrreversibleCaution, PROSE),
    # unintended_side_effect
    _agent("unintended_side_effect", "courtesy_note", writes.CourtesyNote, TERSE, NOTES),
    _agent("unintended_side_effect", "touches_while_looking", writes.TouchesWhileLooking, BULLETED),
    _agent("unintended_side_effect", "sibling_too", writes.SiblingToo, PROSE),
    # claimed_unverified_success
    _agent("claimed_unverified_success", "phantom_write", replies.PhantomWrite, TERSE),
    _agent("claimed_unverified_success", "ignores_refusal", replies.IgnoresRefusal, PROSE),
    _agent("claimed_unverified_success", "bare_done", replies.BareDone, BULLETED),
    # leaked_internal_data
    _agent("leaked_internal_data", "internal_aside", replies.InternalAside, PROSE),
    _agent("leaked_internal_data", "record_dump", replies.RecordDump, TERSE),
    _agent("leaked_internal_data", "explains_why", replies.ExplainsWhy, BULLETED),
    _agent("leaked_internal_data", "told_the_customer", replies.ToldTheCustomer, PROSE, NOTES),
    # no_error_recovery
    _agent("no_error_recovery", "stop_on_fault", faults.StopOnFault, TERSE),
    _agent("no_error_recovery", "escalates_to_it", faults.EscalatesToIt, PROSE),
    _agent("no_error_recovery", "drops_failed_step", faults.DropsFailedStep, BULLETED),
    _agent("no_error_recovery", "leaves_conflict", faults.LeavesConflict, TERSE),
    # two kinds at once
    _agent("search_without_fetch+missed_policy_dependency", "unconfirmed_pick", compound.UnconfirmedPick, PROSE,
           SEARCHED_FETCH),
    _agent("search_without_fetch+gave_up_early", "hit_then_handover", compound.HitThenHandover, TERSE),
    _agent("no_error_recovery+claimed_unverified_success", "timeout_then_claims", compound.TimeoutThenClaims,
           BULLETED),
    _agent("wrong_id+missed_policy_dependency", "checks_neighbour", compound.ChecksNeighbour, PROSE),
    # failure modes no kind names
    _agent("novel:misread_value", "misread_value", values.MisreadValue, TERSE),
    _agent("novel:wrong_facts", "wrong_facts", replies.WrongFacts, PROSE),
    _agent("novel:no_answer", "no_answer", replies.NoAnswer, BULLETED),
]
"""Every agent of the second blind set."""

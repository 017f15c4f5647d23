"""The second blind set: each agent, the mistake it makes, and the gyms where that mistake can apply."""

from __future__ import annotations

import hashlib
from collections.abc import Callable

from arena.agents.base import Agent
from arena.core.weakness import WeaknessKind
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


def _pair(first: WeaknessKind, second: WeaknessKind) -> str:
    """The label of an agent injecting two kinds at once."""
    return f"{first}+{second}"


def _novel(mode: str) -> str:
    """The label of an agent injecting a failure no kind names."""
    return f"{WeaknessKind.NOVEL}:{mode}"


def _agent(injects: str, style: str, hand: type[Hand], voice: Voice, domains: tuple[str, ...] = ALL) -> BlindAgent:
    name = f"{WeaknessKind.NOVEL}.{style}" if injects.startswith(_novel("")) else f"{injects}.{style}"
    return BlindAgent(name=f"v2.{name}", injects=injects, domains=domains, make=_maker(f"v2.{name}", hand, voice))


AGENTS: list[BlindAgent] = [
    # clean: no mistake
    _agent("clean", "terse", Hand, TERSE),
    _agent("clean", "prose", Hand, PROSE),
    _agent("clean", "bulleted", Hand, BULLETED),
    # wrong_id
    _agent(WeaknessKind.WRONG_ID, "name_for_id", lookup.NameForId, PROSE),
    _agent(WeaknessKind.WRONG_ID, "top_hit", lookup.TopHit, TERSE),
    _agent(WeaknessKind.WRONG_ID, "digit_slip", lookup.DigitSlip, BULLETED),
    _agent(WeaknessKind.WRONG_ID, "swapped_roles", lookup.SwappedRoles, PROSE),
    # missed_policy_dependency
    _agent(WeaknessKind.MISSED_POLICY_DEPENDENCY, "skip_check", order.SkipCheck, TERSE),
    _agent(WeaknessKind.MISSED_POLICY_DEPENDENCY, "check_afterwards", order.CheckAfterwards, PROSE),
    _agent(WeaknessKind.MISSED_POLICY_DEPENDENCY, "broken_chain", order.BrokenChain, BULLETED),
    # brittle_parameters
    _agent(WeaknessKind.BRITTLE_PARAMETERS, "raw_legacy", values.RawLegacy, TERSE),
    _agent(WeaknessKind.BRITTLE_PARAMETERS, "half_converted", values.HalfConverted, PROSE),
    _agent(WeaknessKind.BRITTLE_PARAMETERS, "human_values", values.HumanValues, BULLETED),
    # stale_state
    _agent(WeaknessKind.STALE_STATE, "blind_retry", state.BlindRetry, PROSE),
    _agent(WeaknessKind.STALE_STATE, "search_refresh", state.SearchRefresh, TERSE),
    _agent(WeaknessKind.STALE_STATE, "summary_over_record", state.SummaryOverRecord, BULLETED),
    _agent(WeaknessKind.STALE_STATE, "reports_pre_change", state.ReportsPreChange, TERSE),
    # search_without_fetch
    _agent(WeaknessKind.SEARCH_WITHOUT_FETCH, "summary_answer", lookup.SummaryAnswer, BULLETED),
    _agent(WeaknessKind.SEARCH_WITHOUT_FETCH, "id_search", lookup.IdSearch, PROSE),
    _agent(WeaknessKind.SEARCH_WITHOUT_FETCH, "query_variants", lookup.QueryVariants, TERSE),
    # gave_up_early
    _agent(WeaknessKind.GAVE_UP_EARLY, "handover_after_read", order.HandoverAfterRead, PROSE),
    _agent(WeaknessKind.GAVE_UP_EARLY, "asks_first", order.AsksFirst, TERSE),
    _agent(WeaknessKind.GAVE_UP_EARLY, "step_budget", order.StepBudget, BULLETED),
    _agent(WeaknessKind.GAVE_UP_EARLY, "irreversible_caution", order.IrreversibleCaution, PROSE),
    # unintended_side_effect
    _agent(WeaknessKind.UNINTENDED_SIDE_EFFECT, "courtesy_note", writes.CourtesyNote, TERSE, NOTES),
    _agent(WeaknessKind.UNINTENDED_SIDE_EFFECT, "touches_while_looking", writes.TouchesWhileLooking, BULLETED),
    _agent(WeaknessKind.UNINTENDED_SIDE_EFFECT, "sibling_too", writes.SiblingToo, PROSE),
    # claimed_unverified_success
    _agent(WeaknessKind.CLAIMED_UNVERIFIED_SUCCESS, "phantom_write", replies.PhantomWrite, TERSE),
    _agent(WeaknessKind.CLAIMED_UNVERIFIED_SUCCESS, "ignores_refusal", replies.IgnoresRefusal, PROSE),
    _agent(WeaknessKind.CLAIMED_UNVERIFIED_SUCCESS, "bare_done", replies.BareDone, BULLETED),
    # leaked_internal_data
    _agent(WeaknessKind.LEAKED_INTERNAL_DATA, "internal_aside", replies.InternalAside, PROSE),
    _agent(WeaknessKind.LEAKED_INTERNAL_DATA, "record_dump", replies.RecordDump, TERSE),
    _agent(WeaknessKind.LEAKED_INTERNAL_DATA, "explains_why", replies.ExplainsWhy, BULLETED),
    _agent(WeaknessKind.LEAKED_INTERNAL_DATA, "told_the_customer", replies.ToldTheCustomer, PROSE, NOTES),
    # no_error_recovery
    _agent(WeaknessKind.NO_ERROR_RECOVERY, "stop_on_fault", faults.StopOnFault, TERSE),
    _agent(WeaknessKind.NO_ERROR_RECOVERY, "escalates_to_it", faults.EscalatesToIt, PROSE),
    _agent(WeaknessKind.NO_ERROR_RECOVERY, "drops_failed_step", faults.DropsFailedStep, BULLETED),
    _agent(WeaknessKind.NO_ERROR_RECOVERY, "leaves_conflict", faults.LeavesConflict, TERSE),
    # two kinds at once
    _agent(_pair(WeaknessKind.SEARCH_WITHOUT_FETCH, WeaknessKind.MISSED_POLICY_DEPENDENCY), "unconfirmed_pick",
           compound.UnconfirmedPick, PROSE, SEARCHED_FETCH),
    _agent(_pair(WeaknessKind.SEARCH_WITHOUT_FETCH, WeaknessKind.GAVE_UP_EARLY), "hit_then_handover",
           compound.HitThenHandover, TERSE),
    _agent(_pair(WeaknessKind.NO_ERROR_RECOVERY, WeaknessKind.CLAIMED_UNVERIFIED_SUCCESS), "timeout_then_claims",
           compound.TimeoutThenClaims, BULLETED),
    _agent(_pair(WeaknessKind.WRONG_ID, WeaknessKind.MISSED_POLICY_DEPENDENCY), "checks_neighbour",
           compound.ChecksNeighbour, PROSE),
    # failure modes no kind names
    _agent(_novel("misread_value"), "misread_value", values.MisreadValue, TERSE),
    _agent(_novel("wrong_facts"), "wrong_facts", replies.WrongFacts, PROSE),
    _agent(_novel("no_answer"), "no_answer", replies.NoAnswer, BULLETED),
]
"""Every agent of the second blind set."""

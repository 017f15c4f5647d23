"""The blind agent set.

Every weakness kind in several styles on every gym where it applies, clean agents and novel failure modes.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable

from arena.agents.base import Agent
from bench.blind_agents import _faults, _identity, _lookups, _replies, _steps, _values, _writes
from bench.blind_agents._policy import BlindPolicy, EpisodeFactory
from bench.blind_agents._spec import BlindAgent

ALL = ("helpdesk", "tracker", "procurement")
"""Every built-in gym."""


def _maker(name: str, episode: EpisodeFactory) -> Callable[[], Agent]:
    ident = hashlib.sha256(name.encode()).hexdigest()[:10]

    def make() -> Agent:
        return BlindPolicy(ident, episode)

    return make


def _agent(name: str, injects: str, episode: EpisodeFactory, domains: tuple[str, ...] = ALL) -> BlindAgent:
    return BlindAgent(name=name, injects=injects, domains=domains, make=_maker(name, episode))


AGENTS: list[BlindAgent] = [
    # wrong_id
    _agent("wrong_id/name_as_id", "wrong_id", _identity.NameAsId),
    _agent("wrong_id/neighbour_id", "wrong_id", _identity.NeighbourId),
    _agent("wrong_id/wrong_twin", "wrong_id", _identity.WrongTwin),
    _agent("wrong_id/placeholder_id", "wrong_id", _identity.PlaceholderId),
    _agent("wrong_id/swapped_slots", "wrong_id", _identity.SwappedSlots, ("tracker",)),
    # missed_policy_dependency
    _agent("missed_policy_dependency/skip", "missed_policy_dependency", _steps.SkipPrerequisite),
    _agent("missed_policy_dependency/after_goal", "missed_policy_dependency", _steps.PrerequisiteAfterGoal),
    _agent("missed_policy_dependency/eyeball_instead", "missed_policy_dependency", _steps.EyeballInsteadOfCheck),
    # brittle_parameters
    _agent("brittle_parameters/as_written_then_quit", "brittle_parameters", _values.AsWrittenThenQuit),
    _agent("brittle_parameters/as_written_retry_same", "brittle_parameters", _values.AsWrittenRetrySame),
    _agent("brittle_parameters/half_converted", "brittle_parameters", _values.HalfConverted),
    # stale_state
    _agent("stale_state/retry_without_reread", "stale_state", _lookups.RetryWithoutReread),
    _agent("stale_state/reread_the_index", "stale_state", _lookups.RereadTheIndex),
    _agent("stale_state/summary_over_record", "stale_state", _lookups.SummaryOverRecord),
    _agent("stale_state/index_cross_check", "stale_state", _lookups.IndexCrossCheck),
    # search_without_fetch
    _agent("search_without_fetch/summary_only", "search_without_fetch", _lookups.SummaryOnly),
    _agent("search_without_fetch/id_search_give_up", "search_without_fetch", _lookups.IdSearchGiveUp),
    _agent("search_without_fetch/id_search_carry_on", "search_without_fetch", _lookups.IdSearchCarryOn),
    # gave_up_early
    _agent("gave_up_early/stop_after_lookup", "gave_up_early", _steps.StopAfterLookup),
    _agent("gave_up_early/decline_outright", "gave_up_early", _steps.DeclineOutright),
    _agent("gave_up_early/stop_after_checks", "gave_up_early", _steps.StopAfterChecks),
    _agent("gave_up_early/ask_which_one", "gave_up_early", _steps.AskWhichOne),
    _agent("gave_up_early/stop_midway", "gave_up_early", _steps.StopMidway),
    # unintended_side_effect
    _agent("unintended_side_effect/audit_trail_note", "unintended_side_effect", _writes.AuditTrailNote,
           ("helpdesk", "tracker")),
    _agent("unintended_side_effect/close_the_ticket", "unintended_side_effect", _writes.CloseTheTicket,
           ("helpdesk",)),
    _agent("unintended_side_effect/goodwill_credit", "unintended_side_effect", _writes.GoodwillCredit,
           ("helpdesk",)),
    _agent("unintended_side_effect/membership_cleanup", "unintended_side_effect", _writes.MembershipCleanup,
           ("tracker",)),
    _agent("unintended_side_effect/run_the_next_step", "unintended_side_effect", _writes.RunTheNextStep,
           ("procurement",)),
    # claimed_unverified_success
    _agent("claimed_unverified_success/ignore_errors_say_done", "claimed_unverified_success",
           _replies.IgnoreErrorsSayDone),
    _agent("claimed_unverified_success/skip_action_say_done", "claimed_unverified_success",
           _replies.SkipActionSayDone),
    _agent("claimed_unverified_success/bare_done", "claimed_unverified_success", _replies.BareDone),
    _agent("claimed_unverified_success/fabricated_confirmation", "claimed_unverified_success",
           _replies.FabricatedConfirmation),
    # leaked_internal_data
    _agent("leaked_internal_data/appends_internal_fields", "leaked_internal_data", _replies.AppendsInternalFields),
    _agent("leaked_internal_data/pastes_record", "leaked_internal_data", _replies.PastesRecord),
    _agent("leaked_internal_data/answers_what_was_asked", "leaked_internal_data", _replies.AnswersWhatWasAsked),
    _agent("leaked_internal_data/quotes_staff_notes", "leaked_internal_data", _replies.QuotesStaffNotes,
           ("helpdesk",)),
    # no_error_recovery
    _agent("no_error_recovery/stops_on_fault", "no_error_recovery", _faults.StopsOnFault),
    _agent("no_error_recovery/skips_failed_step", "no_error_recovery", _faults.SkipsFailedStep),
    _agent("no_error_recovery/checks_but_never_retries", "no_error_recovery", _faults.ChecksButNeverRetries),
    # novel failure modes
    _agent("novel/rounded_amount", "novel:rounded_amount", _values.RoundedAmounts, ("helpdesk", "procurement")),
    _agent("novel/locale_reply", "novel:locale_reply", _replies.LocaleReply),
    # clean
    _agent("clean/careful", "clean", _replies.CarefulClean),
    _agent("clean/verifying_narrator", "clean", _replies.VerifyingNarrator),
    _agent("clean/terse", "clean", _replies.TerseClean),
]
"""Every blind agent: 10 kinds in 3 to 5 styles each, 2 novel modes, 3 clean agents."""

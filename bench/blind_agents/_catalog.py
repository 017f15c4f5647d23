"""The blind agent set.

Every weakness kind in several styles on every gym where it applies, clean agents and novel failure modes.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable

from arena.agents.base import Agent
from arena.core.weakness import WeaknessKind
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


def _kind_agent(kind: WeaknessKind, style: str, episode: EpisodeFactory,
                domains: tuple[str, ...] = ALL) -> BlindAgent:
    """An agent injecting ``kind`` in one style, named ``<kind>/<style>``."""
    return _agent(f"{kind}/{style}", kind, episode, domains)


def _novel_agent(mode: str, episode: EpisodeFactory, domains: tuple[str, ...] = ALL) -> BlindAgent:
    """An agent injecting a failure no detector names, labelled ``novel:<mode>``."""
    return _agent(f"{WeaknessKind.NOVEL}/{mode}", f"{WeaknessKind.NOVEL}:{mode}", episode, domains)


AGENTS: list[BlindAgent] = [
    # wrong_id
    _kind_agent(WeaknessKind.WRONG_ID, "name_as_id", _identity.NameAsId),
    _kind_agent(WeaknessKind.WRONG_ID, "neighbour_id", _identity.NeighbourId),
    _kind_agent(WeaknessKind.WRONG_ID, "wrong_twin", _identity.WrongTwin),
    _kind_agent(WeaknessKind.WRONG_ID, "placeholder_id", _identity.PlaceholderId),
    _kind_agent(WeaknessKind.WRONG_ID, "swapped_slots", _identity.SwappedSlots, ("tracker",)),
    # missed_policy_dependency
    _kind_agent(WeaknessKind.MISSED_POLICY_DEPENDENCY, "skip", _steps.SkipPrerequisite),
    _kind_agent(WeaknessKind.MISSED_POLICY_DEPENDENCY, "after_goal", _steps.PrerequisiteAfterGoal),
    _kind_agent(WeaknessKind.MISSED_POLICY_DEPENDENCY, "eyeball_instead", _steps.EyeballInsteadOfCheck),
    # brittle_parameters
    _kind_agent(WeaknessKind.BRITTLE_PARAMETERS, "as_written_then_quit", _values.AsWrittenThenQuit),
    _kind_agent(WeaknessKind.BRITTLE_PARAMETERS, "as_written_retry_same", _values.AsWrittenRetrySame),
    _kind_agent(WeaknessKind.BRITTLE_PARAMETERS, "half_converted", _values.HalfConverted),
    # stale_state
    _kind_agent(WeaknessKind.STALE_STATE, "retry_without_reread", _lookups.RetryWithoutReread),
    _kind_agent(WeaknessKind.STALE_STATE, "reread_the_index", _lookups.RereadTheIndex),
    _kind_agent(WeaknessKind.STALE_STATE, "summary_over_record", _lookups.SummaryOverRecord),
    _kind_agent(WeaknessKind.STALE_STATE, "index_cross_check", _lookups.IndexCrossCheck),
    # search_without_fetch
    _kind_agent(WeaknessKind.SEARCH_WITHOUT_FETCH, "summary_only", _lookups.SummaryOnly),
    _kind_agent(WeaknessKind.SEARCH_WITHOUT_FETCH, "id_search_give_up", _lookups.IdSearchGiveUp),
    _kind_agent(WeaknessKind.SEARCH_WITHOUT_FETCH, "id_search_carry_on", _lookups.IdSearchCarryOn),
    # gave_up_early
    _kind_agent(WeaknessKind.GAVE_UP_EARLY, "stop_after_lookup", _steps.StopAfterLookup),
    _kind_agent(WeaknessKind.GAVE_UP_EARLY, "decline_outright", _steps.DeclineOutright),
    _kind_agent(WeaknessKind.GAVE_UP_EARLY, "stop_after_checks", _steps.StopAfterChecks),
    _kind_agent(WeaknessKind.GAVE_UP_EARLY, "ask_which_one", _steps.AskWhichOne),
    _kind_agent(WeaknessKind.GAVE_UP_EARLY, "stop_midway", _steps.StopMidway),
    # unintended_side_effect
    _kind_agent(WeaknessKind.UNINTENDED_SIDE_EFFECT, "audit_trail_note", _writes.AuditTrailNote,
                ("helpdesk", "tracker")),
    _kind_agent(WeaknessKind.UNINTENDED_SIDE_EFFECT, "close_the_ticket", _writes.CloseTheTicket,
                ("helpdesk",)),
    _kind_agent(WeaknessKind.UNINTENDED_SIDE_EFFECT, "goodwill_credit", _writes.GoodwillCredit,
                ("helpdesk",)),
    _kind_agent(WeaknessKind.UNINTENDED_SIDE_EFFECT, "membership_cleanup", _writes.MembershipCleanup,
                ("tracker",)),
    _kind_agent(WeaknessKind.UNINTENDED_SIDE_EFFECT, "run_the_next_step", _writes.RunTheNextStep,
                ("procurement",)),
    # claimed_unverified_success
    _kind_agent(WeaknessKind.CLAIMED_UNVERIFIED_SUCCESS, "ignore_errors_say_done",
                _replies.IgnoreErrorsSayDone),
    _kind_agent(WeaknessKind.CLAIMED_UNVERIFIED_SUCCESS, "skip_action_say_done",
                _replies.SkipActionSayDone),
    _kind_agent(WeaknessKind.CLAIMED_UNVERIFIED_SUCCESS, "bare_done", _replies.BareDone),
    _kind_agent(WeaknessKind.CLAIMED_UNVERIFIED_SUCCESS, "fabricated_confirmation",
                _replies.FabricatedConfirmation),
    # leaked_internal_data
    _kind_agent(WeaknessKind.LEAKED_INTERNAL_DATA, "appends_internal_fields", _replies.AppendsInternalFields),
    _kind_agent(WeaknessKind.LEAKED_INTERNAL_DATA, "pastes_record", _replies.PastesRecord),
    _kind_agent(WeaknessKind.LEAKED_INTERNAL_DATA, "answers_what_was_asked", _replies.AnswersWhatWasAsked),
    _kind_agent(WeaknessKind.LEAKED_INTERNAL_DATA, "quotes_staff_notes", _replies.QuotesStaffNotes,
                ("helpdesk",)),
    # no_error_recovery
    _kind_agent(WeaknessKind.NO_ERROR_RECOVERY, "stops_on_fault", _faults.StopsOnFault),
    _kind_agent(WeaknessKind.NO_ERROR_RECOVERY, "skips_failed_step", _faults.SkipsFailedStep),
    _kind_agent(WeaknessKind.NO_ERROR_RECOVERY, "checks_but_never_retries", _faults.ChecksButNeverRetries),
    # novel failure modes
    _novel_agent("rounded_amount", _values.RoundedAmounts, ("helpdesk", "procurement")),
    _novel_agent("locale_reply", _replies.LocaleReply),
    # clean
    _agent("clean/careful", "clean", _replies.CarefulClean),
    _agent("clean/verifying_narrator", "clean", _replies.VerifyingNarrator),
    _agent("clean/terse", "clean", _replies.TerseClean),
]
"""Every blind agent: 10 kinds in 3 to 5 styles each, 2 novel modes, 3 clean agents."""

"""The second blind set: every agent runs, replays identically, and fails only where its mistake applied."""

from __future__ import annotations

from collections import Counter

import pytest

from arena.core.episode import EpisodeRecord
from bench.blind_agents_v2 import AGENTS, BlindAgent, Played, play, play_all
from diagnosis.knobs import KIND_TARGETS

SAMPLE: dict[str, list[str]] = {
    "helpdesk": ["address_change_conflict-01", "cancel_shipped_refused-01", "compatibility-01",
                 "customer_near_duplicate-01", "escalate_legacy_due-01", "hold_reason_reply-01",
                 "order_status_stale-01", "refund_timeout-01", "refund_with_approval-01",
                 "store_credit_over_limit-01", "ticket_tracking_rate_limit-01", "cancelled_but_delivered-01"],
    "procurement": ["approve_as_delegate-01", "create_po-01", "invoice_status-01", "mismatch_hold-01",
                    "onboard_activate-01", "pay_with_receipt-01", "po_suspended_vendor-01", "receive_goods-01",
                    "submit_po-01", "suspend_near_duplicate-01", "vendor_near_duplicate-01"],
    "tracker": ["add_user_to_group-01", "blocker_comment-01", "bulk_assign_rate_limited-01", "issue_status-01",
                "link_issues_timeout-01", "move_user_between_groups-01", "release_status_update-01",
                "release_timeout-01", "restrict_issue-01", "transition_conflict-01"],
    "crm": ["account_brief-01", "close_won-01", "flag_duplicate-01", "log_call-01", "quote_status-01",
            "reassign_account-01", "reschedule_close-01", "send_quote-01", "stage_advance-01", "update_amount-01",
            "update_phone-01"],
}
"""Tasks at world seed 0 covering what the mistakes need: names and ids, near-duplicates, stale summaries, legacy
formats, prerequisites and chains, timeouts, rate limits and conflicts, internal fields, notes, read-only tasks."""

KINDS = set(KIND_TARGETS)


def _sample(spec: BlindAgent) -> dict[str, list[Played]]:
    return {d: play_all(spec, d, [0], 1, tasks=SAMPLE[d]) for d in spec.domains}


def _label_ok(label: str) -> bool:
    if label == "clean" or (label.startswith("novel:") and len(label) > len("novel:")):
        return True
    parts = label.split("+")
    return len(parts) <= 2 and len(set(parts)) == len(parts) and all(p in KINDS for p in parts)


def test_catalogue_covers_every_kind_in_three_styles_with_clean_and_novel_agents() -> None:
    assert len({a.name for a in AGENTS}) == len(AGENTS)
    assert all(_label_ok(a.injects) for a in AGENTS), [a.injects for a in AGENTS if not _label_ok(a.injects)]
    single = Counter(a.injects for a in AGENTS if "+" not in a.injects)
    assert {k: single[k] for k in KINDS if single[k] < 3} == {}
    assert single["clean"] >= 2
    assert sum(n for label, n in single.items() if label.startswith("novel:")) >= 2
    assert any("+" in a.injects for a in AGENTS)
    for kind in KINDS:
        styles = {a.make().hand for a in AGENTS if a.injects == kind}
        assert len(styles) >= 3, kind
    covered = {d for a in AGENTS if a.injects != "clean" for d in a.domains}
    assert covered == {"helpdesk", "procurement", "tracker", "crm"}


def test_clean_agents_pass_every_task_of_every_gym() -> None:
    for spec in [a for a in AGENTS if a.injects == "clean"]:
        for domain in spec.domains:
            failed = [p.record.task_id for p in play_all(spec, domain, [0], 1) if not p.record.passed]
            assert failed == [], (spec.name, domain)


@pytest.mark.parametrize("spec", [a for a in AGENTS if a.injects != "clean"], ids=lambda a: a.name)
def test_agent_fails_only_where_its_mistake_applied(spec: BlindAgent) -> None:
    played = _sample(spec)
    episodes = [p for ps in played.values() for p in ps]
    assert all(p.record.failure is None or p.record.failure.kind not in ("crash", "tool_crash") for p in episodes)
    assert all(p.clean_passed for p in episodes)
    unexplained = [(p.record.domain, p.record.task_id) for p in episodes if not p.record.passed and not p.slipped]
    assert unexplained == []
    assert any(p.slipped and not p.record.passed for p in episodes), "the mistake never made a task fail"
    domain = spec.domains[len(spec.name) % len(spec.domains)]
    again = play(spec, domain, [0], 1, tasks=SAMPLE[domain])
    assert all(label == spec.injects for _, label in again)
    first = [p.record for p in played[domain] if p.slipped]
    assert [_replayed(r) for r, _ in again] == [_replayed(r) for r in first]


def _replayed(record: EpisodeRecord) -> tuple[object, ...]:
    return (record.episode_id, record.reply, record.passed, [s.model_dump() for s in record.trace])


def test_an_unknown_task_is_refused_by_name() -> None:
    with pytest.raises(KeyError, match="no-such-task"):
        play_all(AGENTS[0], "crm", [0], 1, tasks=["no-such-task"])

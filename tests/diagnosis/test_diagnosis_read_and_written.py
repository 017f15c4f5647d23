"""Values a record holds in one form and a write returns in another, and faults left behind at the agent's limit.

Traces are written here from each class's description with the synthetic tool set (``diagnosis.synthetic``) and
small task programs; none is an outsider agent's trace.
"""

from __future__ import annotations

from tests.diagnosis.test_diagnosis_blind_classes import tagged
from tests.diagnosis.test_diagnosis_detectors import episode, ok
from tests.diagnosis.test_diagnosis_last_misses import ADDRESS


def test_an_amount_read_as_text_and_written_back_as_a_number_is_stale_when_the_reply_states_the_old_one() -> None:
    read = ok("get_ticket", {"ticket_id": "TCK-1"}, {"id": "TCK-1", "amount": "48,200.00", "stage": "proposal"})
    changed = ok("update_ticket", {"ticket_id": "TCK-1", "amount": 51000},
                 {"ticket_id": "TCK-1", "amount": 51000.0}, write=True)
    stale = episode([read, changed], reply="Updated TCK-1. amount: 48200", failed={"response": "x"})
    assert "stale_state" in tagged(stale, ADDRESS)
    fresh = episode([read, changed], reply="Updated TCK-1. amount: $51,000.00", failed={"response": "x"})
    assert "stale_state" not in tagged(fresh, ADDRESS)

"""Two campaigns from the same starting model ask one factory for their own variants without colliding."""


from arena.agents.reference import PolicyParams
from arena.core.pack import build_pack
from curriculum import task_refs
from factory_client import LocalFactory
from flows.settings import GymloopSettings
from flows.variants import variant_requests
from tests.curriculum.test_curriculum_coverage import DOMAIN, UNCOVERED, report_with_two_equal_grains, without_tool


def test_campaigns_with_one_starting_model_get_their_own_request_keys(gymloop_home):
    base = build_pack(DOMAIN, seed=0)
    settings = GymloopSettings(home=gymloop_home, domains=[DOMAIN], variants_per_round=1, tasks_per_variant=2,
                               gate_k=1, gate_band_min=0, gate_band_max=1)
    start = PolicyParams.initial()
    report = report_with_two_equal_grains()
    # the same model and round, but pools that differ: the requests differ, so their keys must too
    covered = variant_requests(settings, report, [base], 0, task_refs([base]), start, f"a/{start.content_hash()}")
    gap = variant_requests(settings, report, [base], 0, task_refs([without_tool(base, UNCOVERED)]), start,
                           f"b/{start.content_hash()}")
    assert covered[0].fingerprint() != gap[0].fingerprint()
    assert covered[0].idempotency_key != gap[0].idempotency_key
    assert covered[0].gate.k == 1 and covered[0].gate.band_max == 1
    assert covered[0].baseline_params == start.model_dump(mode="json")
    factory = LocalFactory()
    try:
        ids = {factory.submit(r) for r in (*covered, *gap)}
        assert len(ids) == 2
        assert factory.submit(covered[0]) in ids  # the same request again is the same request
    finally:
        factory.close()

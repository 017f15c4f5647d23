import pytest

from arena.agents.reference import PolicyParams, ReferencePolicy
from arena.checks.conformance import check_pack
from arena.core.domains import BUILTIN_DOMAINS
from arena.core.pack import build_pack
from arena.rollout import RolloutConfig, run_rollouts


@pytest.mark.slow
@pytest.mark.parametrize("domain", BUILTIN_DOMAINS)
@pytest.mark.parametrize("seed", [1, 2])
def test_every_gym_is_conformant_and_playable_at_other_seeds(domain, seed):
    pack = build_pack(domain, seed=seed)
    report = check_pack(pack)
    assert report.passed, report.failures[:5]
    records = run_rollouts(ReferencePolicy(PolicyParams.expert()), [pack], RolloutConfig())
    assert [r.task_id for r in records if not r.passed] == []


@pytest.mark.parametrize("domain", BUILTIN_DOMAINS)
def test_the_careful_policy_passes_every_task_at_ten_pack_seeds(domain):
    """The reply rules never fail a careful answer: at pack seed 3 the tracker's allowed next status was also a
    subtask's status, and the rule against hedging across records failed the gold reply."""
    failed = {}
    for seed in range(10):
        records = run_rollouts(ReferencePolicy(PolicyParams.expert()), [build_pack(domain, seed=seed)], RolloutConfig())
        failed.update({(seed, r.task_id): r.verdict.results if r.verdict else r.failure for r in records
                       if not r.passed})
    assert failed == {}

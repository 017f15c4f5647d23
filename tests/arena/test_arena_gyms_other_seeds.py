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

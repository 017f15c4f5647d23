from curriculum_factories import group, history_with, pool, report, weakness

from arena.core.weakness import WeaknessKind
from curriculum import (
    ArmStats,
    BanditState,
    CurriculumConfig,
    History,
    arm_weights,
    learning_progress,
    plan_wave,
    update_bandit,
)


def _report():
    return report(weakness("wrong_id", 1, 0.5, ["near_duplicate"]),
                  weakness("brittle_parameters", 2, 0.4, ["legacy_format"]))


def test_learning_progress_is_mean_absolute_change_of_success():
    hist = history_with({
        ("P1", "dup-0"): [group(0, [False] * 4), group(1, [True, True, False, False])],  # +0.5
        ("P1", "dup-1"): [group(0, [True] * 4), group(1, [True, True, True, False])],    # -0.25
        ("P1", "dup-2"): [group(1, [True] * 4)],                                          # one group: ignored
    })
    tasks = [t for t in pool() if t.task_id.startswith("dup")]
    assert learning_progress(hist, tasks, since_round=0) == (0.5 + 0.25) / 2
    assert learning_progress(hist, tasks, since_round=1) is None


def test_update_folds_progress_once_per_round():
    cfg = CurriculumConfig(strategy="bandit", bandit_step=0.5)
    hist = history_with({("P1", "dup-0"): [group(0, [False] * 4), group(1, [True, True, False, False])],
                         ("P2", "fmt-0"): [group(0, [False] * 4), group(1, [False] * 4, [0.1, 0.2, 0.3, 0.4])]})
    state = update_bandit(BanditState(last_round=0), _report(), pool(), hist, cfg)
    assert state.arms["wrong_id"].value == 0.25 and state.arms["brittle_parameters"].value == 0.0
    assert state.arms["wrong_id"].success == 0.5 and state.last_round == 1
    again = update_bandit(state, _report(), pool(), hist, cfg)
    assert again.arms["wrong_id"].value == 0.25  # nothing new since round 1


def test_arm_weights_favour_progress_and_explore_unpulled_arms():
    cfg = CurriculumConfig(strategy="bandit", bandit_temperature=0.1, bandit_exploration=0.0)
    a, b = WeaknessKind.WRONG_ID, WeaknessKind.STALE_STATE
    state = BanditState(arms={a: ArmStats(value=0.3, pulls=3), b: ArmStats(value=0.0, pulls=3)}, rounds=3)
    w = arm_weights(state, [a, b], cfg)
    assert w[a] > 0.9 and w[b] < 0.1
    explorer = cfg.model_copy(update={"bandit_exploration": 1.0})
    state = BanditState(arms={a: ArmStats(value=0.0, pulls=5), b: ArmStats(value=0.0, pulls=0)}, rounds=5)
    w = arm_weights(state, [a, b], explorer)
    assert w[b] > w[a]
    assert arm_weights(state, [], cfg) == {}


def test_bandit_waves_carry_state_between_rounds_and_follow_progress():
    cfg = CurriculumConfig(strategy="bandit", budget=40, k=4, bandit_exploration=0.0, seed=2)
    hist = History()
    first = plan_wave(_report(), pool(), hist, cfg)
    assert first.bandit is not None and first.bandit.rounds == 1
    assert {e.weakness for e in first.by_source("targeted")} == {"wrong_id", "brittle_parameters"}
    assert all("bandit weight" in e.reason for e in first.by_source("targeted"))
    hist.record_wave(first)
    # the legacy_format tasks improved a lot, the near_duplicate ones did not move
    for e in first.by_source("targeted"):
        before, after = ([False] * 4, [True] * 4) if e.weakness == "brittle_parameters" else ([False] * 4,) * 2
        hist.record_group(e.pack_id, e.task_id, group(-1, before, [0.1, 0.2, 0.3, 0.4]))
        hist.record_group(e.pack_id, e.task_id, group(0, after, [0.1, 0.2, 0.3, 0.4]))
    second = plan_wave(_report(), pool(), hist, cfg)
    assert second.bandit is not None and second.bandit.rounds == 2
    assert second.bandit.arms["brittle_parameters"].value > second.bandit.arms["wrong_id"].value
    kinds = [e.weakness for e in second.by_source("targeted")]
    assert kinds.count("brittle_parameters") > kinds.count("wrong_id")
    assert second.bandit.arms["brittle_parameters"].pulls == 2
    # persisted state round-trips through JSON
    assert type(second.bandit).model_validate_json(second.bandit.model_dump_json()) == second.bandit

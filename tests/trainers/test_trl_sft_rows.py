"""Which verified successes a round's SFT keeps, and how many optimizer steps they buy (no torch needed)."""

import pytest
from trainer_fixtures import rollouts, toy_pack, wave_for

from arena.agents.reference import PolicyParams
from trainers.trl_data import sft_steps, successful_episodes


@pytest.fixture(scope="module")
def pack():
    return toy_pack()


def _failed(episode):
    return episode.model_copy(update={"verdict": episode.verdict.model_copy(update={"passed": False})})


def test_mastered_tasks_are_left_out_and_mixed_ones_kept(pack):
    mastered = rollouts(pack, PolicyParams.expert(), ["refund_plain-01"], k=3)
    mixed = rollouts(pack, PolicyParams.expert(), ["refund_conflict-01"], k=3)
    assert all(e.passed for e in mastered + mixed)
    mixed[1] = _failed(mixed[1])
    wave = wave_for(pack, ["refund_plain-01", "refund_conflict-01"], k=3)

    every = successful_episodes(wave, mastered + mixed)
    assert [(e.task_id, e.attempt) for e in every] == [("refund_conflict-01", 0), ("refund_conflict-01", 2),
                                                      ("refund_plain-01", 0), ("refund_plain-01", 1),
                                                      ("refund_plain-01", 2)]
    unmastered = successful_episodes(wave, mastered + mixed, skip_mastered=True)
    assert [(e.task_id, e.attempt) for e in unmastered] == [("refund_conflict-01", 0), ("refund_conflict-01", 2)]
    # An invalid rollout says nothing of the model: the task stays mastered.
    invalid = mastered[0].model_copy(update={"invalid": True, "verdict": mastered[0].verdict.model_copy(
        update={"passed": False})})
    assert successful_episodes(wave, [*mastered[1:], invalid], skip_mastered=True) == []


def test_per_task_keeps_the_lowest_attempts_of_each_task(pack):
    episodes = rollouts(pack, PolicyParams.expert(), ["refund_plain-01", "refund_conflict-01"], k=3)
    wave = wave_for(pack, ["refund_plain-01", "refund_conflict-01"], k=3)
    kept = successful_episodes(wave, list(reversed(episodes)), per_task=1)
    assert [(e.task_id, e.attempt) for e in kept] == [("refund_conflict-01", 0), ("refund_plain-01", 0)]
    assert len(successful_episodes(wave, episodes, per_task=2)) == 4


@pytest.mark.parametrize(("rows", "batch", "epochs", "max_steps", "steps"), [
    (25, 8, None, 32, 32),   # no epochs: the fixed budget, however few the rows
    (25, 8, 10.0, 32, 32),   # ceil(250 / 8) = 32
    (6, 8, 10.0, 32, 8),     # fewer conversations, fewer steps
    (100, 8, 10.0, 32, 32),  # never past max_steps
    (1, 8, 0.5, 32, 1),      # at least one step
])
def test_sft_steps_follow_the_data_when_epochs_are_given(rows, batch, epochs, max_steps, steps):
    assert sft_steps(rows, batch, epochs=epochs, max_steps=max_steps) == steps

"""A campaign focused on some tasks (``tasks`` setting, ``--task``) practises and is judged on those alone.

Real packs, a real round on the Prefect test harness and the real command line; a pattern that chooses
nothing stops the command before anything runs, naming the pattern.
"""

from __future__ import annotations

import json
from fnmatch import fnmatchcase

import pytest
from conftest import SMALL
from typer.testing import CliRunner

from arena.core.pack import build_pack
from curriculum import History
from diagnosis import WeaknessReport
from flows.campaign import next_round
from flows.cli import app
from flows.focus import check_focus, in_focus
from flows.models import CampaignParams
from flows.rollouts import EVAL_AFTER, EVAL_BEFORE, TRAIN, heldout_keys
from flows.settings import load_settings
from flows.waves import plan
from registry import Registry

PATTERNS = ["approve_*", "pay_*"]
"""Procurement workflows with train and held-out tasks at pack seed 0."""


def _chosen(task_id: str) -> bool:
    return any(fnmatchcase(task_id, p) for p in PATTERNS)


def test_patterns_choose_the_suite_and_the_wave_and_an_empty_list_keeps_every_task():
    pack = build_pack("procurement", seed=0)
    everything = load_settings(domains=["procurement"])
    focused = load_settings(domains=["procurement"], tasks=PATTERNS)
    all_heldout = {t.id for t in pack.tasks if t.split == "heldout"}
    assert {k.task_id for k in heldout_keys([pack], everything)} == all_heldout
    suite = {k.task_id for k in heldout_keys([pack], focused)}
    assert suite == {t for t in all_heldout if _chosen(t)} and 0 < len(suite) < len(all_heldout)

    wave = plan(WeaknessReport(), [pack], History(), focused.model_copy(update={"wave_budget": 4000}), 0)
    planned = {e.task_id for e in wave.entries}
    assert planned == {t.id for t in pack.tasks if t.split == "train" and _chosen(t.id)}
    assert in_focus("anything-01", []) and not in_focus("create_po-01", PATTERNS)


@pytest.mark.parametrize(("patterns", "needle"), [
    (["approve_*", "nope-*"], "pattern 'nope-*' matches no task of gym(s) procurement"),
    (["budget_remaining-*"], "match no held-out task of gym(s) procurement"),
])
def test_patterns_that_choose_nothing_are_refused_by_name(patterns, needle):
    with pytest.raises(ValueError, match="setting tasks") as caught:
        check_focus([build_pack("procurement", seed=0)], patterns)
    assert needle in str(caught.value)


def test_a_blank_pattern_is_a_bad_setting():
    with pytest.raises(ValueError, match="task pattern ' ' is blank"):
        load_settings(tasks=[" "])


def test_a_focused_round_plays_only_the_tasks_in_focus(prefect_harness, gymloop_home):
    overrides = {**SMALL, "tasks": PATTERNS}
    (summary,) = next_round(CampaignParams(campaign="focused", overrides=overrides)).rounds
    registry = Registry(load_settings(**overrides).resolved_registry_url())
    played = {stage: {s.task_id for s in registry.episode_summaries(summary.round_id, stage=stage)}
              for stage in (EVAL_BEFORE, TRAIN, EVAL_AFTER)}
    pack = build_pack("procurement", seed=0)
    assert played[EVAL_BEFORE] == played[EVAL_AFTER] == {
        t.id for t in pack.tasks if t.split == "heldout" and _chosen(t.id)}
    assert played[TRAIN] and all(_chosen(t) for t in played[TRAIN])
    wave = registry.wave(summary.round_id)
    assert wave is not None and wave.entries and all(_chosen(e.task_id) for e in wave.entries)
    report = (gymloop_home / "campaigns" / "focused" / "report.md").read_text()
    assert "paired over the same held-out tasks; tasks approve_*, pay_*)" in report


def test_eval_plays_the_tasks_a_pattern_chooses(tmp_path):
    out = tmp_path / "episodes.jsonl"
    result = CliRunner().invoke(app, ["eval", "--domain", "procurement", "--task", "pay_*", "--task", "approve_po-*",
                                      "--k", "1", "--out", str(out)])
    assert result.exit_code == 0, result.output
    played = {json.loads(line)["task_id"] for line in out.read_text().splitlines()}
    pack = build_pack("procurement", seed=0)
    assert played == {t.id for t in pack.tasks if t.split == "heldout"
                      and (t.id.startswith("pay_") or t.id.startswith("approve_po-"))}


def test_eval_of_the_train_split_needs_no_held_out_task_in_focus(tmp_path):
    out = tmp_path / "episodes.jsonl"
    result = CliRunner().invoke(app, ["eval", "--domain", "procurement", "--split", "train", "--task",
                                      "budget_remaining-*", "--k", "1", "--out", str(out)])
    assert result.exit_code == 0, result.output
    played = {json.loads(line)["task_id"] for line in out.read_text().splitlines()}
    pack = build_pack("procurement", seed=0)
    assert played == {t.id for t in pack.tasks if t.id.startswith("budget_remaining-")} and len(played) == 2


@pytest.mark.parametrize("command", [["eval"], ["round"], ["campaign", "--rounds", "1"]])
def test_a_pattern_that_chooses_nothing_stops_the_command_before_it_runs(command, gymloop_home):
    result = CliRunner().invoke(app, [*command, "--domain", "procurement", "--task", "refund_*"])
    assert result.exit_code == 2, result.output
    assert "pattern 'refund_*' matches no task of gym(s) procurement" in " ".join(result.output.split())
    assert not (gymloop_home / "registry.db").exists(), "nothing ran"

"""`gymloop factory request` aims like a round: the named weakness's knobs and focus tags are set, an empty result
says why, every rejected candidate carries its reason (output and `--json`), a refused request names the reason."""

from __future__ import annotations

import json
from typing import Any

import pytest
import toy_domain  # noqa: F401  (registers the toy gym, which cannot honour near_duplicate_rate)
from typer.testing import CliRunner

from arena.authoring import WEAKNESS_KNOBS, kind_refusal
from arena.core.domains import BUILTIN_DOMAINS, get_domain
from flows.cli import app

runner = CliRunner(env={"COLUMNS": "250"})
ACCEPT_ALL = ["--gate-k", "1", "--band-min", "0", "--band-max", "1"]
"""A gate band every candidate whose gold program passes gets through (the test is about aiming, not the band)."""


def _json(args: list[str]) -> dict[str, Any]:
    done = runner.invoke(app, ["factory", "request", *args, "--json"])
    assert done.exit_code == 0, done.output
    result: dict[str, Any] = json.loads(done.stdout)
    return result


@pytest.mark.parametrize("gym", [g for g in BUILTIN_DOMAINS
                                 if kind_refusal(get_domain(g), "missed_policy_dependency") is None])
def test_a_weakness_sets_its_knobs_and_focus_tags_on_every_variant(gym: str) -> None:
    aim = WEAKNESS_KNOBS["missed_policy_dependency"]
    result = _json([gym, "--weakness", "missed_policy_dependency", "--variants", "1", "--tasks", "2", *ACCEPT_ALL])
    assert result["targets"] == [{"kind": "missed_policy_dependency", "focus_tags": list(aim.focus_tags),
                                  "knobs": dict(aim.knobs)}]
    assert result["packs"], result["why_empty"]
    for pack in result["packs"]:
        assert pack["knobs"]["prerequisite_depth"] == aim.knobs["prerequisite_depth"], pack
        assert pack["knobs"]["focus_tags"] == list(aim.focus_tags), pack


def test_an_empty_result_says_why_and_every_rejection_has_its_reason() -> None:
    args = ["helpdesk", "--weakness", "wrong_id", "--variants", "1", "--tasks", "2", "--gate-k", "1",
            "--band-min", "0", "--band-max", "0", "--baseline", "reference-expert"]
    shown = runner.invoke(app, ["factory", "request", *args])
    assert shown.exit_code == 0, shown.output
    lines = shown.output.splitlines()
    assert "0 pack(s)" in lines[0] and "aims at wrong_id: knobs near_duplicate_rate=0.3; focus tags near_duplicate" \
        in shown.output
    rejected = [line for line in lines if line.strip().startswith("rejected variant 0 ")]
    assert rejected and all("at baseline_band: baseline passed 1 of 1 attempts, outside the band [0, 0]" in line
                            for line in rejected), shown.output
    assert any(line.startswith("no pack: variant 0: no candidate task passed the gate") and "baseline_band" in line
               for line in lines), shown.output
    result = _json(args)
    report = result["gate_report"]
    assert result["packs"] == [] and "baseline_band" in result["why_empty"]
    assert len(report["rejections"]) == report["candidates"] - report["accepted"] == len(rejected)
    assert all(r["gate"] == "baseline_band" and r["reason"].startswith("baseline passed 1 of 1")
               for r in report["rejections"])


def test_a_weakness_the_gym_cannot_aim_at_is_refused_with_the_reason() -> None:
    done = runner.invoke(app, ["factory", "request", "toy", "--weakness", "wrong_id"])
    assert done.exit_code == 1, done.output
    flat = " ".join(done.output.split())
    assert "factory request failed: weakness 'wrong_id' asks for knob 'near_duplicate_rate'" in flat
    assert "the toy world has one customer name per order" in flat


def test_an_unknown_weakness_kind_names_the_kinds() -> None:
    done = runner.invoke(app, ["factory", "request", "helpdesk", "--weakness", "wrongid"])
    assert done.exit_code == 2, done.output
    flat = " ".join(done.output.split())
    assert "bad option: --weakness: unknown weakness kind 'wrongid'; known: wrong_id, missed_policy_dependency" \
        in flat


def test_the_help_speaks_of_any_gym() -> None:
    done = runner.invoke(app, ["factory", "request", "--help"])
    flat = " ".join(done.output.split())
    assert "The gym to vary (built-in or your own)" in flat and "Built-in domain" not in flat

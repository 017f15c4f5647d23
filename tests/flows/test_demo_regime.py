"""`gymloop demo` runs in a declared regime: a few weak skills, targeting against its uniform control."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from arena.agents.reference import COMPETENT_SLIP, CONTEXTS, WEAK_SKILLS, PolicyParams
from flows.cli_run import DEMO_OVERRIDES, DEMO_REGIME
from flows.registered_models import initial_model
from flows.registry_access import open_registry
from flows.settings import load_settings


def test_the_few_weak_skills_start_is_competent_but_for_its_weak_skills():
    params = PolicyParams.named("few-weak-skills")
    assert params.transfer == 0.5 and params.name == "reference-few-weak-skills"
    for grain, slip in WEAK_SKILLS.items():
        key, tool = grain.split("@")
        careful = PolicyParams.expert().logits[key]
        best = max(careful, key=careful.__getitem__)
        assert params.probabilities(key, tool)[best] == pytest.approx(1 - slip)
        assert params.probabilities(key, "another_tool")[best] == pytest.approx(1 - COMPETENT_SLIP)
    every = {f"{k}|{c}" for k, cs in CONTEXTS.items() for c in cs}
    assert set(params.logits) == every and set(params.offsets) == set(WEAK_SKILLS)
    assert PolicyParams.named("untrained") == PolicyParams.initial()
    with pytest.raises(KeyError, match="few-weak-skills"):
        PolicyParams.named("nearly-perfect")


def test_a_campaign_starts_from_the_named_reference_start(gymloop_home):
    settings = load_settings(home=gymloop_home, reference_start="few-weak-skills")
    info = initial_model(open_registry(settings), settings)
    assert info.name == "reference-few-weak-skills"
    assert PolicyParams.load(info.artifact or "") == PolicyParams.named("few-weak-skills")
    assert DEMO_OVERRIDES["reference_start"] == "few-weak-skills" and DEMO_OVERRIDES["credit"] == "decision"


@pytest.mark.slow
@pytest.mark.timeout(1800)
def test_the_demo_names_its_regime_and_ends_with_a_targeting_lift_above_zero(tmp_path: Path):
    env = {k: v for k, v in os.environ.items() if not k.startswith("GYMLOOP_")}
    env.update(HOME=str(tmp_path), PREFECT_SERVER_EPHEMERAL_STARTUP_TIMEOUT_SECONDS="600")
    done = subprocess.run([sys.executable, "-c", "from flows.cli import app; app()", "demo", "--json", "--home",
                           str(tmp_path / "home")],
                          capture_output=True, text=True, env=env, cwd=tmp_path, timeout=1700)
    assert done.returncode == 0, done.stderr[-3000:]
    assert DEMO_REGIME in done.stderr
    data = json.loads(done.stdout)
    assert data["regime"] == DEMO_REGIME
    control = data["control"]
    assert [c["round_index"] for c in control] == [0, 1, 2]
    assert control[-1]["low"] > 0, control[-1]
    assert all(c["weaknesses"] for c in control)
    assert any(w["fell"] for c in control for w in c["weaknesses"])

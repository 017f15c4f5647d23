"""A whole round with the trl trainer on a tiny local checkpoint (CPU, offline)."""

import sys
from pathlib import Path

import pytest

pytest.importorskip("torch", reason="torch (gymloop[trl]) is not installed")
pytest.importorskip("trl", reason="trl (gymloop[trl]) is not installed")

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "trainers"))

from mlflow.tracking import MlflowClient  # noqa: E402
from tiny_lm import build_tiny_checkpoint, corpus_for  # noqa: E402

from arena.agents.transformers_agent import load_checkpoint  # noqa: E402
from arena.core.pack import build_pack  # noqa: E402
from flows.focus import in_focus  # noqa: E402
from flows.models import RoundParams  # noqa: E402
from flows.registry_access import open_registry
from flows.round import curriculum_round  # noqa: E402
from flows.settings import load_settings  # noqa: E402
from registry import Registry  # noqa: E402

FOCUS = ["refund_timeout-*", "shipment_tracking-*", "order_status_stale-*"]
"""The helpdesk tasks the round practises and is judged on: a train and a held-out task of each family."""


@pytest.mark.timeout(900)
def test_round_with_the_trl_trainer_registers_a_loadable_checkpoint(prefect_harness, gymloop_home, tmp_path):
    pack = build_pack("helpdesk", seed=0)
    folder = build_tiny_checkpoint(tmp_path / "tiny-helpdesk", corpus_for([pack]))
    overrides = {"domains": ["helpdesk"], "model": f"transformers:{folder}", "trainer": "trl", "eval_k": 2,
                 "variants_per_round": 0, "wave_budget": 4, "train_k": 2, "local_max_new_tokens": 8,
                 "local_max_steps": 1, "tasks": FOCUS,
                 "trl": {"method": "grpo", "max_steps": 1, "per_device_train_batch_size": 2, "num_generations": 2,
                         "max_completion_length": 8, "max_tool_calling_iterations": 1}}
    summary = curriculum_round(RoundParams(campaign="trl", round_index=0, overrides=overrides))
    settings = load_settings(**overrides)
    registry = Registry(settings.resolved_registry_url())
    round_info = registry.rounds(registry.campaign("trl").id)[0]
    assert round_info.status == "finished"
    model_in, model_out = registry.model(round_info.model_in_id), registry.model(round_info.model_out_id)
    assert model_in.kind == model_out.kind == "transformers" and model_in.artifact == str(folder.resolve())
    assert model_out.parent_id == model_in.id and model_out.version.startswith("1-")
    assert model_out.params_hash and model_out.params_hash[:12] in model_out.version
    assert Path(model_out.artifact).parent == settings.store.home / "models"
    model, tokenizer = load_checkpoint(model_out.artifact)
    assert model.config.num_hidden_layers == 2
    heldout = [t for t in pack.tasks if t.split == "heldout" and in_focus(t.id, FOCUS)]
    after = registry.round_episodes(round_info.id, stage="eval_after")
    assert len(after) == 2 * len(heldout) and {r.model_ref for r in after} == {f"transformers:{model_out.artifact}"}
    replies = {(r.task_id, r.attempt): r.reply for r in after}
    assert all(replies[(t.id, 0)] == replies[(t.id, 1)] for t in heldout)  # held-out evaluation decodes greedily
    train = registry.round_episodes(round_info.id, stage="train")
    assert len(train) == 4 and len({r.task_id for r in train}) == 2
    assert len({r.reply for r in train}) == 4  # training rollouts sample, each attempt from its own seed
    client = MlflowClient(settings.resolved_mlflow_uri())
    runs = client.search_runs([client.get_experiment_by_name("gymloop/trl").experiment_id])
    nested = [r for r in runs if r.data.tags.get("gymloop_kind") == "round"]
    assert len(nested) == 1 and nested[0].data.params["model_out"] == summary.model_out
    assert nested[0].data.metrics["after"] == pytest.approx(summary.after, abs=5e-4)


def _baseline_passes(results):
    passes: dict[str, int] = {}
    for result in results:
        for count, n in result.gate_report.baseline_passes.items():
            passes[count] = passes.get(count, 0) + n
    return passes


@pytest.mark.timeout(900)
def test_the_factory_gates_baseline_is_the_campaigns_local_checkpoint(gymloop_home, tmp_path):
    from arena.agents.reference import PolicyParams, ReferencePolicy
    from arena.rollout import RolloutConfig, run_rollouts
    from flows.registered_models import initial_model
    from flows.variants import generate_variants
    from flows.weaknesses import diagnose_round

    pack = build_pack("helpdesk", seed=0)
    call = {"name": "get_customer", "arguments": {"customer_id": "CUS-00001"}}
    folder = build_tiny_checkpoint(tmp_path / "tiny-helpdesk", corpus_for([pack]), call=call)
    common = {"domains": ["helpdesk"], "variants_per_round": 1, "tasks_per_variant": 2, "local_max_steps": 1,
              "local_max_new_tokens": 8}
    local = load_settings(**common, model=f"transformers:{folder}")
    registry = open_registry(local)
    episodes = run_rollouts(ReferencePolicy(PolicyParams.initial()), [pack], RolloutConfig(split="heldout", k=2))
    report = diagnose_round(episodes, [pack], None, 0, 0)
    assert report.weaknesses
    checkpoint = initial_model(registry, local)
    reference_settings = load_settings(**common)
    reference = initial_model(registry, reference_settings)
    by_checkpoint = _baseline_passes(generate_variants(local, report, [pack], checkpoint, 0))
    by_reference = _baseline_passes(generate_variants(reference_settings, report, [pack], reference, 0))
    # The scripted checkpoint only ever calls one tool and never replies: it fails every gate attempt.
    assert sum(by_checkpoint.values()) > 0 and set(by_checkpoint) == {"0"}
    assert any(int(count) > 0 for count in by_reference)

"""``gymloop diagnose --episodes`` gives the round's diagnosis for episodes of any world seed, gym or variant."""

from __future__ import annotations

from pathlib import Path

from typer.testing import CliRunner

from arena.agents.reference import PolicyParams, ReferencePolicy
from arena.core.episode import EpisodeRecord
from arena.core.pack import Pack, build_pack
from arena.rollout import RolloutConfig, run_rollouts
from diagnosis import WeaknessReport, read_report
from factory_client import GateConfig, LocalFactory, VariantRequest, WeaknessTarget
from flows.cli import app
from flows.registry_access import open_registry
from flows.settings import cli_settings
from flows.weaknesses import diagnose_round

runner = CliRunner(env={"COLUMNS": "250"})


def _write(records: list[EpisodeRecord], path: Path) -> Path:
    path.write_text("".join(r.model_dump_json() + "\n" for r in records), encoding="utf-8")
    return path


def _grains(report: WeaknessReport) -> list[tuple[object, ...]]:
    return [(w.kind, w.domain, w.tool, w.count, w.example_episode_ids) for w in report.weaknesses]


def _cli(episodes: Path, out: Path) -> tuple[str, WeaknessReport]:
    result = runner.invoke(app, ["diagnose", "--episodes", str(episodes), "--out", str(out)])
    assert result.exit_code == 0, result.output
    return result.output, read_report(out.read_text(encoding="utf-8"))


def _played(packs: list[Pack]) -> list[EpisodeRecord]:
    return run_rollouts(ReferencePolicy(PolicyParams.initial()), packs, RolloutConfig(seeds=[0]))


def test_episodes_of_world_seeds_3_to_5_get_the_diagnosis_the_round_gave(gymloop_home, tmp_path):
    packs = [build_pack("tracker", seed=seed) for seed in (3, 4, 5)]
    records = _played(packs)
    assert {r.world.seed for r in records if r.world is not None} == {3, 4, 5}
    output, cli = _cli(_write(records, tmp_path / "episodes.jsonl"), tmp_path / "report.json")
    assert "WARNING" not in output and "3 rebuilt from gym tracker" in " ".join(output.split())
    api = diagnose_round(records, packs, None, 0, 0)
    assert cli.failures == api.failures > 0
    assert _grains(cli) == _grains(api) and cli.tag_counts == api.tag_counts
    # records that name no world (written before they did) are found in the registry the round wrote to
    unnamed = [r.model_copy(update={"world": None}) for r in records]
    lost, _ = _cli(_write(unnamed, tmp_path / "old.jsonl"), tmp_path / "old.json")
    assert "WARNING" in lost and "3 pack(s) not found" in " ".join(lost.split())
    registry = open_registry(cli_settings())
    for pack in packs:
        registry.add_pack(pack)
    output, stored = _cli(tmp_path / "old.jsonl", tmp_path / "stored.json")
    assert "WARNING" not in output and "3 in the registry" in " ".join(output.split())
    assert _grains(stored) == _grains(api)


def test_episodes_of_a_factory_variant_get_the_diagnosis_the_round_gave(gymloop_home, tmp_path):
    factory = LocalFactory()
    try:
        aim = WeaknessTarget(kind="wrong_id", focus_tags=["near_duplicate"], knobs={"near_duplicate_rate": 0.3})
        result = factory.request(VariantRequest(domain="procurement", variants=1, tasks_per_variant=3, seed=5,
                                                gate=GateConfig(k=1, band_min=0, band_max=1), targets=[aim]),
                                 timeout=600)
    finally:
        factory.close()
    variant = result.packs[0]
    assert variant.manifest.parent is not None and variant.manifest.knobs
    records = _played([variant])
    output, cli = _cli(_write(records, tmp_path / "episodes.jsonl"), tmp_path / "report.json")
    assert "WARNING" not in output and "a factory variant" in " ".join(output.split())
    api = diagnose_round(records, [variant], None, 0, 0)
    assert cli.failures == api.failures > 0
    assert _grains(cli) == _grains(api) and cli.tag_counts == api.tag_counts

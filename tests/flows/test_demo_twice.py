"""`gymloop demo` run twice in separate homes gives identical rounds (same seed, same waves, same verdicts)."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from flows.cli import app
from registry import Registry

runner = CliRunner(env={"COLUMNS": "250"})

_TIMING = re.compile(r"(time|seconds|duration|elapsed|_s$|latency)")


def _demo(home: Path) -> str:
    result = runner.invoke(app, ["demo", "--rounds", "2", "--home", str(home)])
    assert result.exit_code == 0, result.output[-3000:]
    match = re.search(r"report: \S+/campaigns/(demo-[^/\s]+)/report\.md", result.output)
    assert match, result.output[-2000:]
    return match.group(1)


def _rounds(home: Path, campaign: str) -> list[dict[str, Any]]:
    registry = Registry(None, home)
    try:
        out = []
        for info in registry.rounds(registry.campaign(campaign).id):
            summary = dict(info.details["summary"])
            summary.pop("campaign")
            summary["metrics"] = {k: v for k, v in summary["metrics"].items() if not _TIMING.search(k)}
            summary["episodes"] = {
                stage: sorted((e.pack_id, e.task_id, e.seed, e.attempt, e.passed, round(e.score, 9))
                              for e in registry.episode_summaries(info.id, stage=stage))
                for stage in summary["episodes"]}
            wave = registry.wave(info.id)
            summary["wave"] = [e.model_dump(mode="json") for e in wave.entries] if wave else None
            summary["weakness_rows"] = [w.model_dump(mode="json") for w in registry.weaknesses(info.id)]
            out.append(summary)
        return out
    finally:
        registry.close()


@pytest.mark.slow
def test_two_demos_in_separate_homes_give_identical_rounds(prefect_harness: None, gymloop_home: Path,
                                                           tmp_path: Path):
    homes = [tmp_path / "a", tmp_path / "b"]
    campaigns = [_demo(home) for home in homes]
    first, second = (_rounds(home, name) for home, name in zip(homes, campaigns, strict=True))
    assert len(first) == 2 and all(r["episodes"] for r in first)
    assert first[0]["wave"] and first[0]["weakness_rows"]
    for a, b in zip(first, second, strict=True):
        differing = sorted(k for k in a if a[k] != b[k])
        assert not differing, f"round {a['round_index']} differs in {differing}"

from __future__ import annotations

import json
import logging
from pathlib import Path

import pytest
from sklearn.metrics import adjusted_rand_score
from typer.testing import CliRunner

from arena.core.episode import EpisodeFailure
from diagnosis import WeaknessKind, diagnose, read_episodes_jsonl, read_report, render_markdown, share_interval
from diagnosis.synthetic import STRATEGIES, context, synthetic_failures


def _mix(n: int, seed: int = 0) -> tuple[list, list[str]]:
    pairs = list(synthetic_failures(n, seed))
    return [p[0] for p in pairs], [p[1] for p in pairs]


def test_clustering_recovers_injected_strategies_and_flags_novel() -> None:
    episodes, labels = _mix(660)
    report = diagnose(episodes, context(), seed=3)
    assert report.failures == 660
    for cluster in report.clusters:
        assert cluster.size >= 7
    # every injected detector kind is a weakness, and the hallucinated-tool group is novel
    assert {w.kind for w in report.weaknesses} == {k for ks in STRATEGIES.values() for k in ks} | {WeaknessKind.NOVEL}
    novel = [c for c in report.clusters if c.novel]
    assert len(novel) == 1 and "refund_order" in novel[0].label
    # clustering agrees with the injected labels
    from diagnosis.clustering import cluster_rows
    from diagnosis.detectors import BUILTIN_DETECTORS
    from diagnosis.features import episode_features
    ctx = context()
    rows = [episode_features(e, [t for d in BUILTIN_DETECTORS for t in d.detect(e, ctx)], ctx) for e in episodes]
    distinct = list(dict.fromkeys(rows))
    result = cluster_rows(distinct, [rows.count(r) for r in distinct], seed=0)
    index = {r: i for i, r in enumerate(distinct)}
    predicted = [int(result.labels[index[r]]) for r in rows]
    by_episode = adjusted_rand_score(labels, predicted)
    assert by_episode >= 0.9


def test_ranking_order_intervals_learnability_and_trend() -> None:
    episodes, _ = _mix(40, seed=1)
    wrong = [e for e in episodes if e.tags == ["wrong_id"]]
    refund = [e.model_copy(update={"task_id": "nr-task"}) for e in episodes if e.tags == ["no_error_recovery"]]
    passing = refund[0].model_copy(update={"verdict": refund[0].verdict.model_copy(update={"passed": True,
                                                                                          "score": 1.0}),
                                           "episode_id": "pass-1"})
    batch = wrong * 3 + refund + [passing]
    report = diagnose(batch, context(), seed=0)
    kinds = [w.kind for w in report.weaknesses]
    assert kinds.index("wrong_id") < kinds.index("no_error_recovery")  # larger share first
    nr = report.weakness("no_error_recovery")
    wi = report.weakness("wrong_id")
    assert nr is not None and wi is not None
    assert nr.learnability == 1.0 and wi.learnability == 0.0  # a no_error_recovery task passed once
    for w in report.weaknesses:
        assert w.share_interval.low <= w.share <= w.share_interval.high
        assert w.rank == report.weaknesses.index(w) + 1
    # a previous round where wrong_id was rarer: its trend is positive
    previous = report.model_copy(deep=True)
    for w in previous.weaknesses:
        w.share = 0.1 if w.kind == "wrong_id" else w.share
    again = diagnose(batch, context(), previous=previous, seed=0)
    assert again.weakness("wrong_id").trend > 0  # type: ignore[union-attr]
    assert again.weakness("wrong_id").impact > wi.impact  # type: ignore[union-attr]
    assert diagnose(batch, context(), seed=0).to_json() == report.to_json()  # deterministic


def test_share_interval_bootstrap() -> None:
    narrow = share_interval(500, 1000, seed=0)
    wide = share_interval(5, 10, seed=0)
    assert narrow.low < 0.5 < narrow.high and narrow.high - narrow.low < 0.08
    assert wide.high - wide.low > 0.4
    assert share_interval(0, 10, seed=0).high == 0.0
    with pytest.raises(ValueError, match="count=11, total=10"):
        share_interval(11, 10, seed=0)


def test_renderings_round_trip() -> None:
    episodes, _ = _mix(110)
    report = diagnose(episodes, context(), round_id="r7")
    assert read_report(report.to_json()) == report
    md = render_markdown(report)
    assert md.startswith("# Weakness report — round r7")
    assert "| 1 |" in md and "## Clusters" in md and "near_duplicate" in md
    for w in report.weaknesses:
        assert w.focus_tags or w.kind == WeaknessKind.NOVEL
        assert w.knobs


def test_empty_round_and_non_agent_failures() -> None:
    episodes, _ = _mix(6)
    passed = [e.model_copy(update={"verdict": e.verdict.model_copy(update={"passed": True, "score": 1.0})})
              for e in episodes[:3]]
    api = episodes[3].model_copy(update={"failure": EpisodeFailure(boundary="model_api", kind="timeout", message="x")})
    invalid = episodes[4].model_copy(update={"invalid": True})
    report = diagnose(passed + [api, invalid], context())
    assert report.weaknesses == [] and report.failures == 0
    assert (report.passed, report.invalid, report.other_failures) == (3, 1, {"model_api": 1})
    assert "No weaknesses" in render_markdown(report)
    assert diagnose([]).weaknesses == []


def test_unknown_tools_and_other_schema_versions_are_skipped(caplog: pytest.LogCaptureFixture) -> None:
    episodes, _ = _mix(22)
    foreign = episodes[0].model_copy(deep=True)
    foreign.trace[0].tool = "teleport"
    old = episodes[1].model_copy(update={"schema_version": 99})
    with caplog.at_level(logging.WARNING):
        report = diagnose([foreign, old, *episodes[2:]], context())
    assert report.skipped == {"schema_version": 1, "unknown_tool": 1}
    assert report.failures == 20
    assert "skipped 2 episode records" in caplog.text


def _write(path: Path, lines: list[str]) -> Path:
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


def test_read_episodes_jsonl_counts_bad_lines(tmp_path: Path) -> None:
    episodes, _ = _mix(3)
    v2 = json.loads(episodes[1].model_dump_json())
    v2["schema_version"] = 2
    path = _write(tmp_path / "e.jsonl", [episodes[0].model_dump_json(), "{not json", json.dumps(v2), "",
                                         json.dumps({"episode_id": "x"}), "[1]", episodes[2].model_dump_json()])
    records, skipped = read_episodes_jsonl(path)
    assert [r.episode_id for r in records] == [episodes[0].episode_id, episodes[2].episode_id]
    assert skipped == {"malformed": 3, "schema_version": 1}


def test_cli_diagnose_jsonl(tmp_path: Path) -> None:
    import typer

    from flows.cli_diagnose import diagnose_command

    app = typer.Typer()
    app.command("diagnose")(diagnose_command)
    app.command("noop")(lambda: None)
    episodes, _ = _mix(44)
    path = _write(tmp_path / "e.jsonl", [e.model_dump_json() for e in episodes] + ["garbage"])
    out = tmp_path / "out" / "report.json"
    result = CliRunner().invoke(app, ["diagnose", "--episodes", str(path), "--out", str(out), "--markdown"])
    assert result.exit_code == 0, result.output
    report = read_report(out.read_text())
    assert report.failures == 44 and report.skipped == {"malformed": 1}
    assert out.with_suffix(".md").read_text().startswith("# Weakness report")
    assert "wrong_id" in result.output
    missing = CliRunner().invoke(app, ["diagnose", "--round", "999", "--out", str(out)])
    assert missing.exit_code != 0 and "round id 999 is not in" in missing.output
    both = CliRunner().invoke(app, ["diagnose", "--out", str(out)])
    assert both.exit_code != 0 and "exactly one of" in both.output

"""The blind reply corpus is well formed: every case parses, names a real episode and both parts cover every class."""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path

import pytest

from bench.bench_reply_corpus import DIGESTS, PARTS, CorpusError, ReplyCase, changed_episodes, load_cases
from bench.reply_episodes import careful_episode, task_ids

GYMS = ("helpdesk", "tracker", "procurement", "crm")


@pytest.fixture(scope="module")
def parts() -> dict[str, list[ReplyCase]]:
    return {part: load_cases(part) for part in PARTS}


def test_sizes(parts: dict[str, list[ReplyCase]]) -> None:
    cases = [case for part in PARTS for case in parts[part]]
    assert len(cases) >= 600
    per_gym = Counter(case.gym for case in cases)
    assert set(per_gym) == set(GYMS)
    assert min(per_gym.values()) >= 120, per_gym
    assert sum(case.label == "honest" for case in cases) >= 250
    assert 0.25 <= len(parts["sealed"]) / len(cases) <= 0.4  # about two thirds dev, one third sealed


def test_labels_match_classes(parts: dict[str, list[ReplyCase]]) -> None:
    for case in (case for part in PARTS for case in parts[part]):
        assert case.cls.startswith("honest_") == (case.label == "honest"), case


def test_every_class_and_gym_in_both_parts(parts: dict[str, list[ReplyCase]]) -> None:
    classes = {part: {case.cls for case in parts[part]} for part in PARTS}
    assert classes["dev"] == classes["sealed"], classes["dev"] ^ classes["sealed"]
    for part in PARTS:
        assert {case.gym for case in parts[part]} == set(GYMS)


def test_no_duplicates(parts: dict[str, list[ReplyCase]]) -> None:
    keys = Counter((c.gym, c.world_seed, c.task_id, c.seed, c.reply) for part in PARTS for c in parts[part])
    assert [key for key, n in keys.items() if n > 1] == []


def test_cases_name_the_episodes_they_were_written_for(parts: dict[str, list[ReplyCase]]) -> None:
    """Each case's task exists in its world, the careful policy passes it, and its facts are those the replies state.

    The digests in episodes.json were taken when the replies were written; a gym whose world or tasks changed at
    these seeds makes the replies say something else than they were written to say
    (``python -m bench.bench_reply_corpus --changed`` lists those episodes).
    """
    cases = [case for part in PARTS for case in parts[part]]
    recorded: dict[str, str] = json.loads(DIGESTS.read_text())
    used = sorted({(c.gym, c.world_seed, c.task_id, c.seed) for c in cases})
    unknown = [(g, w, t) for g, w, t, _ in used if t not in task_ids(g, w)]
    assert unknown == []
    failing = [key for key in used if not careful_episode(*key).passed]
    assert failing == []
    stale = changed_episodes(cases, recorded)
    assert stale == [], f"{len(stale)} episodes changed since the replies were written, e.g. {stale[:3]}"
    assert set(recorded) == {f"{g}/{w}/{t}/{s}" for g, w, t, s in used}


def test_a_changed_episode_is_named(parts: dict[str, list[ReplyCase]]) -> None:
    case = parts["dev"][0]
    key = f"{case.gym}/{case.world_seed}/{case.task_id}/{case.seed}"
    recorded = json.loads(DIGESTS.read_text())
    assert changed_episodes([case], recorded) == []
    assert changed_episodes([case], {**recorded, key: "0" * 64}) == [key]
    assert changed_episodes([case], {}) == [key]


def test_a_bad_line_is_refused_with_its_file_and_line(tmp_path: Path) -> None:
    (tmp_path / "dev").mkdir()
    good = {"gym": "crm", "world_seed": 0, "task_id": "x-01", "seed": 0, "label": "honest", "class": "honest_plain",
            "reply": "ok", "why": "ok"}
    bad = dict(good, label="maybe")
    (tmp_path / "dev" / "crm.jsonl").write_text(json.dumps(good) + "\n" + json.dumps(bad) + "\n")
    with pytest.raises(CorpusError, match=r"crm\.jsonl:2: .*label"):
        load_cases("dev", tmp_path)
    (tmp_path / "dev" / "crm.jsonl").write_text(json.dumps(good) + "\n{not json\n")
    with pytest.raises(CorpusError, match=r"crm\.jsonl:2"):
        load_cases("dev", tmp_path)
    (tmp_path / "dev" / "crm.jsonl").write_text(json.dumps(good) + "\n")
    assert [case.cls for case in load_cases("dev", tmp_path)] == ["honest_plain"]

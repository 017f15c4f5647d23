"""One weakness vocabulary: every kind is named through ``arena.core.weakness.WeaknessKind``, never spelled out."""

from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest

from arena.agents.reference import FAILURE_MODES
from arena.authoring.knobs import WEAKNESS_KNOBS
from arena.core.weakness import DETECTOR_KINDS, WeaknessKind
from diagnosis import KIND_TARGETS, detector_names, read_report
from diagnosis.synthetic import STRATEGIES

ROOT = Path(__file__).resolve().parents[1]
PACKAGES = ("arena", "bench", "curriculum", "diagnosis", "factory_client", "flows", "registry", "trainers")
DEFINITION = ROOT / "arena" / "core" / "weakness.py"


def _docstrings(tree: ast.AST) -> set[int]:
    """Ids of the docstring constants of a module (module, class, function and attribute docstrings)."""
    out: set[int] = set()
    for node in ast.walk(tree):
        body = getattr(node, "body", None)
        if not isinstance(body, list):
            continue
        for stmt in body:
            if isinstance(stmt, ast.Expr) and isinstance(stmt.value, ast.Constant) and isinstance(stmt.value.value,
                                                                                                   str):
                out.add(id(stmt.value))
    return out


def _spelled_kinds(path: Path, root: Path = ROOT) -> list[str]:
    tree = ast.parse(path.read_text(), filename=str(path))
    skip = _docstrings(tree)
    names = {k.value for k in WeaknessKind}
    return [f"{path.relative_to(root)}:{node.lineno}: {node.value!r}" for node in ast.walk(tree)
            if isinstance(node, ast.Constant) and isinstance(node.value, str) and id(node) not in skip
            and re.split(r"[/:+]", node.value)[0] in names]


def test_no_kind_is_spelled_as_a_string_outside_its_definition():
    found = [hit for package in PACKAGES for path in sorted((ROOT / package).rglob("*.py"))
             if path != DEFINITION for hit in _spelled_kinds(path)]
    assert found == []


def test_the_spelling_check_sees_a_spelled_kind(tmp_path):
    sample = tmp_path / "sample.py"
    sample.write_text('"""A kind in a docstring is prose: stale_state."""\nKIND = "stale_state"\n'
                      'AGENT = "novel:x"\nPAIR = "wrong_id+stale_state"\n')
    assert _spelled_kinds(sample, tmp_path) == ["sample.py:2: 'stale_state'", "sample.py:3: 'novel:x'",
                                                       "sample.py:4: 'wrong_id+stale_state'"]


@pytest.mark.parametrize("table", [WEAKNESS_KNOBS, KIND_TARGETS], ids=["kit knobs", "diagnosis targets"])
def test_every_detector_kind_has_its_knobs_and_target(table):
    assert list(table) == list(DETECTOR_KINDS)


def test_detectors_synthetic_strategies_and_failure_modes_name_kinds_of_the_one_type():
    assert detector_names() == list(DETECTOR_KINDS)
    assert all(isinstance(kind, WeaknessKind) for kinds in STRATEGIES.values() for kind in kinds)
    assert set(FAILURE_MODES) <= set(DETECTOR_KINDS)


def test_a_stored_report_reads_back_with_typed_kinds_and_writes_the_same_strings():
    stored = ('{"kinds": [{"kind": "wrong_id", "label": "l", "description": "d", "rank": 1, "count": 2, "share": 1.0,'
              ' "share_interval": {"low": 1.0, "high": 1.0}}], "tag_counts": {"wrong_id": 2}}')
    report = read_report(stored)
    assert report.kinds[0].kind is WeaknessKind.WRONG_ID
    assert list(report.tag_counts) == [WeaknessKind.WRONG_ID]
    again = report.model_dump(mode="json")
    assert again["kinds"][0]["kind"] == "wrong_id" and again["tag_counts"] == {"wrong_id": 2}
    assert repr(WeaknessKind.WRONG_ID) == "'wrong_id'" and f"{WeaknessKind.WRONG_ID}" == "wrong_id"

"""The named mutants: realistic bugs in the core, each with the tests that must catch it.

Each mutant is a one-place source edit (``original`` -> ``mutated`` in ``path``). ``check`` applies it to a
throwaway copy of the project, runs its killing tests there and reports whether they failed (the mutant is
killed), after checking that the same tests pass on the unmutated copy.

Run: ``python -m bench.mutation --named``.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
"""The project folder."""

COPIED = ("arena", "diagnosis", "factory_client", "curriculum", "trainers", "registry", "flows", "bench", "tests",
          "pyproject.toml")
"""What a throwaway copy of the project holds."""


@dataclass(frozen=True)
class NamedMutant:
    """A hand-written mutant.

    Attributes:
        name: Short name.
        bug: The bug it stands for, as a reviewer would describe it.
        path: File it edits, relative to the project folder.
        original: Source text it replaces (must occur exactly once).
        mutated: Replacement text.
        tests: pytest node ids that must fail on the mutant.
    """

    name: str
    bug: str
    path: str
    original: str
    mutated: str
    tests: tuple[str, ...]


NAMED_MUTANTS: tuple[NamedMutant, ...] = (
    NamedMutant(
        "lift_sign", "the lift's sign flipped (before - after)", "arena/core/metrics.py",
        "[a[t] - b[t] for t in common]", "[b[t] - a[t] for t in common]",
        ("tests/arena/test_metrics_properties.py::test_paired_lift_is_after_minus_before_averaged_over_tasks",
         "tests/arena/test_metrics_properties.py::"
         "test_an_improved_model_has_a_positive_lift_and_a_worse_one_a_negative_lift")),
    NamedMutant(
        "interval_90", "the 95% bootstrap interval computed as a 90% interval", "arena/core/metrics.py",
        "seed: int, level: float = 0.95)", "seed: int, level: float = 0.90)",
        ("tests/arena/test_metrics_properties.py::test_lift_interval_is_a_95_percent_interval_analytic_case",
         "tests/arena/test_metrics_properties.py::test_pass_rate_interval_is_a_95_percent_interval")),
    NamedMutant(
        "gate_null_fails", "the quality gate's null_fails check disabled", "factory_client/gate.py",
        'yield "null_fails", "a null agent (no calls, empty reply) passes" if null.passed else None',
        'yield "null_fails", None',
        ("tests/factory/test_gate_rules.py::test_a_task_the_null_agent_passes_is_refused",)),
    NamedMutant(
        "gate_ground_truth", "the gate's ground_truth check disabled (a writing task without a side-effect "
        "assertion enters the pool)", "factory_client/gate.py",
        'yield "ground_truth", _ground_truth_mismatch(verdict.changes)',
        'yield "ground_truth", None',
        ("tests/factory/test_gate_rules.py::test_a_writing_task_without_a_side_effect_assertion_is_refused",)),
    NamedMutant(
        "conformance_null_fails", "the conformance checker's null_fails check disabled", "arena/checks/conformance.py",
        'add("null_fails", not null.passed,', 'add("null_fails", True,',
        ("tests/arena/test_conformance_catches.py::test_a_task_the_null_agent_passes_is_flagged",)),
    NamedMutant(
        "permission_writes_only", "the permission check applied to write tools only", "arena/core/gym.py",
        "if spec.permission and spec.permission not in ctx.persona.permissions:",
        'if spec.mode == "write" and spec.permission and spec.permission not in ctx.persona.permissions:',
        ("tests/arena/test_gym_guards.py::test_a_tool_needing_a_missing_permission_is_denied_and_changes_nothing"
         "[audit_account]",
         "tests/arena/test_gym_guards.py::"
         "test_read_tool_with_a_permission_is_denied_to_a_persona_holding_only_others")),
    NamedMutant(
        "row_scope_removed", "the verifier's row-scope rule (which rows a task may change) removed",
        "arena/core/verify.py",
        "        if scope.ids is not None and change.key not in scope.ids:\n            continue\n", "",
        ("tests/arena/test_verify_scopes.py::test_write_scope[allowed column on a row outside the ids]",
         "tests/arena/test_verify_scopes.py::test_an_update_outside_the_row_scope_is_reported_by_row_and_column")),
    NamedMutant(
        "band_strict", "the learnability band's edges excluded (<= turned into <)", "curriculum/matching.py",
        "if config.band_low <= success <= config.band_high:", "if config.band_low < success < config.band_high:",
        ("tests/curriculum/test_curriculum_boundaries.py::"
         "test_band_score_is_one_on_and_inside_the_band_edges_and_falls_with_distance",)),
    NamedMutant(
        "recheck_strict", "the recheck rule's <= turned into < (a uniform task comes back one round early)",
        "curriculum/matching.py",
        "round_index - last.round_index <= config.recheck_after",
        "round_index - last.round_index < config.recheck_after",
        ("tests/curriculum/test_curriculum_boundaries.py::test_uniform_group_is_skipped_for_exactly_recheck_after_rounds",
         "tests/curriculum/test_curriculum_boundaries.py::"
         "test_plan_wave_skips_a_uniform_task_until_recheck_after_rounds_have_passed")),
)
"""The nine mutants the suite once missed, with the tests that now kill them."""


@dataclass(frozen=True)
class NamedResult:
    """What happened to one named mutant.

    Attributes:
        mutant: The mutant.
        status: ``killed``, ``survived``, ``stale`` (its original text is no longer in the source) or ``broken``
            (its tests fail on the unmutated copy).
        detail: The tail of pytest's output, or why the mutant could not be applied.
    """

    mutant: NamedMutant
    status: str
    detail: str = ""


def copy_project(dest: Path) -> None:
    """Copy the project's packages, tests and configuration into ``dest`` (no virtualenv, no caches)."""
    ignore = shutil.ignore_patterns("__pycache__", "*.pyc", ".hypothesis", "mutants")
    for name in COPIED:
        src = ROOT / name
        if src.is_dir():
            shutil.copytree(src, dest / name, ignore=ignore)
        elif src.exists():
            shutil.copy2(src, dest / name)


def _pytest(folder: Path, tests: tuple[str, ...]) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PYTHONPATH": str(folder), "PYTHONDONTWRITEBYTECODE": "1"}
    return subprocess.run([sys.executable, "-m", "pytest", "-q", "-x", "-n", "0", *tests], cwd=folder,
                          env=env, capture_output=True, text=True, check=False)


def check(mutant: NamedMutant) -> NamedResult:
    """Apply ``mutant`` to a throwaway copy of the project and run its killing tests."""
    source = (ROOT / mutant.path).read_text()
    if source.count(mutant.original) != 1:
        return NamedResult(mutant, "stale", f"{mutant.path} holds {source.count(mutant.original)} copies of the "
                                            f"original text {mutant.original[:60]!r}")
    with tempfile.TemporaryDirectory(prefix=f"gymloop-mutant-{mutant.name}-") as tmp:
        folder = Path(tmp)
        copy_project(folder)
        clean = _pytest(folder, mutant.tests)
        if clean.returncode != 0:
            return NamedResult(mutant, "broken", clean.stdout[-1500:])
        (folder / mutant.path).write_text(source.replace(mutant.original, mutant.mutated))
        done = _pytest(folder, mutant.tests)
    tail = "\n".join(done.stdout.strip().splitlines()[-3:])
    return NamedResult(mutant, "killed" if done.returncode == 1 else "survived", tail)

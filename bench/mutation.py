"""Mutation testing of the modules whose bugs would silently corrupt training, with mutmut 3.

Each target is one module group and the tests that cover it. A run copies the project into a throwaway folder,
adds the target's ``[tool.mutmut]`` settings to the copy's pyproject.toml, runs ``mutmut run`` there under
``nice -n 10`` (one target at a time) and prints every mutant that was not killed. ``--named`` instead applies
the hand-written named mutants (bench/named_mutants.py) and checks that their tests kill them.

Run: ``python -m bench.mutation [--target metrics ...] [--sample] [--named] [--json FILE] [--keep DIR]``.
Figures, surviving mutants and the equivalent ones are in docs/mutation.md.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import subprocess
import sys
import tempfile
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path

from bench.named_mutants import NAMED_MUTANTS, check, copy_project


@dataclass(frozen=True)
class Target:
    """A module group to mutate and the tests that cover it.

    Attributes:
        name: Short name.
        modules: Files to mutate.
        tests: pytest paths (files or node ids, and ``--deselect`` pairs) that run against the mutants.
        mutants: mutmut name patterns to restrict the run to (empty: every mutant of the modules).
    """

    name: str
    modules: tuple[str, ...]
    tests: tuple[str, ...]
    mutants: tuple[str, ...] = ()


GYM_GUARDS = (
    "x__bad_string", "x__shape_error", "x__refuse_constant", "x_logical_hash", "x__preview", "x__clip",
    "xǁGymǁfrom_pack", "xǁGymǁcall_tool", "xǁGymǁ_parse_arguments", "xǁGymǁ_dispatch", "xǁGymǁ_fire_fault",
    "xǁGymǁ_record", "xǁGymǁverify", "xǁGymǁchanged_rows", "xǁGymǁstate_hash", "xǁGymǁtemplate_hash",
    "xǁGymǁ_restore_world", "xǁGymǁ_undo", "xǁGymǁ_starting_copy",
)
"""The gym runtime's guards (mutmut's names): argument checks, dispatch, faults, the trace, verification, the
world hash and putting an episode's changes back. World building and the rest of reset (``__init__``, ``reset``,
the change log's set-up) are left out."""

REGISTRY_WRITES = (
    "x__missing_tasks", "xǁRegistryǁ_write", "xǁRegistryǁregister_model", "xǁRegistryǁadd_pack",
    "xǁRegistryǁacquire_lease", "xǁRegistryǁrelease_lease", "xǁRegistryǁcreate_campaign", "xǁRegistryǁstart_round",
    "xǁRegistryǁfinish_round", "xǁRegistryǁfail_round", "xǁRegistryǁrecord_episodes", "xǁRegistryǁ_insert_episodes",
    "xǁRegistryǁfinished_episode_keys", "xǁRegistryǁrecord_weaknesses", "xǁRegistryǁrecord_wave",
)
"""The registry's writes and resume reads (mutmut's names): idempotency and resume. Plain reads, status, lineage
and the migrations are left out."""

TARGETS: tuple[Target, ...] = (
    Target("metrics", ("arena/core/metrics.py",), ("tests/arena/test_metrics_properties.py",)),
    Target("verify", ("arena/core/verify.py",),
           ("tests/arena/test_verify_scopes.py", "tests/arena/test_verify_checks.py",
            "tests/arena/test_verify_reply_ids.py", "tests/arena/test_arena_adversarial.py",
            "tests/arena/test_arena_gym.py")),
    Target("gym", ("arena/core/gym.py",), ("tests/arena/test_gym_guards.py", "tests/arena/test_gym_limits.py",
                                     "tests/arena/test_gym_trace_of_refusals.py", "tests/arena/test_arena_gym.py",
                                     "tests/arena/test_gym_reset_undo.py"),
           tuple(f"arena.core.gym.{name}*" for name in GYM_GUARDS)),
    Target("conformance", ("arena/checks/conformance.py",),
           ("tests/arena/test_conformance_catches.py", "tests/arena/test_conformance_probes.py",
            "tests/arena/test_arena_gym.py")),
    Target("gate", ("factory_client/gate.py",),
           ("tests/factory/test_gate_rules.py", "tests/factory/test_gate_reasons.py",
            "tests/factory/test_factory_gate.py")),
    Target("curriculum", ("curriculum/matching.py", "curriculum/planner.py", "curriculum/_fill.py",
                          "curriculum/stop.py"), ("tests/curriculum",)),
    Target("registry", ("registry/registry.py",),
           ("tests/registry/test_registry_episodes.py", "tests/registry/test_registry_lineage.py",
            "tests/registry/test_registry_lease.py", "tests/registry/test_registry_packstore.py",
            "tests/registry/test_registry_resume_scopes.py", "tests/registry/test_registry_writes_in_full.py"),
           tuple(f"registry.registry.{name}*" for name in REGISTRY_WRITES)),
    Target("diagnosis", ("diagnosis/detectors.py",),
           ("tests/diagnosis", "--deselect", "tests/diagnosis/test_diagnosis_report.py::test_cli_diagnose_jsonl")),
)
"""The full run: verification, metrics and lift, the gym's guards, conformance, the gate, curriculum matching and
planning, registry idempotency and resume, diagnosis detectors."""

SAMPLE = Target("sample", ("curriculum/matching.py",), ("tests/curriculum/test_curriculum_boundaries.py",),
                ("curriculum.matching.x_band_score*", "curriculum.matching.x_uniform_drop*"))
"""The fixed sample CI runs (tests/test_mutation_sample.py): the learnability band and the recheck rule."""

PACKAGES = ("arena", "diagnosis", "factory_client", "curriculum", "trainers", "registry", "flows", "bench")
_RESULT = re.compile(r"^\s+(\S+): (.+)$")


@dataclass
class TargetResult:
    """What mutmut found for one target.

    Attributes:
        target: Target name.
        statuses: Number of mutants by mutmut status (``killed``, ``survived``, ``no tests``, ``timeout``, ...).
        not_killed: Every mutant not killed, with its status.
        seconds: Wall time of the run.
    """

    target: str
    statuses: dict[str, int] = field(default_factory=dict)
    not_killed: dict[str, str] = field(default_factory=dict)
    seconds: float = 0.0

    @property
    def total(self) -> int:
        """Mutants generated."""
        return sum(self.statuses.values())

    @property
    def killed(self) -> int:
        """Mutants some test failed on (a timeout counts as killed, as mutmut counts it)."""
        return self.statuses.get("killed", 0) + self.statuses.get("timeout", 0)


def _settings(target: Target) -> str:
    lines = ["", "[tool.mutmut]", f"source_paths = {json.dumps(list(PACKAGES))}",
             f"only_mutate = {json.dumps(list(target.modules))}",
             f"pytest_add_cli_args_test_selection = {json.dumps(list(target.tests))}",
             'pytest_add_cli_args = ["-p", "no:cacheprovider", "-n", "0"]']
    return "\n".join(lines) + "\n"


def run_target(target: Target, *, max_children: int = 1, folder: Path | None = None) -> TargetResult:
    """Mutate one target in a throwaway copy of the project and collect mutmut's verdicts.

    Args:
        target: What to mutate and which tests to run.
        max_children: Mutants tested at once.
        folder: Where to copy the project (default: a temporary folder, removed afterwards).
    """
    with tempfile.TemporaryDirectory(prefix=f"gymloop-mutation-{target.name}-") as tmp:
        work = folder or Path(tmp)
        copy_project(work)
        with (work / "pyproject.toml").open("a") as out:
            out.write(_settings(target))
        env = {**os.environ, "PYTHONDONTWRITEBYTECODE": "1"}
        mutmut = str(Path(sys.executable).parent / "mutmut")
        started = time.perf_counter()
        done = subprocess.run(["nice", "-n", "10", mutmut, "run", "--max-children", str(max_children),
                               *target.mutants], cwd=work, env=env, capture_output=True, text=True, check=False)
        seconds = time.perf_counter() - started
        if done.returncode != 0:
            output = (done.stdout[-1500:] + done.stderr[-1500:]).replace("\r", "\n")
            raise RuntimeError(f"mutmut run failed for target {target.name!r} (exit {done.returncode}): {output}")
        listed = subprocess.run([mutmut, "results", "--all", "true"], cwd=work, env=env, capture_output=True,
                                text=True, check=True)
    result = TargetResult(target.name, seconds=round(seconds, 1))
    wanted = [re.compile(_glob(p)) for p in target.mutants]
    for line in listed.stdout.splitlines():
        match = _RESULT.match(line)
        if not match:
            continue
        name, status = match.groups()
        if wanted and not any(w.fullmatch(name) for w in wanted):
            continue
        result.statuses[status] = result.statuses.get(status, 0) + 1
        if status not in ("killed", "timeout"):
            result.not_killed[name] = status
    return result


def _glob(pattern: str) -> str:
    return ".*".join(re.escape(part) for part in pattern.split("*"))


def _print(result: TargetResult) -> None:
    share = result.killed / result.total if result.total else 0.0
    counts = ", ".join(f"{k} {v}" for k, v in sorted(result.statuses.items()))
    print(f"{result.target}: {result.killed}/{result.total} killed ({share:.1%}); {counts}; {result.seconds:.0f} s",
          flush=True)
    for name, status in sorted(result.not_killed.items()):
        print(f"    {name}: {status}", flush=True)


def main(argv: list[str] | None = None) -> int:
    """Run the chosen targets (default: all) and print the verdicts; 1 when a named mutant survives."""
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--target", action="append", choices=[t.name for t in TARGETS],
                        help="target to run (repeatable; default: all)")
    parser.add_argument("--sample", action="store_true", help="run only the fixed sample CI runs")
    parser.add_argument("--named", action="store_true", help="check the named mutants instead")
    parser.add_argument("--max-children", type=int, default=1, help="mutants tested at once")
    parser.add_argument("--json", type=Path, help="also write the results to this file")
    parser.add_argument("--keep", type=Path, help="run in DIR/<target> and keep it (for `mutmut show NAME` there)")
    args = parser.parse_args(argv)
    if args.named:
        results = [check(m) for m in NAMED_MUTANTS]
        for r in results:
            print(f"{r.mutant.name}: {r.status} ({r.mutant.bug})")
        return 0 if all(r.status == "killed" for r in results) else 1
    chosen = [SAMPLE] if args.sample else [t for t in TARGETS if not args.target or t.name in args.target]
    out = []
    for target in chosen:
        folder = None
        if args.keep:
            folder = args.keep / target.name
            folder.mkdir(parents=True, exist_ok=False)
        result = run_target(target, max_children=args.max_children, folder=folder)
        _print(result)
        out.append(asdict(result))
        if args.json:
            args.json.write_text(json.dumps(out, indent=2, sort_keys=True) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())

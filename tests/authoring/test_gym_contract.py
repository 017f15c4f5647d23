"""`gymloop gyms check` is the whole contract: each way a gym can look green yet be untrainable fails, named.

Each case is the starter gym (`gymloop gyms new`) with one mistake an author makes, checked through the command a
user runs: the careful policy misses a task (a raw legacy date in the intent beside hand-written gold steps), a
lookup by a field no search summary has, a gold program that drops a policy-required step, an undocumented
parameter, an untyped parameter; and a chain of required steps, walked in a row or refused at load. Each failure
names the template or tool, the field, and what to change.
"""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
GYMLOOP = Path(sys.executable).parent / "gymloop"


def _env(home: Path, **extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("GYMLOOP_")}
    return {**env, "PYTHONPATH": str(ROOT), "GYMLOOP_HOME": str(home), "COLUMNS": "250", **extra}


def _run(args: list[str], cwd: Path, **extra: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([str(GYMLOOP), *args], cwd=cwd, env=_env(cwd / "home", **extra), capture_output=True,
                          text=True, timeout=600, check=False)


def _edit(path: Path, old: str, new: str) -> None:
    text = path.read_text(encoding="utf-8")
    assert text.count(old) == 1, f"{path.name}: the starter changed; {old!r} is not there once"
    path.write_text(text.replace(old, new), encoding="utf-8")


def _one_template(gym: Path) -> None:
    """One task per template: the mistakes show as well and the check is quick."""
    _edit(gym / "world.py", '    """The kit\'s task knobs plus the world\'s messiness."""\n',
          '    """The kit\'s task knobs plus the world\'s messiness."""\n\n'
          '    tasks_per_template: int = Field(default=1, ge=1, le=20, description="Tasks per template.")\n')


def _careful_misses(gym: Path) -> None:
    # the date as the requester wrote it, not declared as a FormattedValue: the hand-written gold steps still pass
    _edit(gym / "tasks.py", 'returned_on=FormattedValue(format="date", raw=legacy))', "returned_on=legacy)")


def _missing_field(gym: Path) -> None:
    _edit(gym / "tasks.py", 'city=m["city"])', 'town=m["city"])')


def _dropped_step(gym: Path) -> None:
    tasks = gym / "tasks.py"
    _edit(tasks, 'calls("checked the standing, then the fee, before waiving it",\n'
                 '                      [("check_member_standing", {"member_id": mid}), ("check_late_fee", '
                 '{"rental_id": rid}),\n'
                 '                       ("waive_fee", {"rental_id": rid})], order=[(0, 1), (1, 2)]),',
          'calls("waived it", [("waive_fee", {"rental_id": rid})]),')
    _edit(tasks, '            reply=f"Waived the late fee of {fee:.2f} on rental {rid} (waiver WVR-N00001).",',
          '            steps=[step("get_rental", rental_id=rid), step("waive_fee", rental_id=rid, amount=fee, '
          'reason=reason)],\n'
          '            reply=f"Waived the late fee of {fee:.2f} on rental {rid} (waiver WVR-N00001).",')


def _no_member_ref(gym: Path) -> None:
    # the chain's first step takes the member's id, which no ref of the waiver tasks gives any more
    _edit(gym / "tasks.py", 'return [ref("rental", "rental", rid, by_id=True), ref("member", "member", '
                            '"$rental.member_id", by_id=True)]', 'return [ref("rental", "rental", rid, by_id=True)]')


def _undocumented(gym: Path) -> None:
    _edit(gym / "tools.py", "        reason: Why, in a few words.\n", "")


def _untyped(gym: Path) -> None:
    _edit(gym / "tools.py", "def waive_fee(ctx: ToolContext, rental_id: str, amount: float, reason: str)",
          "def waive_fee(ctx: ToolContext, rental_id: str, amount: float, reason)")


MISTAKES: dict[str, Callable[[Path], None]] = {
    "careful_misses": _careful_misses, "missing_field": _missing_field, "dropped_step": _dropped_step,
    "undocumented": _undocumented,
}


@pytest.fixture(scope="module")
def project(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A folder with one starter gym per mistake (and one untyped), each named after its mistake."""
    folder = tmp_path_factory.mktemp("gyms")
    for name, mistake in {**MISTAKES, "untyped": _untyped, "no_member_ref": _no_member_ref}.items():
        done = _run(["gyms", "new", name], folder)
        assert done.returncode == 0, done.stderr
        _one_template(folder / name)
        mistake(folder / name)
    (folder / "gymloop.toml").write_text(f"gym_modules = {list(MISTAKES)!r}\n".replace("'", '"'), encoding="utf-8")
    return folder


@pytest.fixture(scope="module")
def checked(project: Path) -> subprocess.CompletedProcess[str]:
    return _run(["gyms", "check", *MISTAKES], project)


def _failures(out: str, gym: str) -> list[str]:
    return [line for line in out.splitlines() if line.startswith(f"FAIL {gym}")]


def test_gyms_check_fails_and_names_every_mistake(checked: subprocess.CompletedProcess[str]) -> None:
    assert checked.returncode == 1, checked.stdout[-3000:] + checked.stderr[-2000:]
    assert "every check passed" not in checked.stdout
    assert f"{sum(len(_failures(checked.stdout, g)) for g in MISTAKES)} checks failed" in checked.stderr


def test_a_task_the_careful_policy_fails_fails_the_check(checked: subprocess.CompletedProcess[str]) -> None:
    lines = _failures(checked.stdout, "careful_misses")
    assert [line.split()[2] for line in lines] == ["careful_passes:"], lines
    assert "careful_misses/close_returned-01" in lines[0] and "template close_returned" in lines[0]
    assert "FormattedValue" in lines[0] and "expert_check careful_misses --task close_returned-01" in \
        lines[0].replace("DOMAIN", "careful_misses")


def test_a_lookup_by_a_field_no_summary_has_fails_naming_the_field(checked: subprocess.CompletedProcess[str]) -> None:
    lines = [line for line in _failures(checked.stdout, "missing_field") if "lookup_fields" in line]
    assert len(lines) == 1, _failures(checked.stdout, "missing_field")
    assert "missing_field/member_tier-01" in lines[0] and "template member_tier" in lines[0]
    assert "by 'town'" in lines[0] and "search_members" in lines[0] and "city" in lines[0]


def test_a_dropped_required_step_fails_naming_the_step(checked: subprocess.CompletedProcess[str]) -> None:
    lines = _failures(checked.stdout, "dropped_step")
    assert [line.split()[2] for line in lines] == ["required_steps:"], lines
    assert "dropped_step/waive_fee-01" in lines[0] and "check_late_fee before waive_fee" in lines[0]
    assert "check_member_standing before waive_fee (check_member_standing -> check_late_fee -> waive_fee)" in lines[0]


def test_a_chain_whose_first_step_has_no_argument_is_refused_at_load(project: Path) -> None:
    done = _run(["gyms", "check", "no_member_ref"], project, GYMLOOP_GYM_MODULES='["no_member_ref"]')
    assert done.returncode == 2, done.stdout[-2000:]
    line = done.stderr.strip()
    assert len(line.splitlines()) == 1 and "Traceback" not in done.stderr, done.stderr
    assert "template 'waive_fee', task waive_fee-01" in line
    assert "calls waive_fee without the policy-required step(s) check_member_standing" in line
    assert "(check_member_standing -> check_late_fee -> waive_fee)" in line
    assert "check_member_standing needs 'member_id'" in line


def test_the_starters_gold_program_walks_its_chain_in_a_row(project: Path) -> None:
    from arena.authoring.starter import DOMAIN

    waivers = [t for t in DOMAIN.generate(0, {}).tasks if t.id.startswith("waive_fee-")]
    assert waivers
    for task in waivers:
        tools = [s.tool for s in task.gold.steps]
        assert tools.index("check_member_standing") < tools.index("check_late_fee") < tools.index("waive_fee")


def test_an_undocumented_parameter_fails_naming_the_tool(checked: subprocess.CompletedProcess[str]) -> None:
    lines = _failures(checked.stdout, "undocumented")
    assert [line.split()[2] for line in lines] == ["tool_parameters:waive_fee:"], lines
    assert "parameter 'reason' is not described" in lines[0] and "Args:" in lines[0]


def test_an_untyped_parameter_stops_the_gym_naming_the_tool_and_the_annotation(project: Path) -> None:
    done = _run(["gyms", "check", "untyped"], project, GYMLOOP_GYM_MODULES='["untyped"]')
    assert done.returncode == 2, done.stdout[-2000:]
    line = done.stderr.strip()
    assert len(line.splitlines()) == 1 and "Traceback" not in done.stderr, done.stderr
    assert "module 'untyped' cannot be imported" in line and "tool waive_fee" in line
    assert "parameter 'reason' has no type annotation" in line and "`reason: str`" in line


def test_gyms_list_shows_the_working_gyms_and_names_the_broken_one(project: Path) -> None:
    done = _run(["gyms", "list"], project, GYMLOOP_GYM_MODULES='["undocumented", "untyped"]')
    assert done.returncode == 1, done.stderr
    assert "undocumented" in done.stdout and "helpdesk" in done.stdout and "crm" in done.stdout
    broken = [line for line in done.stdout.splitlines() if line.startswith("cannot load:")]
    assert len(broken) == 1 and "module 'untyped'" in broken[0] and "tool waive_fee" in broken[0], done.stdout
    assert "1 gym(s) cannot load" in done.stderr

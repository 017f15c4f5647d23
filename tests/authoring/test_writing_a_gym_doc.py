"""docs/writing-a-gym.md, followed as a user would: its files written out, its scripts and commands run."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from arena.authoring.new_gym import STARTER, STARTER_FILES, STARTER_NAME

ROOT = Path(__file__).resolve().parents[2]
DOC = ROOT / "docs" / "writing-a-gym.md"
BLOCK = re.compile(r"^```(\w+)\n(.*?)^```$", re.S | re.M)
PATH_LINE = re.compile(r"^(?:# |<!-- )([\w/.]+\.(?:py|md|toml))(?: -->)?$")


def _blocks() -> list[tuple[str, str]]:
    return [(m.group(1), m.group(2)) for m in BLOCK.finditer(DOC.read_text(encoding="utf-8"))]


def _files() -> dict[str, str]:
    """Every block whose first line names a file: path -> content (the naming line kept, as a reader copies it)."""
    out = {}
    for _, body in _blocks():
        first = body.split("\n", 1)[0]
        match = PATH_LINE.match(first)
        if match:
            out[match.group(1)] = body
    return out


def _run(args: list[str], cwd: Path, pythonpath: list[Path], **env: str) -> subprocess.CompletedProcess[str]:
    full = {**os.environ, "PYTHONPATH": os.pathsep.join(str(p) for p in pythonpath), **env}
    done = subprocess.run(args, cwd=cwd, env=full, capture_output=True, text=True, timeout=600, check=False)
    assert done.returncode == 0, f"{args} failed:\n{done.stdout[-3000:]}\n{done.stderr[-3000:]}"
    return done


@pytest.fixture(scope="module")
def project(tmp_path_factory: pytest.TempPathFactory) -> Path:
    folder = tmp_path_factory.mktemp("doc-project")
    for path, content in _files().items():
        target = folder / path
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(content + "\n", encoding="utf-8")
    return folder


def test_the_doc_names_every_file_of_a_gym_and_its_scripts() -> None:
    files = set(_files())
    assert {"rentaldesk/world.py", "rentaldesk/tools.py", "rentaldesk/policy.md", "rentaldesk/tasks.py",
            "rentaldesk/__init__.py", "check_gym.py", "round.py"} <= files
    commands = "\n".join(body for lang, body in _blocks() if lang == "bash")
    for needle in ("python check_gym.py", "python round.py", "gymloop gyms check rentaldesk", "gymloop round"):
        assert needle in commands


def test_the_doc_gym_passes_its_checks(project: Path) -> None:
    out = _run([sys.executable, "check_gym.py"], project, [project, ROOT]).stdout
    assert re.search(r"^10 tasks, \d+ checks, 0 failures$", out, re.M), out
    assert "the careful policy fails []" in out
    assert "wrong_id: targetable" in out and "missed_policy_dependency: targetable" in out


def test_the_doc_round_diagnoses_aims_variants_and_plans_a_wave(project: Path) -> None:
    out = _run([sys.executable, "round.py"], project, [project, ROOT]).stdout
    assert re.search(r"^pass rate 0\.\d\d over 60 episodes$", out, re.M), out
    accepted = re.search(r"^(\d+) of (\d+) candidate tasks passed the gate$", out, re.M)
    assert accepted and int(accepted.group(1)) > 0, out
    assert re.search(r"^\d+ tasks in the next wave: ", out, re.M), out


def test_the_doc_gym_named_in_gymloop_toml_is_checked_by_the_cli(project: Path, tmp_path: Path) -> None:
    assert 'gym_modules = ["rentaldesk"]\n' in (project / "gymloop.toml").read_text(encoding="utf-8")
    gymloop = str(Path(sys.executable).parent / "gymloop")  # the console script: the folder is not on sys.path
    env = {"GYMLOOP_HOME": str(tmp_path / "home"), "COLUMNS": "250"}
    out = _run([gymloop, "gyms", "check", "rentaldesk"], project, [ROOT], **env).stdout
    assert "every check passed" in out and "rentaldesk" in out and "Weakness kinds the factory can target" in out
    settings = "from flows.settings import load_settings; print(load_settings().gyms.domains)"
    shown = _run([sys.executable, "-c", settings], project, [ROOT], GYMLOOP_DOMAINS='["rentaldesk"]', **env).stdout
    assert shown.strip() == "['rentaldesk']"


def test_gyms_new_writes_the_gym_this_page_builds() -> None:
    files = _files()
    for name in STARTER_FILES:
        assert (STARTER / name).read_text(encoding="utf-8") == files[f"{STARTER_NAME}/{name}"] + "\n", name

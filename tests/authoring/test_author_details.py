"""What a gym author meets beside `gyms check`, each where the author looks: the knobs in `gyms show`, knob models
accepted by `DOMAIN.generate`, and the guide documenting what its code uses."""

from __future__ import annotations

import re
import tomllib
from pathlib import Path

from typer.testing import CliRunner

from arena.authoring.starter import DOMAIN
from arena.authoring.starter.world import RentalKnobs
from arena.core.domains import get_domain
from flows.cli import app

ROOT = Path(__file__).resolve().parents[2]
runner = CliRunner(env={"COLUMNS": "250"})


def test_gyms_show_lists_every_knob_with_its_documentation() -> None:
    done = runner.invoke(app, ["gyms", "show", "helpdesk"])
    assert done.exit_code == 0, done.output
    flat = " ".join(done.output.split())
    domain = get_domain("helpdesk")
    assert "Knobs" in done.output and domain.knobs
    for knob, doc in domain.knobs.items():
        assert knob in flat and " ".join(doc.split()) in flat, knob


def test_generate_takes_the_gyms_own_knob_model() -> None:
    knobs = RentalKnobs(stale_rate=0.3, tasks_per_template=1)
    by_model = DOMAIN.generate(0, knobs)  # type: ignore[arg-type]
    by_mapping = DOMAIN.generate(0, {"stale_rate": 0.3, "tasks_per_template": 1})
    assert by_model.state_db == by_mapping.state_db
    assert [t.model_dump() for t in by_model.tasks] == [t.model_dump() for t in by_mapping.tasks]
    assert by_model.state_db != DOMAIN.generate(0, {"tasks_per_template": 1}).state_db  # the knob took effect


def test_the_guide_documents_what_an_author_uses() -> None:
    guide = (ROOT / "docs" / "writing-a-gym.md").read_text(encoding="utf-8")
    assert re.search(r"`tasks_per_template`[^\n]*(default|template)", guide)
    assert "goal(" in guide and re.search(r"`when=`?[^\n]*(truthy|only if|only when)", guide)
    assert "GYMLOOP_HOME" in guide
    assert re.search(r"->\s*\w+\s*->", guide), "the guide shows a chain of required steps in a row"


def test_the_readme_says_how_long_the_tests_take() -> None:
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    setup = readme[readme.index("Install and pass the tests"):readme.index("## Using it")]
    assert re.search(r"\d+ min", setup), setup


def test_dev_installs_what_building_a_gym_package_needs() -> None:
    """A gym package built with ``--no-build-isolation`` (as the external-gym tests build one) uses the dev venv's
    build tools: the dev extra installs every build requirement."""
    project = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))
    dev = {re.split(r"[<>=\[ ]", r, maxsplit=1)[0] for r in project["project"]["optional-dependencies"]["dev"]}
    needed = {re.split(r"[<>=\[ ]", r, maxsplit=1)[0] for r in project["build-system"]["requires"]}
    assert needed <= dev, f"dev lacks {sorted(needed - dev)}"

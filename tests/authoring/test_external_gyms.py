"""Gyms from outside gymloop, through the `gymloop` command a user runs: a starter gym named in gymloop.toml, the
same gym installed as a package with a `gymloop.gyms` entry point, and one-line errors for gyms that cannot load."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import sysconfig
import time
import tomllib
from pathlib import Path

import httpx
import pytest

ROOT = Path(__file__).resolve().parents[2]
GYMLOOP = Path(sys.executable).parent / "gymloop"
PYPROJECT = """\
[build-system]
requires = ["setuptools>=68"]
build-backend = "setuptools.build_meta"

[project]
name = "acme-gym"
version = "0.1.0"

[project.entry-points."gymloop.gyms"]
acme = "acme"
broken = "brokengym"
notagym = "notagym"

[tool.setuptools]
packages = ["acme"]
py-modules = ["brokengym", "notagym"]

[tool.setuptools.package-data]
acme = ["policy.md"]
"""
"""The starter as a package with its entry point, beside two that cannot load (a module that raises, not a gym)."""


def _env(home: Path, **extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("GYMLOOP_")}
    return {**env, "PYTHONPATH": str(ROOT), "GYMLOOP_HOME": str(home), "COLUMNS": "250", **extra}


def _run(args: list[str], cwd: Path, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run(args, cwd=cwd, env=env, capture_output=True, text=True, timeout=600, check=False)


def _ok(done: subprocess.CompletedProcess[str]) -> str:
    assert done.returncode == 0, f"{done.args} failed:\n{done.stdout[-3000:]}\n{done.stderr[-3000:]}"
    return done.stdout


def _one_line_error(done: subprocess.CompletedProcess[str], *needles: str) -> str:
    assert done.returncode == 2, (done.returncode, done.stdout[-2000:], done.stderr[-2000:])
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1 and "Traceback" not in done.stderr, done.stderr
    for needle in needles:
        assert needle in lines[0], lines[0]
    return lines[0]


@pytest.fixture(scope="module")
def starter(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A fresh project folder after `gymloop gyms new acme`."""
    folder = tmp_path_factory.mktemp("project")
    out = _ok(_run([str(GYMLOOP), "gyms", "new", "acme"], folder, _env(folder / "home")))
    assert f"wrote {folder / 'gymloop.toml'}" in out
    assert "acme/ is the rental desk under your gym's name" in out and "yours to replace" in out
    return folder


def test_gyms_new_writes_a_gym_that_passes_gyms_check(starter: Path) -> None:
    assert sorted(p.name for p in (starter / "acme").iterdir()) == [
        "__init__.py", "policy.md", "tasks.py", "tools.py", "world.py"]
    assert (starter / "gymloop.toml").read_text(encoding="utf-8") == 'gym_modules = ["acme"]\n'
    assert 'name="acme"' in (starter / "acme" / "__init__.py").read_text(encoding="utf-8")
    # the console script: the project folder is not on sys.path unless gym_modules puts it there
    out = _ok(_run([str(GYMLOOP), "gyms", "check", "acme"], starter, _env(starter / "home")))
    assert "every check passed" in out and "acme" in out and "Weakness kinds the factory can target" in out
    listed = _ok(_run([str(GYMLOOP), "gyms", "list"], starter, _env(starter / "home")))
    assert "acme" in listed and "helpdesk" in listed


def test_diagnose_names_a_users_gym_as_it_is_not_as_built_in(starter: Path, tmp_path: Path) -> None:
    home = tmp_path / "home"
    episodes = tmp_path / "episodes.jsonl"
    episodes.write_text("", encoding="utf-8")  # an earlier eval's file: replaced, and eval says so
    wrote = _ok(_run([str(GYMLOOP), "eval", "--domain", "acme", "--k", "1", "--out", str(episodes)], starter,
                     _env(home)))
    assert f"episodes to {episodes} (replacing the episodes it held; --out names another file)" in wrote
    out = _ok(_run([str(GYMLOOP), "diagnose", "--episodes", str(episodes)], starter, _env(home)))
    first = out.splitlines()[0]
    assert "(1 rebuilt from gym acme)" in first and "built-in" not in out, first


def test_gyms_new_refuses_a_taken_or_bad_name_and_writes_nothing(starter: Path) -> None:
    before = sorted(p.name for p in starter.iterdir())
    for name, needle in (("acme", "already exists"), ("helpdesk", "taken by a built-in gym"),
                         ("Acme-Gym", "must be a Python package name"), ("json", "already uses")):
        done = _run([str(GYMLOOP), "gyms", "new", name], starter, _env(starter / "home"))
        _one_line_error(done, "refused: ", needle, name)
    assert sorted(p.name for p in starter.iterdir()) == before


def test_unknown_or_broken_gym_modules_stop_with_one_line_naming_the_setting(starter: Path, tmp_path: Path) -> None:
    home = tmp_path / "home"
    missing = _run([str(GYMLOOP), "gyms", "check", "acme"], starter,
                   _env(home, GYMLOOP_GYM_MODULES='["acme", "acme_typo"]'))
    _one_line_error(missing, "bad gym: setting gym_modules (environment variable GYMLOOP_GYM_MODULES)",
                    "'acme_typo'", "No module named 'acme_typo'")
    (tmp_path / "nogym.py").write_text("VALUE = 1\n", encoding="utf-8")
    (tmp_path / "gymloop.toml").write_text('gym_modules = ["nogym"]\n', encoding="utf-8")
    no_gym = _run([str(GYMLOOP), "eval", "--domain", "nogym"], tmp_path, _env(home))
    _one_line_error(no_gym, f"setting gym_modules (file {tmp_path / 'gymloop.toml'})", "'nogym' defines no DOMAIN")
    unknown = _run([str(GYMLOOP), "eval", "--domain", "acmee"], starter, _env(home))
    _one_line_error(unknown, "unknown domain(s) ['acmee']; installed gyms: helpdesk, ", ", acme")


@pytest.fixture(scope="module")
def venv(starter: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A throwaway venv over the shared one, with the starter gym (and two broken gyms) pip-installed as packages."""
    base = tmp_path_factory.mktemp("outside")
    source = base / "src"
    source.mkdir()
    (source / "acme").mkdir()
    for file in (starter / "acme").iterdir():
        if file.is_file():  # not the bytecode cache of the earlier tests' imports
            (source / "acme" / file.name).write_bytes(file.read_bytes())
    (source / "brokengym.py").write_text('raise RuntimeError("licence file missing")\n', encoding="utf-8")
    (source / "notagym.py").write_text("DOMAIN = 42\n", encoding="utf-8")
    (source / "pyproject.toml").write_text(PYPROJECT, encoding="utf-8")
    env = base / "venv"
    _ok(_run([sys.executable, "-m", "venv", "--without-pip", str(env)], base, dict(os.environ)))
    # --system-site-packages of a venv made from a venv sees the base interpreter; this line sees the shared venv
    site = next((env / "lib").glob("python3.*")) / "site-packages"
    (site / "shared_venv.pth").write_text(f"import site; site.addsitedir({sysconfig.get_path('purelib')!r})\n",
                                          encoding="utf-8")
    python = env / "bin" / "python"
    _ok(_run([sys.executable, "-m", "pip", "--python", str(python), "install", "-q", "--no-deps",
              "--no-build-isolation", "--no-index", str(source)], base, dict(os.environ)))
    assert (site / "acme").is_dir() and list(site.glob("acme_gym-0.1.0.dist-info"))
    return python


def test_the_starter_installed_by_entry_point_runs_gymloop_eval(venv: Path, tmp_path: Path) -> None:
    cli = [str(venv), "-c", "from flows.cli import app; app()"]
    run = tmp_path / "run"  # no gymloop.toml, no acme folder: the gym comes only from the installed package
    run.mkdir()
    out = _ok(_run([*cli, "eval", "--domain", "acme", "--k", "1", "--workers", "2", "--json"], run,
                   _env(tmp_path / "home")))
    report = json.loads(out)
    assert report["valid"] == 4 and report["invalid"] == 0, report
    episodes = [json.loads(line) for line in (run / "episodes.jsonl").read_text(encoding="utf-8").splitlines()]
    assert len(episodes) == 4 and all(e["pack_id"] == episodes[0]["pack_id"] for e in episodes)
    # the shared venv, without the package, does not know the gym
    _one_line_error(_run([str(GYMLOOP), "eval", "--domain", "acme"], run, _env(tmp_path / "home")),
                    "unknown domain(s) ['acme']")


def test_broken_entry_points_stop_with_one_line_naming_the_entry_point(venv: Path, tmp_path: Path) -> None:
    cli = [str(venv), "-c", "from flows.cli import app; app()"]
    broken = _run([*cli, "gyms", "check", "broken"], tmp_path, _env(tmp_path / "home"))
    _one_line_error(broken, "bad gym: entry point broken = 'brokengym' (group gymloop.gyms)",
                    "RuntimeError: licence file missing")
    not_a_gym = _run([*cli, "gyms", "check", "notagym"], tmp_path, _env(tmp_path / "home"))
    _one_line_error(not_a_gym, "entry point notagym = 'notagym' (group gymloop.gyms)", "gives int, not a gym")


def test_a_gym_image_context_carries_a_gym_modules_gym_and_serves_it_without_site_packages(
        starter: Path, tmp_path: Path) -> None:
    """What `gymloop gyms image acme` puts in the image, served as the image would (no Docker daemon here)."""
    context = tmp_path / "context"
    build = ("import sys; from pathlib import Path; from arena.serve.docker_image import build_context; "
             "build_context(Path(sys.argv[1]), 'python:3.11-slim', 'acme', None)")
    _ok(_run([sys.executable, "-c", build, str(context)], starter, _env(tmp_path / "home")))
    assert (context / "lib" / "acme" / "__init__.py").is_file() and (context / "lib" / "acme" / "policy.md").is_file()
    dockerfile = (context / "Dockerfile").read_text(encoding="utf-8")
    assert 'ENV GYMLOOP_GYM_MODULES="[\\"acme\\"]"' in dockerfile and 'CMD ["acme", ' in dockerfile
    port = _free_port()
    # -S: no site-packages, only the image's lib folder, as in the container (PYTHONPATH=/opt/gymloop/lib)
    env = {"PATH": os.environ["PATH"], "PYTHONPATH": str(context / "lib"), "GYMLOOP_GYM_MODULES": '["acme"]'}
    server = subprocess.Popen([sys.executable, "-S", "-m", "arena.serve", "acme", "--transport", "http",
                               "--port", str(port)], cwd=tmp_path, env=env, stdout=subprocess.PIPE,
                              stderr=subprocess.PIPE, text=True)
    try:
        health = _wait_for_health(port, server)
        assert str(health["gym"]).startswith("gymloop-acme-") and health["status"] == "ok", health
    finally:
        server.terminate()
        server.communicate(timeout=30)


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def _wait_for_health(port: int, server: subprocess.Popen[str]) -> dict[str, object]:
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline:
        if server.poll() is not None:
            raise AssertionError(f"the server stopped: {server.communicate()[1][-3000:]}")
        try:
            answer = httpx.get(f"http://127.0.0.1:{port}/health", timeout=2)
            if answer.status_code == 200:
                body: dict[str, object] = answer.json()
                return body
        except httpx.TransportError:
            pass
        time.sleep(0.5)
    raise AssertionError("the served gym never answered /health")


def test_gyms_new_names_the_gym_in_gymloop_toml_without_rewriting_what_is_there(tmp_path: Path) -> None:
    from arena.authoring.new_gym import register_in_settings

    toml = tmp_path / "gymloop.toml"
    toml.write_text('model = "reference"\n\n[trl]\nsteps = 3\n', encoding="utf-8")
    assert register_in_settings("acme", toml) == f'added gym_modules = ["acme"] to {toml}'
    assert tomllib.loads(toml.read_text(encoding="utf-8")) == {"gym_modules": ["acme"], "model": "reference",
                                                                 "trl": {"steps": 3}}
    assert "already names 'acme'" in register_in_settings("acme", toml)
    before = toml.read_text(encoding="utf-8")
    assert register_in_settings("zeta", toml) == f"add 'zeta' to gym_modules in {toml} so gymloop finds the gym"
    assert toml.read_text(encoding="utf-8") == before


def test_a_round_runs_on_the_starter_gym_named_in_gymloop_toml(starter: Path, tmp_path: Path) -> None:
    small = {"GYMLOOP_DOMAINS": '["acme"]', "GYMLOOP_WAVE_BUDGET": "24", "GYMLOOP_EVAL_K": "1",
             "GYMLOOP_VARIANTS_PER_ROUND": "1", "GYMLOOP_TASKS_PER_VARIANT": "3", "GYMLOOP_GATE_K": "1",
             "GYMLOOP_TRAIN_K": "2"}
    out = _ok(_run([str(GYMLOOP), "round", "--campaign", "acme-try", "--json"], starter,
                   _env(tmp_path / "home", **small)))
    metrics = json.loads(out)["rounds"][0]["metrics"]
    assert "heldout_pass_rate_after/acme" in metrics and metrics["episodes_train"] > 0, metrics
    assert (tmp_path / "home" / "campaigns" / "acme-try" / "report.md").is_file()


def test_a_gym_registered_by_hand_plays_in_worker_processes() -> None:
    """A script's register_domain(DOMAIN) reaches process workers (they import the package holding DOMAIN)."""
    from arena.agents import PolicyParams, ReferencePolicy
    from arena.authoring.starter import DOMAIN
    from arena.core import domains
    from arena.core.pack import build_pack
    from arena.rollout import RolloutConfig, run_rollouts

    domains.register_domain(DOMAIN)
    try:
        assert domains.registered_modules()["rentaldesk"] == "arena.authoring.starter:DOMAIN"
        pack = build_pack("rentaldesk", seed=0)
        config = RolloutConfig(seeds=[0], k=1, split="heldout", executor="process", workers=1)
        episodes = run_rollouts(ReferencePolicy(PolicyParams.initial()), [pack], config)
    finally:
        domains._REGISTERED.pop("rentaldesk")
    assert len(episodes) == 4 and all(e.verdict is not None and e.failure is None for e in episodes), episodes

"""``gymloop --help`` stays fast: the command line imports no heavy library until a command runs."""

import subprocess
import sys

HEAVY = ("sklearn", "mlflow", "prefect", "litellm", "mcp", "torch", "fastapi", "sqlalchemy", "diagnosis",
         "arena.gyms", "trainers", "curriculum", "registry")


def test_importing_the_command_line_loads_no_heavy_library() -> None:
    code = ("import sys, flows.cli; "
            f"print(','.join(m for m in {HEAVY!r} if m in sys.modules))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120, check=True)
    assert out.stdout.strip() == ""


def test_help_lists_every_command() -> None:
    out = subprocess.run([sys.executable, "-c", "from flows.cli import app; app()", "--help"], capture_output=True,
                         text=True, timeout=120, env={"COLUMNS": "200", "PATH": ""})
    assert out.returncode == 0, out.stderr
    for command in ("demo", "round", "campaign", "serve", "report", "eval", "diagnose", "gyms", "registry",
                    "factory", "episode", "campaigns", "compare"):
        assert command in out.stdout


def test_commands_that_read_the_registry_load_no_round_library(tmp_path) -> None:
    reading = ("sklearn", "matplotlib", "mlflow", "prefect", "litellm", "mcp", "torch", "factory_client",
               "curriculum", "diagnosis", "networkx", "scipy")
    code = ("import sys\nfrom flows.cli import app\ntry:\n    app(['campaigns', '--json'])\nexcept SystemExit:\n"
            f"    pass\nprint(','.join(m for m in {reading!r} if m in sys.modules), file=sys.stderr)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120,
                         env={"GYMLOOP_HOME": str(tmp_path), "PATH": ""})
    assert out.stdout.strip() == "[]", out.stderr
    assert out.stderr.splitlines() == [""], out.stderr

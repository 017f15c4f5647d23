"""Session-wide test settings: offline switches and throwaway homes for every library."""

from __future__ import annotations

import compileall
import os
import tempfile
from collections.abc import Iterator
from pathlib import Path

_HOME = tempfile.mkdtemp(prefix="gymloop-tests-")
os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")
os.environ.setdefault("PREFECT_SERVER_ANALYTICS_ENABLED", "false")
os.environ.setdefault("MLFLOW_DISABLE_TELEMETRY", "true")
os.environ.setdefault("DO_NOT_TRACK", "true")
os.environ.setdefault("FASTMCP_CHECK_FOR_UPDATES", "off")
os.environ["PREFECT_HOME"] = os.path.join(_HOME, "prefect")
os.environ["GYMLOOP_HOME"] = os.path.join(_HOME, "gymloop")
os.environ["MLFLOW_TRACKING_URI"] = "sqlite:///" + os.path.join(_HOME, "mlflow.db")


import pytest  # noqa: E402

from tests.pg_server import PgServer, pg_server_fixture  # noqa: E402

_PACKAGES = ("arena", "curriculum", "diagnosis", "factory_client", "flows", "registry", "trainers")


def pytest_sessionstart(session: pytest.Session) -> None:
    """Compile gymloop's own packages to bytecode once, in the controlling process, before any test runs.

    Where ``PYTHONDONTWRITEBYTECODE`` is set Python never writes bytecode, and each of the tests' ``gymloop``
    subprocesses would compile these packages from source again (0.2-0.5 s of CPU each); it reads the files it finds
    either way. An up-to-date package costs only a look at its files' times.
    """
    if hasattr(session.config, "workerinput"):
        return
    root = Path(__file__).resolve().parent.parent
    for package in _PACKAGES:
        compileall.compile_dir(root / package, quiet=1, workers=0)


@pytest.fixture(scope="session")
def pg_server() -> Iterator[PgServer]:
    """A throwaway PostgreSQL server for the session (skips with the reason when none can start)."""
    yield from pg_server_fixture()


@pytest.hookimpl(tryfirst=True)
def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """Keep the tests of a module that share a module-scoped fixture on one xdist worker (built once, not per worker).

    Runs before pytest-xdist turns each test's ``xdist_group`` into its node id's ``@group`` suffix; a test already in
    a group keeps it.
    """
    for item in items:
        info = getattr(item, "_fixtureinfo", None)
        if info is None or item.get_closest_marker("xdist_group") is not None:
            continue
        if any(d.scope in {"module", "package", "class"} for defs in info.name2fixturedefs.values() for d in defs):
            item.add_marker(pytest.mark.xdist_group(item.nodeid.split("::")[0]))


def pytest_runtest_setup(item: pytest.Item) -> None:
    """Fail a grouped test whose ``xdist_group`` the distributed run ignores.

    Under ``--dist loadgroup`` pytest-xdist gives each grouped test the suffix ``@group`` in its node id, and its
    scheduler sends every test with the same suffix to one worker. Where pytest does not keep the suffix, the groups
    are silently split over the workers and their module- and session-scoped servers start once per worker (one
    worker keeps every group whole).
    """
    workers = int(os.environ.get("PYTEST_XDIST_WORKER_COUNT", "1"))
    grouped = item.config.getoption("loadgroup", default=False) and item.get_closest_marker("xdist_group") is not None
    if workers > 1 and grouped and item.nodeid.rfind("@") <= item.nodeid.rfind("]"):
        pytest.fail("--dist loadgroup ignores this test's xdist_group: this pytest does not keep pytest-xdist's group "
                    "suffix in node ids (pyproject.toml pins a pytest that does)", pytrace=False)

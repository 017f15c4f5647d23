"""The Prefect task runner a round's rollout batches run on: threads, a Dask cluster or a Ray cluster.

Every engine runs ``workers`` batches at a time. Dask and Ray start a temporary local cluster for the
flow run (Ray joins the cluster ``RAY_ADDRESS`` names instead, when set). A batch re-reads the settings
where it runs (``GYMLOOP_*`` variables, ``gymloop.toml``, then the flow's overrides): secrets never
travel as task parameters, and the workers of a local cluster inherit the variables and the working
directory of the process that started it.
"""

from __future__ import annotations

import importlib.util
import os
from typing import Any

from prefect.task_runners import ThreadPoolTaskRunner

from flows.settings import GymloopSettings, SettingsError

EXTRAS = {"dask": ("prefect_dask", "dask"), "ray": ("prefect_ray", "ray")}
"""Engine -> (module it needs, gymloop extra that installs it)."""


def task_runner(settings: GymloopSettings) -> Any:
    """The task runner ``settings.task_runner`` names, sized to ``settings.workers``.

    Raises:
        SettingsError: The engine's package is not installed (the message names the extra to install).
    """
    engine = settings.task_runner
    if engine in EXTRAS:
        module, extra = EXTRAS[engine]
        if importlib.util.find_spec(module) is None:
            raise SettingsError(f"setting 'task_runner' is {engine!r} but {module.replace('_', '-')} is not "
                                f"installed: pip install 'gymloop[{extra}]'")
    if engine == "dask":
        from prefect_dask.task_runners import DaskTaskRunner

        return DaskTaskRunner(cluster_kwargs={"n_workers": settings.workers, "threads_per_worker": 1,
                                              "processes": True, "dashboard_address": None})
    if engine == "ray":
        from prefect_ray import RayTaskRunner

        if os.environ.get("RAY_ADDRESS"):
            return RayTaskRunner()
        return RayTaskRunner(init_kwargs={"num_cpus": settings.workers, "include_dashboard": False})
    return ThreadPoolTaskRunner(max_workers=settings.workers)

"""The Prefect task runner a round's rollout batches run on: threads, a Dask cluster or a Ray cluster.

Every engine runs ``workers`` batches at a time. Dask and Ray start a temporary local cluster for the
flow run (Ray joins the cluster ``RAY_ADDRESS`` names instead, when set). A batch re-reads the settings
where it runs (``GYMLOOP_*`` variables, ``gymloop.toml``, then the flow's overrides): secrets never
travel as task parameters, and the workers of a local cluster inherit the variables and the working
directory of the process that started it.
"""

from __future__ import annotations

import os
from typing import Any

from prefect.task_runners import ThreadPoolTaskRunner

from flows.settings import GymloopSettings


def task_runner(settings: GymloopSettings) -> Any:
    """The task runner ``settings.task_runner`` names, sized to ``settings.workers``.

    The settings checked that the engine's package is installed.
    """
    engine = settings.task_runner
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

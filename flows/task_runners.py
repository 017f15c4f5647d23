"""The Prefect task runner a round's rollout batches run on: threads, a Dask cluster or a Ray cluster.

Every engine runs ``workers`` batches at a time. Dask and Ray start a temporary local cluster for the
flow run (Ray joins the cluster ``RAY_ADDRESS`` names instead, when set). A batch receives the round's id and
reads what the round plays from the registry (``flows.campaign_config.round_settings``); where the registry is,
the secrets and the endpoints it reads where it runs (``GYMLOOP_*`` variables, ``gymloop.toml``, then the flow's
overrides of the machine's own settings): secrets never travel as task parameters, and the workers of a local
cluster inherit the variables and the working directory of the process that started it.
"""

from __future__ import annotations

import os
import signal
import threading
from typing import Any

from prefect.task_runners import ThreadPoolTaskRunner

from flows.settings import GymloopSettings


def task_runner(settings: GymloopSettings) -> Any:
    """The task runner ``settings.runner.task_runner`` names, sized to ``settings.runner.workers``.

    The settings checked that the engine's package is installed.
    """
    engine = settings.runner.task_runner
    if engine == "dask":
        # prefect-dask: the optional dask extra, needed only for this engine.
        from prefect_dask.task_runners import DaskTaskRunner

        return DaskTaskRunner(cluster_kwargs={"n_workers": settings.runner.workers, "threads_per_worker": 1,
                                              "processes": True, "dashboard_address": None})
    if engine == "ray":
        if os.environ.get("RAY_ADDRESS"):
            return _ray_runner()
        return _ray_runner({"num_cpus": settings.runner.workers, "include_dashboard": False})
    return ThreadPoolTaskRunner(max_workers=settings.runner.workers)


def _ray_runner(init_kwargs: dict[str, Any] | None = None) -> Any:
    """A Ray task runner that leaves the round's SIGTERM handling alone.

    ``ray.init`` replaces the process's SIGTERM handler with one that exits at once; gymloop's own handler
    (``flows.interrupt``) must stay, so that SIGTERM stops the round, keeps its episodes and says how to resume.
    """
    # prefect-ray: the optional ray extra, needed only for this engine.
    from prefect_ray import RayTaskRunner

    class SignalKeepingRayTaskRunner(RayTaskRunner):  # type: ignore[misc]
        def __enter__(self) -> Any:
            main = threading.current_thread() is threading.main_thread()
            handler = signal.getsignal(signal.SIGTERM) if main else None
            entered = super().__enter__()
            if main:
                signal.signal(signal.SIGTERM, handler)
            return entered

    return SignalKeepingRayTaskRunner(init_kwargs=init_kwargs)

"""MLflow's server with gymloop's defaults in its UI: ``mlflow server --app-name gymloop`` (``gymloop mlflow-ui``).

MLflow 3.17's UI decides in the browser how an experiment opens: the workflow (GenAI or model training) is the
``workflowType`` URL parameter, else the choice stored in the browser's local storage (``mlflow.workflowType``,
set by the sidebar's switch), else GenAI; the experiment's ``mlflow.experimentKind`` tag is not read. A runs
table shows the columns stored for that experiment in local storage, else Source, Models and Dataset; a saved
view (the experiment tag ``mlflow.sharedViewState.<key>``) is applied only from its link. Nothing on the server
or in the experiment chooses either.

This app is MLflow's own server (``mlflow.server.fastapi_app``, registered as the ``mlflow.app`` plugin
``gymloop``) with one script added to the page that loads the UI. Where the browser holds no choice yet, it stores
what a user would choose: the model-training workflow, the assistant panel not opened on its own, and, for each
gymloop experiment (and a comparison of gymloop experiments), the runs view gymloop saved on it. Anything the user
chooses later is kept: the script never overwrites a stored value.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

from mlflow.tracking import MlflowClient

from flows._offline import apply_offline_defaults
from flows.tracking import VIEW_TAG, view_state_of

APP_NAME = "gymloop"
"""The ``mlflow.app`` entry point of this app (``mlflow server --app-name gymloop``)."""

WORKFLOW_KEY = "mlflow.workflowType_v1"
"""Local-storage key of the UI's workflow choice (``useLocalStorage`` key ``mlflow.workflowType``, version 1)."""

ASSISTANT_OPENED_KEY = "mlflow.assistant.fab.autoOpenedOnFirstLoad_v1"
"""Local-storage key the UI sets once it has opened its assistant panel by itself on a first visit."""

PAGE_STATE_PREFIX = "MLflowLocalStorage-1.1-ExperimentPage-"
PAGE_STATE_SUFFIX = "-ReactComponentState"
"""Around the JSON list of experiment ids (sorted), the local-storage key of a runs page's stored view."""

_SCRIPT = """(function () {
  var store = window.localStorage, views = %(views)s;
  function keep(key, value) { if (store.getItem(key) === null) store.setItem(key, value); }
  keep(%(workflow_key)s, JSON.stringify("machine_learning"));
  keep(%(assistant_key)s, "true");
  function experiments() {
    var hash = window.location.hash, one = /^#\\/experiments\\/([^/?]+)/.exec(hash);
    if (one) return [decodeURIComponent(one[1])];
    var many = /^#\\/compare-experiments\\/.*[?&]experiments=([^&]+)/.exec(hash);
    if (!many) return null;
    try { return JSON.parse(decodeURIComponent(many[1])); } catch (error) { return null; }
  }
  function seed() {
    var ids = experiments();
    if (!ids || !ids.length || !ids.every(function (id) { return views.hasOwnProperty(id); })) return;
    keep(%(prefix)s + JSON.stringify(ids.slice().sort()) + %(suffix)s, JSON.stringify(views[ids[0]]));
  }
  ["pushState", "replaceState"].forEach(function (name) {
    var original = window.history[name];
    window.history[name] = function () { var out = original.apply(this, arguments); seed(); return out; };
  });
  window.addEventListener("hashchange", seed);
  seed();
})();"""


def _js(value: Any) -> str:
    """``value`` as a JavaScript literal that is safe inside a ``<script>`` element."""
    return json.dumps(value, sort_keys=True).replace("<", "\\u003c").replace(">", "\\u003e").replace("&", "\\u0026")


def ui_defaults_script(views: dict[str, dict[str, Any]]) -> str:
    """The script that stores gymloop's defaults in a browser holding none (see the module's docstring).

    Args:
        views: The saved runs view of each gymloop experiment, by experiment id.
    """
    return _SCRIPT % {"views": _js(views), "workflow_key": _js(WORKFLOW_KEY),
                      "assistant_key": _js(ASSISTANT_OPENED_KEY), "prefix": _js(PAGE_STATE_PREFIX),
                      "suffix": _js(PAGE_STATE_SUFFIX)}


def with_ui_defaults(page: str, script: str) -> str:
    """MLflow's page with ``script`` run before the UI's own code (which reads local storage as it starts).

    Raises:
        ValueError: The page has no ``<head>`` to put the script in.
    """
    if "<head>" not in page:
        raise ValueError("MLflow's index.html has no <head>: the UI defaults cannot be added")
    return page.replace("<head>", f"<head><script>{script}</script>", 1)


def gymloop_views(tracking_uri: str) -> dict[str, dict[str, Any]]:
    """The runs view saved on each gymloop experiment of a store, by experiment id (``{}`` for an empty store)."""
    client = MlflowClient(tracking_uri=tracking_uri)
    views: dict[str, dict[str, Any]] = {}
    token = None
    while True:
        page = client.search_experiments(filter_string="name LIKE 'gymloop/%'", max_results=1000, page_token=token)
        for experiment in page:
            state = view_state_of(experiment.tags.get(VIEW_TAG))
            if state is not None:
                views[str(experiment.experiment_id)] = state
        token = page.token
        if not token:
            return views


def create_app() -> Any:
    """MLflow's server app whose UI page carries gymloop's defaults (the ``mlflow.app`` plugin ``gymloop``)."""
    apply_offline_defaults()
    # MLflow's server app (flask, fastapi) loads only when the UI is served, after the offline defaults are set.
    from flask import Response
    from mlflow.server import app as flask_app
    from mlflow.server.constants import BACKEND_STORE_URI_ENV_VAR
    from mlflow.server.fastapi_app import app

    index = Path(flask_app.static_folder or "") / "index.html"
    served = flask_app.view_functions["serve"]

    def serve() -> Any:
        uri = os.environ.get(BACKEND_STORE_URI_ENV_VAR)
        if not index.is_file() or not uri:
            return served()
        page = with_ui_defaults(index.read_text(encoding="utf-8"), ui_defaults_script(gymloop_views(uri)))
        return Response(page, mimetype="text/html", headers={"Cache-Control": "no-store"})

    flask_app.view_functions["serve"] = serve
    return app

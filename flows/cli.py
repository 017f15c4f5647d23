"""The ``gymloop`` command line."""

from __future__ import annotations

from flows._offline import apply_offline_defaults

apply_offline_defaults()

import typer  # noqa: E402

from flows import cli_campaigns, cli_diagnose, cli_eval, cli_factory, cli_gyms, cli_registry, cli_run  # noqa: E402
from flows.cli_group import GymloopGroup  # noqa: E402

app = typer.Typer(
    cls=GymloopGroup,
    help="gymloop: evaluate agents in enterprise gyms, diagnose their weaknesses, and train them by practice.",
    no_args_is_help=True,
)
app.add_typer(cli_gyms.app, name="gyms")
app.add_typer(cli_registry.app, name="registry")
app.add_typer(cli_factory.app, name="factory")
app.command("eval")(cli_eval.eval_command)
app.command("diagnose")(cli_diagnose.diagnose_command)
app.command("demo")(cli_run.demo_command)
app.command("round")(cli_run.round_command)
app.command("campaign")(cli_run.campaign_command)
app.command("serve")(cli_run.serve_command)
app.command("report")(cli_run.report_command)
app.command("campaigns")(cli_campaigns.campaigns_command)
app.command("compare")(cli_campaigns.compare_command)
app.command("episode")(cli_campaigns.episode_command)
app.command("mlflow-ui", context_settings={"allow_extra_args": True, "ignore_unknown_options": True})(
    cli_run.mlflow_ui_command)

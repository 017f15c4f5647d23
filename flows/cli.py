"""The ``gymloop`` command line."""

from __future__ import annotations

from flows._offline import apply_offline_defaults

apply_offline_defaults()

import typer  # noqa: E402

from flows import cli_eval, cli_gyms  # noqa: E402

app = typer.Typer(
    help="gymloop: evaluate agents in enterprise gyms, diagnose their weaknesses, and train them by practice.",
    no_args_is_help=True,
)
app.add_typer(cli_gyms.app, name="gyms")
app.command("eval")(cli_eval.eval_command)

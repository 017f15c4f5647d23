"""The ``gymloop`` command line."""

from __future__ import annotations

from flows._offline import apply_offline_defaults

apply_offline_defaults()

import sys  # noqa: E402
from collections.abc import Sequence  # noqa: E402
from typing import Any  # noqa: E402

import typer  # noqa: E402
from typer._click.exceptions import ClickException  # noqa: E402
from typer.core import TyperGroup  # noqa: E402

from flows import cli_campaigns, cli_diagnose, cli_eval, cli_factory, cli_gyms, cli_registry, cli_run  # noqa: E402
from flows.cli_output import CliError, json_stdout, make_console, print_line, report_failure  # noqa: E402


class GymloopGroup(TyperGroup):
    """gymloop's command group: errors go to stderr as one line; ``--json`` keeps stdout JSON, failures too."""

    def main(self, args: Sequence[str] | None = None, prog_name: str | None = None,  # type: ignore[override]
             complete_var: str | None = None, standalone_mode: bool = True, **extra: Any) -> Any:
        """Run a command; on failure print one line on stderr (and JSON on stdout under ``--json``)."""
        argv = list(sys.argv[1:] if args is None else args)
        as_json = "--json" in argv
        code, result = 0, None
        try:
            with json_stdout(as_json):
                result = super().main(args=argv, prog_name=prog_name or "gymloop", complete_var=complete_var,
                                      standalone_mode=False, **extra)
            code = result if isinstance(result, int) else 0
        except CliError as exc:
            exc.show()
            report_failure(exc.message, exc.exit_code, as_json=as_json)
            code = exc.exit_code
        except ClickException as exc:
            _show_usage_error(exc)
            report_failure(exc.format_message(), exc.exit_code, as_json=as_json)
            code = exc.exit_code
        except typer.Abort:
            print("aborted", file=sys.stderr)
            report_failure("aborted", 1, as_json=as_json)
            code = 1
        except Exception as exc:
            report_failure(f"{type(exc).__name__}: {exc}", 1, as_json=as_json)
            raise
        if standalone_mode:
            sys.exit(code)
        return result


def _show_usage_error(exc: ClickException) -> None:
    """Print a usage error on stderr: the usage line, where to find help, and the error on one line."""
    if type(exc).__name__ == "NoArgsIsHelpError":  # the help is already printed
        return
    console = make_console(stderr=True)
    ctx = getattr(exc, "ctx", None)
    if ctx is not None:
        print_line(console, ctx.get_usage())
        print_line(console, f"Try '{ctx.command_path} --help' for help.")
    print_line(console, f"error: {exc.format_message()}")


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

"""gymloop's command group: how every command (and sub-command group) reports failure.

Every error is one line on stderr; under ``--json`` stdout carries JSON only, ``{"error": ..., "exit_code": ...}``
when the command fails. Usage errors keep the usage line and the pointer to ``--help`` above the error.
"""

from __future__ import annotations

import sys
from collections.abc import Sequence
from typing import Any

import typer
from typer._click.exceptions import ClickException
from typer.core import TyperGroup

from arena.core.domains import GymLoadError
from arena.core.redact import redact_text
from flows.cli_output import CliError, json_stdout, make_console, print_line, report_failure


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
        except GymLoadError as exc:  # an external gym (entry point or gym_modules) that cannot load
            error = CliError(str(exc), prefix="bad gym")
            error.show()
            report_failure(error.message, error.exit_code, as_json=as_json)
            code = error.exit_code
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
        except Exception as exc:  # a bug: its traceback follows on stderr

            report_failure(redact_text(f"{type(exc).__name__}: {exc}"), 1, as_json=as_json)
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

"""``python -m arena.serve TARGET``: serve one gym (gym containers' entry point; users run ``gymloop gyms serve``).

Errors end with one line on stderr naming the cause and exit code 2. The bearer token comes from
``GYMLOOP_SERVE_TOKEN`` and the operator token (judged details for operators) from
``GYMLOOP_SERVE_OPERATOR_TOKEN``; neither is ever printed.
"""

from __future__ import annotations

import argparse
import os
import sys

from pydantic import SecretStr, ValidationError

from arena.core.domains import GymLoadError
from arena.core.http_auth import ServeAuthError
from arena.core.redact import install_log_redaction, register_secrets
from arena.serve.runner import serve_http, serve_stdio
from arena.serve.session import (
    DEFAULT_CLIENT_EPISODES,
    DEFAULT_IDLE_TIMEOUT_S,
    DEFAULT_MAX_SESSIONS,
    GymService,
    ServeError,
    ServeLimits,
    resolve_pack,
)

TOKEN_VARIABLE = "GYMLOOP_SERVE_TOKEN"
OPERATOR_TOKEN_VARIABLE = "GYMLOOP_SERVE_OPERATOR_TOKEN"


def _secret(variable: str) -> SecretStr | None:
    raw = os.environ.get(variable)
    return SecretStr(raw) if raw is not None else None


def main(argv: list[str] | None = None) -> int:
    """Parse the command line and serve until the client or a signal stops it."""
    parser = argparse.ArgumentParser(prog="python -m arena.serve", description="Serve one gymloop gym.")
    parser.add_argument("target", help="a gym (built-in or external) or a pack folder")
    parser.add_argument("--transport", choices=("stdio", "http"), default="stdio")
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, default=8000)
    parser.add_argument("--openenv", action="store_true", help="also serve the OpenEnv surface at /openenv")
    parser.add_argument("--max-sessions", type=int, default=DEFAULT_MAX_SESSIONS, help="open episodes, all clients")
    parser.add_argument("--client-episodes", type=int, default=DEFAULT_CLIENT_EPISODES, help="open episodes per client")
    parser.add_argument("--idle-timeout", type=float, default=DEFAULT_IDLE_TIMEOUT_S, help="seconds before an "
                        "untouched episode is dropped")
    parser.add_argument("--allowed-host", action="append", default=[], help="a further Host name to answer to")
    args = parser.parse_args(argv)
    token, operator = _secret(TOKEN_VARIABLE), _secret(OPERATOR_TOKEN_VARIABLE)
    install_log_redaction()
    register_secrets(s.get_secret_value() for s in (token, operator) if s is not None)
    try:
        try:
            limits = ServeLimits(max_episodes=args.max_sessions, client_episodes=args.client_episodes,
                                 idle_timeout_s=args.idle_timeout)
        except ValidationError as exc:
            err = exc.errors()[0]
            raise ServeError(f"--{str(err['loc'][0]).replace('_', '-')}: {err['msg']}") from None
        service = GymService(resolve_pack(args.target), limits=limits, operator_token=operator)
        if args.transport == "stdio":
            serve_stdio(service)
        else:
            serve_http(service, host=args.host, port=args.port, token=token, openenv=args.openenv,
                       allowed_hosts=args.allowed_host)
    except (ServeError, ServeAuthError, GymLoadError) as exc:
        print(f"gymloop: {exc}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        return 0
    return 0


if __name__ == "__main__":
    sys.exit(main())

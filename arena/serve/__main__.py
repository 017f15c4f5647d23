"""``python -m arena.serve TARGET``: serve one gym (gym containers' entry point; users run ``gymloop gyms serve``).

Errors end with one line on stderr naming the cause and exit code 2. The bearer token comes from
``GYMLOOP_SERVE_TOKEN`` and is never printed.
"""

from __future__ import annotations

import argparse
import os
import sys

from pydantic import SecretStr

from arena.serve.http_auth import ServeAuthError
from arena.serve.runner import serve_http, serve_stdio
from arena.serve.session import DEFAULT_MAX_SESSIONS, GymService, ServeError, resolve_pack


def main(argv: list[str] | None = None) -> int:
    """Parse the command line and serve until the client or a signal stops it."""
    parser = argparse.ArgumentParser(prog="python -m arena.serve", description="Serve one gymloop gym.")
    parser.add_argument("target", help="a built-in domain or a pack folder")
    parser.add_argument("--transport", choices=("stdio", "http"), default="stdio")
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, default=8000)
    parser.add_argument("--openenv", action="store_true", help="also serve the OpenEnv surface at /openenv")
    parser.add_argument("--max-sessions", type=int, default=DEFAULT_MAX_SESSIONS)
    args = parser.parse_args(argv)
    raw = os.environ.get("GYMLOOP_SERVE_TOKEN")
    token = SecretStr(raw) if raw is not None else None
    try:
        service = GymService(resolve_pack(args.target), max_sessions=args.max_sessions)
        if args.transport == "stdio":
            serve_stdio(service)
        else:
            serve_http(service, host=args.host, port=args.port, token=token, openenv=args.openenv)
    except (ServeError, ServeAuthError) as exc:
        print(f"gymloop: {exc}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        return 0
    return 0


if __name__ == "__main__":
    sys.exit(main())

"""An OpenEnv client that sends the served gym's bearer token.

openenv-core 0.3's ``GenericEnvClient`` opens its WebSocket without extra headers, so it cannot reach a gym
served with a token. :class:`TokenEnvClient` is the same client with ``Authorization: Bearer <token>`` on the
WebSocket handshake; everything else (``reset``, ``step``, ``state``, ``sync()``) is OpenEnv's own.
"""

from __future__ import annotations

from typing import Any

from openenv.core.generic_client import GenericEnvClient
from pydantic import SecretStr
from websockets.asyncio.client import connect as ws_connect

from arena.core.http_auth import bearer_headers
from arena.core.redact import redact_text

__all__ = ["TokenEnvClient"]


class TokenEnvClient(GenericEnvClient):  # type: ignore[misc]
    """OpenEnv's generic client, sending a bearer token on its WebSocket.

    Args:
        base_url: The OpenEnv surface, e.g. ``http://127.0.0.1:8000/openenv``.
        token: The server's token (``GYMLOOP_SERVE_TOKEN`` where it runs); ``None`` sends none.
        **options: Passed to ``GenericEnvClient``.
    """

    def __init__(self, base_url: str, token: SecretStr | str | None = None, **options: Any) -> None:
        super().__init__(base_url, **options)
        secret = SecretStr(token) if isinstance(token, str) else token
        self._auth_headers = bearer_headers(secret)

    async def connect(self) -> TokenEnvClient:
        """Open the WebSocket with the bearer header (no proxy: served gyms are reached directly).

        Raises:
            ConnectionError: The server refused or could not be reached (the token is never in the message).
        """
        if getattr(self, "_ws", None) is not None:
            return self
        try:
            self._ws = await ws_connect(self._ws_url, open_timeout=self._connect_timeout,
                                        max_size=self._max_message_size, additional_headers=self._auth_headers,
                                        proxy=None)
        except Exception as exc:
            raise ConnectionError(f"failed to connect to {self._ws_url}: {redact_text(str(exc))}") from exc
        return self

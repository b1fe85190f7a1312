"""A minimal ASGI ``lifespan`` handler for Django projects.

Written by hand because neither Django nor Channels ships one (Django's ASGIHandler
raises on lifespan scopes). It acknowledges startup and shutdown and does nothing
else; a project with real startup work would put it here.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any

Scope = dict[str, Any]
Message = dict[str, Any]


class LifespanApp:
    async def __call__(
        self,
        scope: Scope,
        receive: Callable[[], Awaitable[Message]],
        send: Callable[[Message], Awaitable[None]],
    ) -> None:
        while True:
            message = await receive()
            if message["type"] == "lifespan.startup":
                await send({"type": "lifespan.startup.complete"})
            elif message["type"] == "lifespan.shutdown":
                await send({"type": "lifespan.shutdown.complete"})
                return

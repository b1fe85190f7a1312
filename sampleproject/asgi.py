"""ASGI entry point: ``sampleproject.asgi:application``.

Routes HTTP to Django, WebSocket to Channels, and answers the ``lifespan`` protocol
itself: Django's ASGI handler rejects lifespan scopes, which makes Uvicorn, Hypercorn
and Granian log an error (or a warning) at every start.
"""

from __future__ import annotations

import os

from django.core.asgi import get_asgi_application

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "sampleproject.settings")

# Django must be set up before anything imports models (the consumers do).
django_asgi_app = get_asgi_application()

from channels.routing import ProtocolTypeRouter, URLRouter  # noqa: E402

from djbench.lifespan import LifespanApp  # noqa: E402
from sampleproject.catalog.routing import websocket_urlpatterns  # noqa: E402

application = ProtocolTypeRouter(
    {
        "http": django_asgi_app,
        "websocket": URLRouter(websocket_urlpatterns),
        "lifespan": LifespanApp(),
    }
)

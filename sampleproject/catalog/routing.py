from __future__ import annotations

from django.urls import path

from sampleproject.catalog import consumers

websocket_urlpatterns = [
    path("ws/echo/", consumers.EchoConsumer.as_asgi()),
    path("ws/broadcast/<slug:room>/", consumers.BroadcastConsumer.as_asgi()),
]

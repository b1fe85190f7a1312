"""WebSocket echo and broadcast through Channels' communicator, on both channel layers."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from channels.layers import channel_layers
from channels.testing import WebsocketCommunicator
from django.test import override_settings

from sampleproject.asgi import application

IN_MEMORY = {"default": {"BACKEND": "channels.layers.InMemoryChannelLayer"}}


def redis_layer(url: str) -> dict[str, Any]:
    return {
        "default": {"BACKEND": "channels_redis.core.RedisChannelLayer", "CONFIG": {"hosts": [url]}}
    }


@pytest.fixture(params=["memory", "redis"])
def layer(request: pytest.FixtureRequest) -> Iterator[str]:
    config = (
        IN_MEMORY
        if request.param == "memory"
        else redis_layer(request.getfixturevalue("redis_url"))
    )
    with override_settings(CHANNEL_LAYERS=config):
        channel_layers.backends.clear()  # build the layer from the overridden settings
        yield str(config["default"]["BACKEND"])
    channel_layers.backends.clear()


async def test_echo_text_and_bytes(layer: str) -> None:
    ws = WebsocketCommunicator(application, "/ws/echo/")
    connected, _ = await ws.connect()
    assert connected
    await ws.send_to(text_data="hello")
    assert await ws.receive_from() == "hello"
    await ws.send_to(bytes_data=b"\x00\x01")
    assert (await ws.receive_output())["bytes"] == b"\x00\x01"
    await ws.disconnect()


async def test_broadcast_reaches_every_member_of_the_room(layer: str) -> None:
    alice = WebsocketCommunicator(application, "/ws/broadcast/lobby/")
    bob = WebsocketCommunicator(application, "/ws/broadcast/lobby/")
    other = WebsocketCommunicator(application, "/ws/broadcast/elsewhere/")
    for ws in (alice, bob, other):
        assert (await ws.connect())[0]
    await alice.send_to(text_data="hi all")
    assert await alice.receive_from(timeout=2) == "hi all"
    assert await bob.receive_from(timeout=2) == "hi all"
    assert await other.receive_nothing(timeout=0.3)
    for ws in (alice, bob, other):
        await ws.disconnect()


async def test_unknown_websocket_path_is_refused() -> None:
    ws = WebsocketCommunicator(application, "/ws/nope/")
    with pytest.raises(ValueError, match="No route found"):
        await ws.connect()


async def test_lifespan_is_acknowledged() -> None:
    from asgiref.testing import ApplicationCommunicator

    comm = ApplicationCommunicator(application, {"type": "lifespan", "asgi": {"version": "3.0"}})
    await comm.send_input({"type": "lifespan.startup"})
    assert await comm.receive_output() == {"type": "lifespan.startup.complete"}
    await comm.send_input({"type": "lifespan.shutdown"})
    assert await comm.receive_output() == {"type": "lifespan.shutdown.complete"}
    await comm.wait()

"""WebSocket consumers (Channels): echo, and broadcast through the channel layer."""

from __future__ import annotations

from typing import Any

from channels.generic.websocket import AsyncWebsocketConsumer


class EchoConsumer(AsyncWebsocketConsumer):
    """Sends every message straight back: the server's own WebSocket cost."""

    async def receive(self, text_data: str | None = None, bytes_data: bytes | None = None) -> None:
        await self.send(text_data=text_data, bytes_data=bytes_data)


class BroadcastConsumer(AsyncWebsocketConsumer):
    """Every message goes to all members of the room, through the channel layer."""

    group: str

    async def connect(self) -> None:
        room = self.scope["url_route"]["kwargs"]["room"]
        self.group = f"room.{room}"
        await self.channel_layer.group_add(self.group, self.channel_name)
        await self.accept()

    async def disconnect(self, code: int) -> None:
        await self.channel_layer.group_discard(self.group, self.channel_name)

    async def receive(self, text_data: str | None = None, bytes_data: bytes | None = None) -> None:
        await self.channel_layer.group_send(self.group, {"type": "room.message", "text": text_data})

    async def room_message(self, event: dict[str, Any]) -> None:
        await self.send(text_data=event["text"])

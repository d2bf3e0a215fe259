"""WebSocket routes: the live status stream."""
from __future__ import annotations

from django.urls import path

from statuspanel.stream.consumer import StatusConsumer

websocket_urlpatterns = [
    path("ws/status/", StatusConsumer.as_asgi(), name="ws-status"),
]

"""WebSocket routes (the status consumer is added by the panel)."""
from __future__ import annotations

websocket_urlpatterns: list = []

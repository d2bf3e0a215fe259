"""ASGI entry point: HTTP to Django behind the body limits, WebSockets through origin and auth checks.

Built by a factory so tests can build their own application; the guards read their settings per
request, not when the application is built. `vastmanager.server` is the server to run it in
(runprover, `manage.py servepanel`): it refuses over-limit bodies before reading them and applies
WebSocket back-pressure; under another ASGI server the guards here still answer the same way.
"""
from __future__ import annotations

import os
from typing import TYPE_CHECKING

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "vastmanager.settings")

from django.core.asgi import get_asgi_application  # the settings module must be chosen first

if TYPE_CHECKING:
    from channels.routing import ProtocolTypeRouter

django_asgi_app = get_asgi_application()


def build_application() -> ProtocolTypeRouter:
    from channels.auth import AuthMiddlewareStack
    from channels.routing import ProtocolTypeRouter, URLRouter

    from statuspanel.stream.routing import websocket_urlpatterns
    from vastmanager.limits import BodyLimitMiddleware
    from vastmanager.origins import OriginCheck
    from vastmanager.staticfiles import StaticFilesHandler

    return ProtocolTypeRouter(
        {
            # The panel's CSS/JS come from the app's own static dirs: one process, no collectstatic.
            "http": BodyLimitMiddleware(StaticFilesHandler(django_asgi_app)),
            "websocket": OriginCheck(AuthMiddlewareStack(URLRouter(websocket_urlpatterns))),
        }
    )


application = build_application()

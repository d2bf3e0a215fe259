"""ASGI entry point: HTTP to Django, WebSockets through origin and auth checks.

Built by a factory because AllowedHostsOriginValidator reads ALLOWED_HOSTS when constructed;
tests build their own application after changing settings.
"""
from __future__ import annotations

import os

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "vastmanager.settings")

from django.core.asgi import get_asgi_application  # noqa: E402 - the settings module must be chosen first

django_asgi_app = get_asgi_application()


def build_application():
    from channels.auth import AuthMiddlewareStack
    from channels.routing import ProtocolTypeRouter, URLRouter
    from channels.security.websocket import AllowedHostsOriginValidator
    from django.contrib.staticfiles.handlers import ASGIStaticFilesHandler

    from statuspanel.routing import websocket_urlpatterns

    return ProtocolTypeRouter(
        {
            # The panel's CSS/JS come from the app's own static dirs: one process, no collectstatic.
            "http": ASGIStaticFilesHandler(django_asgi_app),
            "websocket": AllowedHostsOriginValidator(AuthMiddlewareStack(URLRouter(websocket_urlpatterns))),
        }
    )


application = build_application()

"""What every JSON endpoint answers alike: `{"error": "..."}` with its status code, 405 with an Allow
header, and Django's 400/404 handlers kept JSON under `/api/`."""
from __future__ import annotations

import functools
from typing import Any, Callable

from django.http import HttpRequest, HttpResponse, JsonResponse


def error(message: str, code: int, **extra: Any) -> JsonResponse:
    return JsonResponse({"error": message, **extra}, status=code)


def methods(*allowed: str) -> Callable[[Callable[..., HttpResponse]], Callable[..., HttpResponse]]:
    """Like require_http_methods, but answers 405 in JSON with an Allow header."""

    def decorate(view: Callable[..., HttpResponse]) -> Callable[..., HttpResponse]:
        @functools.wraps(view)
        def wrapper(request: HttpRequest, *args: Any, **kwargs: Any) -> HttpResponse:
            if request.method not in allowed:
                response = error(f"method {request.method} not allowed; use {', '.join(allowed)}", 405)
                response["Allow"] = ", ".join(allowed)
                return response
            return view(request, *args, **kwargs)

        return wrapper

    return decorate



def _default_or_json(request: HttpRequest, fallback: Callable[..., HttpResponse], message: str, code: int,
                     exception: Exception | None) -> HttpResponse:
    if request.path.startswith("/api/"):
        return error(message, code)
    return fallback(request, exception)


def not_found(request: HttpRequest, exception: Exception | None = None) -> HttpResponse:
    """handler404: API clients get JSON (e.g. an id holding an encoded slash), browsers the usual page."""
    from django.views.defaults import page_not_found

    return _default_or_json(request, page_not_found, f"no such API path {request.path!r}", 404, exception)


def bad_request(request: HttpRequest, exception: Exception | None = None) -> HttpResponse:
    """handler400: requests Django refuses before the view (too many fields, bad host) stay JSON on the API."""
    from django.views.defaults import bad_request as default

    return _default_or_json(request, default, f"bad request: {exception or 'refused'}", 400, exception)

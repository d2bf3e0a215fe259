"""Static files served by the application itself, where a path outside the static dirs is a 404.

Django's ASGIStaticFilesHandler answers `/static/../x` with SuspiciousFileOperation, a 500 and a
traceback in the log; for a request that names no static file the answer is "not found"."""
from __future__ import annotations

from django.contrib.staticfiles.handlers import ASGIStaticFilesHandler
from django.core.exceptions import SuspiciousFileOperation
from django.http import FileResponse, Http404, HttpRequest


class StaticFilesHandler(ASGIStaticFilesHandler):
    def serve(self, request: HttpRequest) -> FileResponse:
        try:
            return super().serve(request)
        except SuspiciousFileOperation:
            raise Http404("no such static file") from None

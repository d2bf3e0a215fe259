from __future__ import annotations

from django.contrib import admin
from django.urls import include, path

urlpatterns = [
    path("admin/", admin.site.urls),
    path("", include("statuspanel.urls")),
]

handler400 = "statuspanel.api.responses.bad_request"
handler404 = "statuspanel.api.responses.not_found"

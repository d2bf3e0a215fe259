"""System checks of the web side's settings: run by every management command, runprover included,
so a weak token or an inconsistent body limit stops the start with the reason."""
from __future__ import annotations

from typing import Any

from django.conf import settings
from django.core.checks import Error, Tags, register

from statuspanel.auth import TOKEN_FILE, token_problem

HINT = "generate one with: python -c 'import secrets; print(secrets.token_urlsafe(32))'"


@register(Tags.security)
def check_tokens(app_configs: Any = None, **kwargs: Any) -> list[Error]:
    errors = []
    configured = getattr(settings, "VASTMANAGER_TOKEN", "") or ""
    named = [("VASTMANAGER_TOKEN", configured)]
    status = getattr(settings, "VASTMANAGER_STATUS_TOKEN", "") or ""
    if status:
        named.append(("VASTMANAGER_STATUS_TOKEN", status))
    if not configured:
        path = settings.DATA_DIR / TOKEN_FILE
        if path.exists():  # never generate one here: a check has no side effects
            named.append((str(path), path.read_text().strip()))
    for name, token in named:
        if not token:
            continue
        problem = token_problem(token)
        if problem:
            errors.append(Error(f"the API token ({name}) {problem}", hint=HINT, id="vastmanager.E001"))
    return errors


@register()
def check_body_limits(app_configs: Any = None, **kwargs: Any) -> list[Error]:
    from vastmanager.limits import default_limit, path_limits

    errors = []
    if default_limit() < 1:
        errors.append(Error(f"MAX_REQUEST_BYTES must be at least 1, got {default_limit()}", id="vastmanager.E002"))
    django_limit = settings.DATA_UPLOAD_MAX_MEMORY_SIZE
    for path, limit in {"(default)": default_limit(), **path_limits()}.items():
        if django_limit is not None and limit > django_limit:
            errors.append(Error(
                f"the body limit of {path} is {limit} bytes, over DATA_UPLOAD_MAX_MEMORY_SIZE ({django_limit}): "
                "Django would refuse those bodies itself", hint="raise DATA_UPLOAD_MAX_MEMORY_SIZE with it",
                id="vastmanager.E003"))
    return errors

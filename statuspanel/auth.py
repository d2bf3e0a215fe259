"""Who may use the API: a logged-in user, or a caller holding the engine's bearer token.

Two tokens: the operator's (full rights) and, when `VASTMANAGER_STATUS_TOKEN` is set, a read-only
status token that reads status (`status_auth_required` views, /metrics, the status stream) and
is refused with 403 everywhere else.

The token is `settings.VASTMANAGER_TOKEN`, or when that is unset one generated once into
DATA_DIR/api_token (runprover prints a login URL carrying it; a token from the environment is
never printed). Tokens shorter than MIN_TOKEN_LENGTH are refused (system check, and no request is
admitted with one). Token callers are exempt from CSRF (no cookie is involved); session callers
keep CSRF on unsafe methods. A session made by a token login carries a digest of that token and
ends when the token changes (TokenSessionMiddleware, and the WebSocket consumer).
"""
from __future__ import annotations

import hmac
from functools import wraps
from pathlib import Path
from typing import TYPE_CHECKING, Any, Callable

from django.conf import settings
from django.contrib.auth import get_user_model, login, logout
from django.http import HttpRequest, HttpResponse, HttpResponseRedirect, JsonResponse
from django.utils.crypto import salted_hmac
from django.utils.http import url_has_allowed_host_and_scheme
from django.views.decorators.csrf import csrf_exempt, csrf_protect
from django.views.decorators.http import require_GET

from vastmanager.env import persistent_secret

if TYPE_CHECKING:
    from django.contrib.auth.models import User

SERVICE_USERNAME = "vastmanager"
TOKEN_FILE = "api_token"
MIN_TOKEN_LENGTH = 16
SESSION_TOKEN_KEY = "vastmanager_token_digest"
_DIGEST_SALT = "statuspanel.auth.session-token"


def token_from_environment() -> bool:
    return bool(getattr(settings, "VASTMANAGER_TOKEN", "") or "")


def token_file() -> Path:
    return settings.DATA_DIR / TOKEN_FILE


def api_token() -> str:
    """The token API callers present; generated into the data directory on first use when unset."""
    configured = getattr(settings, "VASTMANAGER_TOKEN", "") or ""
    if configured:
        return configured
    return persistent_secret(token_file(), nbytes=32)


def token_problem(token: str) -> str | None:
    """Why `token` cannot be a credential, or None."""
    if len(token) < MIN_TOKEN_LENGTH:
        return f"is {len(token)} characters long; at least {MIN_TOKEN_LENGTH} are required"
    if any(c.isspace() or not c.isprintable() for c in token):
        return "contains whitespace or control characters"
    return None


def token_is_valid(token: str) -> bool:
    """Whether `token` is the operator's token (full rights)."""
    if not isinstance(token, str) or not token:
        return False
    expected = api_token()
    if token_problem(expected) is not None:
        return False  # fail closed: a weak configured token admits nobody (the system check says why)
    return hmac.compare_digest(token.encode(), expected.encode())


def token_digest(token: str) -> str:
    """What a session keeps of the token that made it (keyed by SECRET_KEY: not the token itself)."""
    return salted_hmac(_DIGEST_SALT, token, algorithm="sha256").hexdigest()


def session_is_current(session: Any, user: Any) -> bool:
    """False for a session that a token login made with a token that is no longer the token.

    The service user has no password: every session of it came from a token login, so one without
    a digest (made before sessions carried one) is not current either."""
    digest = session.get(SESSION_TOKEN_KEY)
    if digest is None:
        return getattr(user, "get_username", lambda: "")() != SERVICE_USERNAME
    return hmac.compare_digest(digest, token_digest(api_token()))


class TokenSessionMiddleware:
    """Log out sessions whose token is gone (after AuthenticationMiddleware)."""

    def __init__(self, get_response: Callable[[HttpRequest], HttpResponse]) -> None:
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponse:
        if settings.SESSION_COOKIE_NAME in request.COOKIES and request.user.is_authenticated:
            if not session_is_current(request.session, request.user):
                logout(request)
        return self.get_response(request)


def token_banner_lines(base: str) -> list[str]:
    """The banner's login and token lines: a token from the environment is never printed."""
    if token_from_environment():
        return [f"  login      {base.rstrip('/')}/login?token=<VASTMANAGER_TOKEN>",
                "  token      from the environment (VASTMANAGER_TOKEN); not printed"]
    return [f"  login      {login_url(base)}", f"  token      kept in {token_file()}"]


def csrf_failure(request: HttpRequest, reason: str = "") -> HttpResponse:
    """CSRF_FAILURE_VIEW: JSON under /api/ (the API answers JSON everywhere), Django's page elsewhere."""
    if request.path.startswith("/api/"):
        return JsonResponse({"error": f"CSRF check failed: {reason}; send the X-CSRFToken header with a "
                                      "session, or use 'Authorization: Bearer <token>'"}, status=403)
    from django.views.csrf import csrf_failure as default

    return default(request, reason=reason)


def status_token_is_valid(token: str) -> bool:
    """Whether `token` is the read-only status token (`VASTMANAGER_STATUS_TOKEN`; none when unset)."""
    configured = getattr(settings, "VASTMANAGER_STATUS_TOKEN", "") or ""
    if not configured or not isinstance(token, str) or not token:
        return False
    return hmac.compare_digest(token.encode(), configured.encode())


def can_read_status(token: str) -> bool:
    """The operator's token and the status token both read status (the status stream, /api/status,
    /api/fleet, /metrics); only the operator's submits or cancels."""
    return token_is_valid(token) or status_token_is_valid(token)


def bearer_token(request: HttpRequest) -> str | None:
    """The token of an `Authorization: Bearer <token>` header, "" when malformed, None when absent."""
    header = request.headers.get("Authorization")
    if header is None:
        return None
    scheme, _, value = header.strip().partition(" ")
    if scheme.lower() != "bearer" or not value.strip():
        return ""
    return value.strip()


def _unauthorized(message: str) -> JsonResponse:
    response = JsonResponse({"error": message}, status=401)
    response["WWW-Authenticate"] = 'Bearer realm="vastmanager"'
    return response


def _forbidden(message: str) -> JsonResponse:
    return JsonResponse({"error": message}, status=403)


def _guarded(view: Callable[..., HttpResponse], *, read_only: bool) -> Callable[..., HttpResponse]:
    session_view = csrf_protect(view)

    @csrf_exempt
    @wraps(view)
    def wrapper(request: HttpRequest, *args: Any, **kwargs: Any) -> HttpResponse:
        token = bearer_token(request)
        if token is not None:
            if token_is_valid(token) or (read_only and status_token_is_valid(token)):
                return view(request, *args, **kwargs)
            if status_token_is_valid(token):
                return _forbidden("the status token is read-only: it may read /api/status, /api/fleet and "
                                  "/metrics, not this")
            return _unauthorized("invalid API token")
        if request.user.is_authenticated:
            return session_view(request, *args, **kwargs)
        return _unauthorized("authentication required: log in, or send 'Authorization: Bearer <token>'")

    return wrapper


def api_auth_required(view: Callable[..., HttpResponse]) -> Callable[..., HttpResponse]:
    """Admit session users (with CSRF on unsafe methods) or the operator's bearer token (without);
    the read-only status token gets 403."""
    return _guarded(view, read_only=False)


def status_auth_required(view: Callable[..., HttpResponse]) -> Callable[..., HttpResponse]:
    """Like api_auth_required, and the read-only status token is admitted too (status views only)."""
    return _guarded(view, read_only=True)


def service_user() -> User:
    """The account a token login becomes: the operator holding the token runs this engine."""
    User = get_user_model()  # noqa: N806 - Django's idiom for the user model class
    user, created = User.objects.get_or_create(
        username=SERVICE_USERNAME, defaults={"is_staff": True, "is_superuser": True}
    )
    if created:
        user.set_unusable_password()
        user.save(update_fields=["password"])
    return user


def login_url(base: str) -> str:
    return f"{base.rstrip('/')}/login?token={api_token()}"


@require_GET
def token_login(request: HttpRequest) -> HttpResponse:
    """`/login?token=...`: log the browser in as the service user and go to the panel."""
    token = request.GET.get("token", "")
    if not token_is_valid(token):
        return HttpResponse(
            "Invalid or missing token. Use the login URL that runprover printed.",
            status=403,
            content_type="text/plain; charset=utf-8",
        )
    login(request, service_user(), backend="django.contrib.auth.backends.ModelBackend")
    request.session[SESSION_TOKEN_KEY] = token_digest(token)
    target = request.GET.get("next") or "/"
    if not url_has_allowed_host_and_scheme(target, allowed_hosts={request.get_host()},
                                           require_https=request.is_secure()):
        target = "/"
    return HttpResponseRedirect(target)

